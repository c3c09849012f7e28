// Package gate decides whether a rollout may pass a checkpoint. It is pure:
// the clock and the approval arrive as values, and the planner calls it like
// any other observation.
package gate

import (
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Input is one gate at one checkpoint of one rollout.
type Input struct {
	Gate *v1alpha1.Gate
	// Name names the checkpoint (see v1alpha1.GateStatus).
	Name string
	// Revision is the update revision the rollout moves to.
	Revision string
	// ReachedAt is when the rollout reached the checkpoint.
	ReachedAt, Now time.Time
	// Approved is the object's AnnotationApprovedRevision value ("" for none).
	Approved string
}

// Verdict is what the gate says now.
type Verdict struct {
	Open bool
	// Reason and Message say what a closed gate waits for.
	Reason  v1alpha1.ConditionReason
	Message string
	// RecheckIn is when a closed gate may open by itself (a soak ending); 0
	// when only someone else can open it.
	RecheckIn time.Duration
}

// Evaluate checks the soak, then the approval. A nil gate is open.
func Evaluate(in Input) Verdict {
	g := in.Gate
	if g == nil {
		return Verdict{Open: true}
	}
	if soak := time.Duration(g.SoakSeconds) * time.Second; soak > 0 {
		if left := in.ReachedAt.Add(soak).Sub(in.Now); left > 0 {
			return Verdict{Reason: v1alpha1.ReasonSoaking, RecheckIn: left,
				Message: fmt.Sprintf("gate %s soaks %s more (soakSeconds %d)", in.Name, left.Round(time.Second), g.SoakSeconds)}
		}
	}
	if g.Approval && in.Approved != v1alpha1.ApprovalOf(in.Revision, in.Name) {
		return Verdict{Reason: v1alpha1.ReasonAwaitingApproval,
			Message: fmt.Sprintf("gate %s awaits approval of revision %s (kubectl lockstep approve, or the annotation %s=%s)",
				in.Name, in.Revision, v1alpha1.AnnotationApprovedRevision, v1alpha1.ApprovalOf(in.Revision, in.Name))}
	}
	return Verdict{Open: true}
}

// ReplicasName names the checkpoint after n updated PodCliqueSet replicas.
func ReplicasName(n int32) string { return fmt.Sprintf("replicas-%d", n) }

// StepName names the checkpoint after role step k (from 1) of replica i.
func StepName(replica int32, k int) string { return fmt.Sprintf("replica-%d-step-%d", replica, k) }
