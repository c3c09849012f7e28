package pods

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// recordedIndexes is a client.FieldIndexer that keeps what is registered,
// for a fake client to serve.
type recordedIndexes map[string]client.IndexerFunc

func (r recordedIndexes) IndexField(_ context.Context, _ client.Object, field string, f client.IndexerFunc) error {
	r[field] = f
	return nil
}

func TestIndexesFindAnOwnersPodsAndNoOthers(t *testing.T) {
	idx := recordedIndexes{}
	if err := AddIndexes(t.Context(), idx); err != nil {
		t.Fatal(err)
	}
	pod := func(ns, name, pcs, pclq string) *corev1.Pod {
		labels := map[string]string{}
		if pcs != "" {
			labels[v1alpha1.LabelPodCliqueSet], labels[v1alpha1.LabelPodClique] = pcs, pclq
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		pod("a", "web-0-api-0", "web", "web-0-api"), pod("a", "web-0-api-1", "web", "web-0-api"),
		pod("a", "web-1-api-0", "web", "web-1-api"), pod("a", "webx-0-api-0", "webx", "webx-0-api"),
		pod("b", "web-0-api-0", "web", "web-0-api"), pod("a", "plain", "", ""))
	for field, f := range idx {
		b = b.WithIndex(&corev1.Pod{}, field, f)
	}
	c := b.Build()
	names := func(opts []client.ListOption) []string {
		var list corev1.PodList
		if err := c.List(t.Context(), &list, opts...); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range list.Items {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(OfPodCliqueSet("a", "web")), []string{"a/web-0-api-0", "a/web-0-api-1", "a/web-1-api-0"}; !slices.Equal(got, want) {
		t.Errorf("OfPodCliqueSet(a, web) = %v, want %v", got, want)
	}
	if got, want := names(OfPodClique("a", "web-0-api")), []string{"a/web-0-api-0", "a/web-0-api-1"}; !slices.Equal(got, want) {
		t.Errorf("OfPodClique(a, web-0-api) = %v, want %v", got, want)
	}
}
