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

// KstatusConditions are the placement's Reconciling and Stalled, read from its
// ClusterSetsBound and DecisionsSettled the way kstatus (helm --wait, Flux,
// Argo CD) expects them, both always present: Stalled is True while a cluster
// set is not bound (only a person can bind it); otherwise Reconciling is True
// while the PlacementDecisions move to the final layout. Reconciling carries
// DecisionsSettled's reason, Stalled ClusterSetsBound's.
func KstatusConditions(setsBound, settled metav1.Condition) []metav1.Condition {
	reconciling := metav1.Condition{Type: string(fleetv1alpha1.PlacementReconciling), Status: metav1.ConditionFalse,
		Reason: settled.Reason, Message: settled.Message, ObservedGeneration: settled.ObservedGeneration}
	stalled := metav1.Condition{Type: string(fleetv1alpha1.PlacementStalled), Status: metav1.ConditionFalse,
		Reason: setsBound.Reason, Message: setsBound.Message, ObservedGeneration: setsBound.ObservedGeneration}
	switch {
	case setsBound.Status == metav1.ConditionFalse:
		stalled.Status = metav1.ConditionTrue
	case settled.Status != metav1.ConditionTrue:
		reconciling.Status = metav1.ConditionTrue
	}
	return []metav1.Condition{reconciling, stalled}
}

// InvalidSpecConditions are Reconciling False and Stalled True for a placement
// whose spec cannot be planned (reason InvalidClusterSelector or
// InvalidGroupStrategy): nothing is selected or written until it is fixed.
func InvalidSpecConditions(reason fleetv1alpha1.PlacementReason, why string, generation int64) []metav1.Condition {
	return []metav1.Condition{
		{Type: string(fleetv1alpha1.PlacementReconciling), Status: metav1.ConditionFalse, Reason: string(reason), Message: why, ObservedGeneration: generation},
		{Type: string(fleetv1alpha1.PlacementStalled), Status: metav1.ConditionTrue, Reason: string(reason), Message: why, ObservedGeneration: generation},
	}
}
