package pods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Indexes of the pod cache, by owner label. A label selector makes the cache
// look at every pod of the namespace for each list; an index goes to the
// owner's pods at once. With 10,000 pods in one namespace, the PodCliqueSet
// controller's lists by label were the operator's largest CPU cost.
const (
	// IndexPodCliqueSet is a pod's lockstep.dev/podcliqueset label.
	IndexPodCliqueSet = "pods.lockstep.dev/podcliqueset"
	// IndexPodClique is a pod's lockstep.dev/podclique label.
	IndexPodClique = "pods.lockstep.dev/podclique"
)

// AddIndexes registers the indexes with a manager's cache (before it starts).
func AddIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range []struct{ name, label string }{
		{IndexPodCliqueSet, v1alpha1.LabelPodCliqueSet},
		{IndexPodClique, v1alpha1.LabelPodClique},
	} {
		label := ix.label
		err := indexer.IndexField(ctx, &corev1.Pod{}, ix.name, func(o client.Object) []string {
			if v, ok := o.GetLabels()[label]; ok {
				return []string{v}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("indexing the pod cache by %s: %w", label, err)
		}
	}
	return nil
}

// OfPodCliqueSet selects the cached pods of a PodCliqueSet through the index.
// Only a cache-backed reader with AddIndexes can serve it; the apiserver
// refuses the field.
func OfPodCliqueSet(namespace, name string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingFields{IndexPodCliqueSet: name}}
}

// OfPodClique selects the cached pods of a PodClique through the index (see
// OfPodCliqueSet).
func OfPodClique(namespace, name string) []client.ListOption {
	return []client.ListOption{client.InNamespace(namespace), client.MatchingFields{IndexPodClique: name}}
}

// ReadOnly lists the cache's own pods instead of copies of them. Copying was
// most of what was left of the list cost once the cache was indexed: every
// PodCliqueSet pass copied each of its pods twice. A reader that passes it
// must never change a pod it listed (its labels, conditions, anything behind
// a map or slice are the cache's) nor write one back; the PodCliqueSet, scaling
// group and gang observers only read. The PodClique controller patches and
// deletes its pods and lists with copies.
var ReadOnly client.ListOption = client.UnsafeDisableDeepCopy
