package pods

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Cache is how the operator caches pods: only the pods a PodClique made
// (those carrying lockstep.dev/podclique; every controller lists pods by it
// or by labels written beside it), trimmed by TrimForCache. An operator that
// cached every pod of the cluster held memory for pods it never reads.
func Cache() cache.ByObject {
	owned, err := labels.NewRequirement(v1alpha1.LabelPodClique, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant label key: cannot fail
	}
	return cache.ByObject{Label: labels.NewSelector().Add(*owned), Transform: TrimForCache}
}
