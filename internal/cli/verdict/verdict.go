// Package verdict decides what `lockstep status` says about a rollout and the
// exit code it ends with, from the object's status alone: a PodCliqueSet's
// (Of), a FederatedWorkload's (OfFederated) or a Placement's (OfPlacement).
// The exit codes mean the same for every kind.
package verdict

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Exit codes of `lockstep status`.
const (
	// Complete: every replica runs the update revision (a Placement: its
	// decisions are settled).
	Complete = 0
	// Failed: the progress deadline passed, a rollback failed, the object was
	// deleted, the revision waited for was replaced by another, or the object
	// is stalled (a FederatedWorkload's or Placement's Stalled condition).
	Failed = 1
	// Usage: bad flags or arguments, or no such object.
	Usage = 2
	// TimedOut: --timeout passed with the rollout still progressing.
	TimedOut = 3
	// Halted: the rollout stopped by design (paused, partition reached, OnDelete
	// waiting for deletions) and will not finish without someone acting.
	Halted = 4
)

// Input is what the verdict is taken from.
type Input struct {
	// PCS is the PodCliqueSet; nil when it was deleted.
	PCS *v1alpha1.PodCliqueSet
	// Revision, when set, is the update revision (ControllerRevision name) the
	// caller waits for.
	Revision string
	// RollbackFailed is the message of a RollbackFailed event seen since the
	// caller began to watch; empty when there was none.
	RollbackFailed string
}

// Verdict is the state of a rollout and whether watching it may stop.
type Verdict struct {
	// Final is true when the rollout will not change without someone acting:
	// Code is then the exit code.
	Final bool
	// Code is the exit code: Complete, Failed or Halted when Final, TimedOut when not.
	Code int
	// Line says where the rollout stands, in one line.
	Line string
}

// Of decides the verdict.
func Of(in Input) Verdict {
	if in.RollbackFailed != "" {
		return Verdict{Final: true, Code: Failed, Line: "rollback failed: " + in.RollbackFailed}
	}
	pcs := in.PCS
	if pcs == nil {
		return Verdict{Final: true, Code: Failed, Line: "the PodCliqueSet was deleted"}
	}
	st := &pcs.Status
	counts := fmt.Sprintf("updated %d/%d, available %d", st.UpdatedReplicas, pcs.Spec.DesiredReplicas(), st.AvailableReplicas)
	if st.ObservedGeneration < pcs.Generation {
		return Verdict{Code: TimedOut, Line: fmt.Sprintf("waiting for the operator to observe generation %d", pcs.Generation)}
	}
	if in.Revision != "" && st.UpdateRevision != "" && st.UpdateRevision != in.Revision {
		return Verdict{Final: true, Code: Failed, Line: fmt.Sprintf("revision %s was superseded by %s", in.Revision, st.UpdateRevision)}
	}
	c := apimeta.FindStatusCondition(st.Conditions, string(v1alpha1.ConditionProgressing))
	if c == nil {
		return Verdict{Code: TimedOut, Line: "waiting for the first status"}
	}
	line := fmt.Sprintf("%s: %s [%s]", c.Reason, c.Message, counts)
	if c.Status == metav1.ConditionFalse {
		return Verdict{Final: true, Code: Failed, Line: line}
	}
	switch v1alpha1.ConditionReason(c.Reason) {
	case v1alpha1.ReasonRolloutComplete:
		return Verdict{Final: true, Code: Complete, Line: line}
	case v1alpha1.ReasonPaused, v1alpha1.ReasonPartitionReached, v1alpha1.ReasonWaitingForDeletion, v1alpha1.ReasonAwaitingApproval:
		return Verdict{Final: true, Code: Halted, Line: line}
	case v1alpha1.ReasonProgressDeadlineExceeded:
		return Verdict{Final: true, Code: Failed, Line: line}
	}
	return Verdict{Code: TimedOut, Line: line}
}

// FederatedInput is what a FederatedWorkload's verdict is taken from.
type FederatedInput struct {
	// FW is the FederatedWorkload; nil when it was deleted.
	FW *fleetv1alpha1.FederatedWorkload
	// Revision, when set, is the update revision (status.updateRevision) the
	// caller waits for.
	Revision string
}

