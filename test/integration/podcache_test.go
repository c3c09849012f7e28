package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// The operator caches only the pods Lockstep made: a pod of another
// controller in the same namespace, even one carrying a PodCliqueSet's label,
// is not in the cache the controllers read, while the PodClique's own pods
// are.
func TestPodCache_HoldsOnlyThePodsLockstepMade(t *testing.T) {
	g, ns := newScalingGroup(t, 1, v1alpha1.ChildUpdateStrategy{})
	ctx := context.Background()
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "someone-elses", Labels: map[string]string{v1alpha1.LabelPodCliqueSet: g.Labels[v1alpha1.LabelPodCliqueSet]}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "other:v1"}}},
	}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the group's 3 pods in the operator's cache", 30*time.Second, func() (bool, string) {
		var cached corev1.PodList
		if err := env.Cache.List(ctx, &cached, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range cached.Items {
			names = append(names, p.Name)
		}
		if slices.Contains(names, foreign.Name) {
			t.Fatalf("the operator's cache holds pod %s, which Lockstep did not make (cached: %v)", foreign.Name, names)
		}
		return len(names) == 3, fmt.Sprintf("cached %v", names)
	})
	// The foreign pod is there, for anyone reading the apiserver.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
}
