package podcliqueset

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// lateCache reads one PodCliqueSet as a cache that has not yet seen its
// deletion does; everything else comes from the apiserver.
type lateCache struct {
	client.Client
	seen *v1alpha1.PodCliqueSet
}

func (c lateCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if pcs, ok := obj.(*v1alpha1.PodCliqueSet); ok && key == client.ObjectKeyFromObject(c.seen) {
		c.seen.DeepCopyInto(pcs)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// List serves the pod cache's index (pods.OfPodCliqueSet) by the label it
// indexes, as the operator's cache would: the client under it is not a cache.
func (c lateCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	for i, o := range opts {
		if f, ok := o.(client.MatchingFields); ok {
			if v, ok := f[pods.IndexPodCliqueSet]; ok {
				opts[i] = client.MatchingLabels{v1alpha1.LabelPodCliqueSet: v}
			}
		}
	}
	return c.Client.List(ctx, list, opts...)
}

// A pass over a PodCliqueSet that is being deleted, read from a cache that
// does not show it yet, creates none of its children (PodCliques, Services):
// they would only be made to be collected. A live one gets them.
func TestReconcile_CreatesNoChildForAPodCliqueSetTheCacheShowsLate(t *testing.T) {
	env, ns := testenv.StartForTest(t, testenv.Options{}, "late")
	ctx, c := t.Context(), env.Client
	newSet := func(name string) *v1alpha1.PodCliqueSet {
		pcs := &v1alpha1.PodCliqueSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{"test.lockstep.dev/hold"}},
			Spec: v1alpha1.PodCliqueSetSpec{Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{{
				Name: "worker", Replicas: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:v1"}}}},
			}}}},
		}
		if err := c.Create(ctx, pcs); err != nil {
			t.Fatal(err)
		}
		return pcs
	}
	children := func(pcs *v1alpha1.PodCliqueSet) int {
		sel := client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs.Name}
		var cliques v1alpha1.PodCliqueList
		var services corev1.ServiceList
		if err := c.List(ctx, &cliques, client.InNamespace(ns), sel); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &services, client.InNamespace(ns), sel); err != nil {
			t.Fatal(err)
		}
		return len(cliques.Items) + len(services.Items)
	}
	r := &Reconciler{APIReader: c, Recorder: events.NewFakeRecorder(100), Gangs: gang.None{}, Now: time.Now}

	deleting := newSet("deleting")
	seen := deleting.DeepCopy()
	if err := c.Delete(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	r.Client = lateCache{Client: c, seen: seen}
	// its status write may fail on the stale object; what matters is what it created
	_, _ = r.reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(seen)})
	if n := children(seen); n != 0 {
		t.Fatalf("a PodCliqueSet being deleted got %d children from a cache that had not seen its deletion", n)
	}

	live := newSet("live")
	r.Client = lateCache{Client: c, seen: &v1alpha1.PodCliqueSet{}} // serves the pod index, nothing stale
	if _, err := r.reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(live)}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if n := children(live); n != 2 {
		t.Fatalf("a live PodCliqueSet of one replica got %d children, want its PodClique and its Service", n)
	}
}
