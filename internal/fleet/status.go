package fleet

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// SettledCondition is the DecisionsSettled condition for a plan: True once the
// plan has nothing left to write, under either update type.
func SettledCondition(p Plan, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type:               string(fleetv1alpha1.PlacementDecisionsSettled),
		ObservedGeneration: generation,
	}
	switch p.Phase {
	case PhaseSettled:
		c.Status, c.Reason = metav1.ConditionTrue, string(fleetv1alpha1.PlacementReasonSettled)
		c.Message = "every PlacementDecision holds its final set of clusters"
	case PhaseWriteAll:
		c.Status, c.Reason = metav1.ConditionFalse, string(fleetv1alpha1.PlacementReasonUpdating)
		c.Message = "PlacementDecisions are being written to their final sets"
	case PhaseFinalize:
		c.Status, c.Reason = metav1.ConditionFalse, string(fleetv1alpha1.PlacementReasonSurging)
		c.Message = "every cluster is in its final PlacementDecision; trimming the others"
	default:
		c.Status, c.Reason = metav1.ConditionFalse, string(fleetv1alpha1.PlacementReasonSurging)
		c.Message = "adding clusters to their final PlacementDecisions; some hold more than their final set"
	}
	return c
}
