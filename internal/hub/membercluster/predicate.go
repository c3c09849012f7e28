package membercluster

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// DecisionInputsChanged passes the MemberCluster events that can change what a
// Placement selects or what a FederatedWorkload's round decides: creations,
// deletions, and updates of the labels (which also decide the cluster sets a
// member is in), of the Ready condition's status (absent, True, False,
// Unknown; its lastTransitionTime moves only with it) or of the deletion
// timestamp. A probe that only rewrites the condition's message, the
// Kubernetes version, the workload kinds or observedGeneration passes nothing:
// with many members and many placements each such event would otherwise wake
// every one of them.
type DecisionInputsChanged struct {
	predicate.Funcs
}

// Update implements predicate.Predicate.
func (DecisionInputsChanged) Update(e event.UpdateEvent) bool {
	oldMC, ok1 := e.ObjectOld.(*fleetv1alpha1.MemberCluster)
	newMC, ok2 := e.ObjectNew.(*fleetv1alpha1.MemberCluster)
	if !ok1 || !ok2 {
		return true
	}
	return !labels.Equals(oldMC.Labels, newMC.Labels) ||
		readyStatus(oldMC) != readyStatus(newMC) ||
		oldMC.DeletionTimestamp.IsZero() != newMC.DeletionTimestamp.IsZero()
}

// readyStatus is the status of the member's Ready condition, "" before its
// first probe.
func readyStatus(mc *fleetv1alpha1.MemberCluster) string {
	if c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)); c != nil {
		return string(c.Status)
	}
	return ""
}