// OfFederated decides a FederatedWorkload's verdict with the PodCliqueSet's
// meaning of each exit code. The hub's conditions say it: a status of an older
// generation is never final; Stalled True (a member object conflict, a round
// that cannot be planned) is Failed; Reconciling True is progressing;
// Progressing RolloutPaused is Halted, and RolloutComplete is Complete unless
// spec.rolloutStrategy.partition keeps units on the old revision, which is
// Halted as a PodCliqueSet's reached partition is.
func OfFederated(in FederatedInput) Verdict {
	fw := in.FW
	if fw == nil {
		return Verdict{Final: true, Code: Failed, Line: "the FederatedWorkload was deleted"}
	}
	st := &fw.Status
	counts := fmt.Sprintf("updated %d/%d, available %d", st.UpdatedReplicas, fw.Spec.Replicas, st.AvailableReplicas)
	if st.ObservedGeneration < fw.Generation {
		return Verdict{Code: TimedOut, Line: fmt.Sprintf("waiting for the hub to observe generation %d", fw.Generation)}
	}
	if in.Revision != "" && st.UpdateRevision != "" && st.UpdateRevision != in.Revision {
		return Verdict{Final: true, Code: Failed, Line: fmt.Sprintf("revision %s was superseded by %s", in.Revision, st.UpdateRevision)}
	}
	prog := apimeta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
	if prog == nil {
		return Verdict{Code: TimedOut, Line: "waiting for the first status"}
	}
	line := fmt.Sprintf("%s: %s [%s]", prog.Reason, prog.Message, counts)
	reason := fleetv1alpha1.FederatedWorkloadReason(prog.Reason)
	stalled := apimeta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.FederatedWorkloadStalled))
	reconciling := apimeta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.FederatedWorkloadReconciling))
	switch {
	case stalled != nil && stalled.Status == metav1.ConditionTrue:
		return Verdict{Final: true, Code: Failed, Line: line}
	case stalled == nil && prog.Status == metav1.ConditionFalse && !fleetNotStuck[reason]:
		// A hub that writes no kstatus conditions: a False reason that is
		// neither an end nor a wait for the placement is a stall.
		return Verdict{Final: true, Code: Failed, Line: line}
	case reconciling != nil && reconciling.Status == metav1.ConditionTrue:
		return Verdict{Code: TimedOut, Line: line}
	}
	switch reason {
	case fleetv1alpha1.FederatedWorkloadReasonRolloutPaused, fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAwaitingApproval):
		// held by design: a person moves it on (resume, approve)
		return Verdict{Final: true, Code: Halted, Line: line}
	case fleetv1alpha1.FederatedWorkloadReasonRolloutComplete:
		if p := fw.Spec.RolloutStrategy.Partition; p > 0 && st.UpdatedReplicas < fw.Spec.Replicas {
			return Verdict{Final: true, Code: Halted, Line: fmt.Sprintf("%s: partition %d reached: %s [%s]", prog.Reason, p, prog.Message, counts)}
		}
		return Verdict{Final: true, Code: Complete, Line: line}
	}
	return Verdict{Code: TimedOut, Line: line}
}

// fleetNotStuck are the Progressing reasons with status False that are not a
// stall.
var fleetNotStuck = map[fleetv1alpha1.FederatedWorkloadReason]bool{
	fleetv1alpha1.FederatedWorkloadReasonRolloutComplete:  true,
	fleetv1alpha1.FederatedWorkloadReasonRolloutPaused:    true,
	fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced: true,
}

// OfPlacement decides a Placement's verdict: Complete once its decisions are
// settled for the current generation, Failed while it is Stalled (cluster
// sets not bound, a spec that cannot be planned), progressing otherwise.
func OfPlacement(pl *fleetv1alpha1.Placement) Verdict {
	if pl == nil {
		return Verdict{Final: true, Code: Failed, Line: "the Placement was deleted"}
	}
	st := &pl.Status
	if st.ObservedGeneration < pl.Generation {
		return Verdict{Code: TimedOut, Line: fmt.Sprintf("waiting for the hub to observe generation %d", pl.Generation)}
	}
	counts := fmt.Sprintf("%d clusters in %d decision groups", st.NumberOfSelectedClusters, st.NumberOfDecisionGroups)
	if c := apimeta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.PlacementStalled)); c != nil && c.Status == metav1.ConditionTrue {
		return Verdict{Final: true, Code: Failed, Line: fmt.Sprintf("Stalled %s: %s [%s]", c.Reason, c.Message, counts)}
	}
	c := apimeta.FindStatusCondition(st.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
	if c == nil {
		return Verdict{Code: TimedOut, Line: "waiting for the first status"}
	}
	line := fmt.Sprintf("%s: %s [%s]", c.Reason, c.Message, counts)
	if c.Status == metav1.ConditionTrue {
		return Verdict{Final: true, Code: Complete, Line: line}
	}
	return Verdict{Code: TimedOut, Line: line}
}
