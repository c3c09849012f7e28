package write

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Remove deletes the children first, then only the pods they control, and
// reports each child.
func TestRemove_ChildrenFirstThenOnlyTheirPods(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	clique := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0-worker", UID: "clique-uid"}}
	gone := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0-gone", UID: "gone-uid"}}
	pod := func(name string, owner types.UID) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "lockstep.dev/v1alpha1", Kind: "PodClique", Name: "llm-0-worker", UID: owner, Controller: new(true)}}
		}
		return p
	}
	ours, foreign, orphan := pod("llm-0-worker-0", clique.UID), pod("llm-0-worker-1", "someone-else"), pod("llm-0-worker-2", "")
	var order []string
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(clique, ours, foreign, orphan).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			order = append(order, obj.GetName())
			return c.Delete(ctx, obj, opts...)
		}}).Build()

	var reported []string
	err := Remove(context.Background(), c, []client.Object{clique, gone}, []*corev1.Pod{ours, foreign, orphan},
		func(o client.Object) { reported = append(reported, o.GetName()) })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"llm-0-worker", "llm-0-gone", "llm-0-worker-0"}; !slices.Equal(order, want) {
		t.Errorf("deleted %v, want %v (children first, then only the pods a child controls)", order, want)
	}
	if want := []string{"llm-0-worker", "llm-0-gone"}; !slices.Equal(reported, want) {
		t.Errorf("reported %v, want %v (a child found gone is reported too)", reported, want)
	}
	for _, p := range []*corev1.Pod{foreign, orphan} {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
			t.Errorf("pod %s, not controlled by a removed child, was deleted: %v", p.Name, err)
		}
	}
}
