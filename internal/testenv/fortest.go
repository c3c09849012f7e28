package testenv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartForTest starts an environment for one test, stopped when it ends, and
// makes a namespace named from prefix in it.
func StartForTest(t testing.TB, o Options, prefix string) (env *Env, namespace string) {
	t.Helper()
	env, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return env, ns.Name
}
