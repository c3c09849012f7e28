package fleet

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// ClusterSelector is a placement's spec.clusterSelector; every cluster matches
// when it is unset.
func ClusterSelector(pl *fleetv1alpha1.Placement) (labels.Selector, error) {
	if pl.Spec.ClusterSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(pl.Spec.ClusterSelector)
}

// Selectable: a MemberCluster that matches a placement's selector is selected
// only while it is Ready and not being deleted.
func Selectable(mc *fleetv1alpha1.MemberCluster) bool {
	return mc.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
}
