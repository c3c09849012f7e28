package monitor

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// listWatch answers every call with an empty list or watch.
type listWatch struct{}

func (listWatch) List(metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil }
func (listWatch) Watch(metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

// The first listing is the informer's start; every later one, whether a List
// or a Watch asking for the initial events, is a relist the monitor hears of.
// A Watch that resumes from a resourceVersion is not.
func TestRelistNotifier_ReportsListsAfterTheFirst(t *testing.T) {
	relists := 0
	n := newRelistNotifier(listWatch{}, func() { relists++ })
	steps := []struct {
		name string
		call func() error
		want int
	}{
		{"first list", func() error { _, err := n.List(metav1.ListOptions{}); return err }, 0},
		{"a watch resuming", func() error { _, err := n.Watch(metav1.ListOptions{ResourceVersion: "7"}); return err }, 0},
		{"a list again", func() error { _, err := n.List(metav1.ListOptions{}); return err }, 1},
		{"a streaming list", func() error {
			_, err := n.Watch(metav1.ListOptions{SendInitialEvents: ptr.To(true)})
			return err
		}, 2},
	}
	for _, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if relists != s.want {
			t.Fatalf("after %s: %d relists reported, want %d", s.name, relists, s.want)
		}
	}
}
