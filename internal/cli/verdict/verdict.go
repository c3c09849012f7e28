// Package verdict decides what `lockstep status` says about a rollout and the
// exit code it ends with, from the PodCliqueSet's status alone.
package verdict

import (
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Exit codes of `lockstep status`.
const (
	// Complete: every replica runs the update revision.
	Complete = 0
	// Failed: the progress deadline passed, a rollback failed, the PodCliqueSet
	// was deleted, or the revision waited for was replaced by another.
	Failed = 1
	// Usage: bad flags or arguments, or no such PodCliqueSet.
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
	case v1alpha1.ReasonPaused, v1alpha1.ReasonPartitionReached, v1alpha1.ReasonWaitingForDeletion:
		return Verdict{Final: true, Code: Halted, Line: line}
	case v1alpha1.ReasonProgressDeadlineExceeded:
		return Verdict{Final: true, Code: Failed, Line: line}
	}
	return Verdict{Code: TimedOut, Line: line}
}
