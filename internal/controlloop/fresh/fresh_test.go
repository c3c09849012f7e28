package fresh

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The answer read beside other work is MayCreate's: yes for the owner as
// cached, no once it was replaced or is gone; asking twice gives it again.
func TestMayCreateBeside_AnswersAsMayCreate(t *testing.T) {
	ctx := context.Background()
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "a"}}
	replaced := live.DeepCopy()
	replaced.UID = "b"
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", UID: types.UID("c")}}
	r := fake.NewClientBuilder().WithObjects(live).Build()
	for _, tc := range []struct {
		name  string
		owner *corev1.ConfigMap
		want  bool
	}{{"live", live, true}, {"replaced", replaced, false}, {"gone", gone, false}} {
		wait := MayCreateBeside(ctx, r, tc.owner, "children")
		for range 2 {
			ok, err := wait()
			if err != nil || ok != tc.want {
				t.Errorf("%s: got (%v, %v), want (%v, nil)", tc.name, ok, err, tc.want)
			}
		}
	}
}
