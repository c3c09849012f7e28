package rollout

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// status is the PodCliqueSet status the plan implies: counts, revisions,
// progress and conditions.
func (p *setPlanner) status(u *updatingSet) SetStatus {
	rev := p.in.Revisions
	s := p.counts()
	s.CurrentRevision, s.UpdateRevision = rev.Current.Name, rev.Update.Name
	if s.Complete && p.shape.partition == 0 && !p.paused() {
		s.CurrentRevision = rev.Update.Name
	}
	s.Units = p.unitCounts(s)
	s.Progress, s.DeadlineExceeded = p.progress(s, u)
	if u.gate != nil {
		s.GateRecheckIn, s.Rollback = u.gate.verdict.RecheckIn, u.gate.verdict.Rollback
	}
	progressing := p.progressingCondition(s, u)
	s.Conditions = append([]Condition{p.availableCondition(s), progressing}, kstatusConditions(progressing)...)
	return s
}

// kstatusConditions are Reconciling and Stalled, read from Progressing the way
// kstatus expects them: Reconciling is True while the operator still has work
// it will do by itself (a soak and an analysis included); a rollout held by
// design (paused, at the partition, awaiting approval, OnDelete waiting for
// deletions) is not reconciling; a passed deadline or a failed analysis
// stalls.
func kstatusConditions(progressing Condition) []Condition {
	reconciling := Condition{Type: v1alpha1.ConditionReconciling, Status: "False", Reason: progressing.Reason, Message: progressing.Message}
	stalled := Condition{Type: v1alpha1.ConditionStalled, Status: "False", Reason: progressing.Reason, Message: progressing.Message}
	switch progressing.Reason {
	case v1alpha1.ReasonRollingUpdateInProgress, v1alpha1.ReasonRoleStepWaiting, v1alpha1.ReasonScaling, v1alpha1.ReasonSoaking,
		v1alpha1.ReasonAnalysisRunning:
		reconciling.Status = "True"
	case v1alpha1.ReasonProgressDeadlineExceeded, v1alpha1.ReasonAnalysisFailed:
		stalled.Status = "True"
	}
	return []Condition{reconciling, stalled}
}

// counts counts the observed live PCS replicas and decides completeness: exactly
// [0, replicas) exist, every unit available, and every replica at or above the
// partition fully on the update revision. A replica counts as ready,
// available or updated, and as settled, only when its children's own
// statuses say so too (Report): the PodCliqueSet never says more than its
// children do.
func (p *setPlanner) counts() SetStatus {
	var s SetStatus
	complete, live := true, int32(0)
	for _, v := range p.views {
		if v.obs == nil || v.obs.Terminating || v.index >= p.shape.replicas {
			complete = false // still being created, or on its way out
		}
		if v.obs == nil || v.obs.Terminating {
			continue
		}
		live++
		available := v.available && v.reported.available
		updated := v.updated && v.reported.updated
		s.Replicas++
		s.ReadyReplicas += boolTo[int32](v.ready && v.reported.ready)
		s.AvailableReplicas += boolTo[int32](available)
		// a role scaling in keeps its replica updated, as a Deployment keeps
		// counting the updated pods that exist; surge replicas go away
		s.UpdatedReplicas += boolTo[int32](v.allUpdated && v.reported.updated && v.index < p.shape.replicas)
		if !v.settled || !v.reported.settled || (!updated && v.index >= p.shape.partition) {
			complete = false
		}
	}
	s.Complete = complete && live == p.shape.replicas
	return s
}

// unitCounts sums updated, ready and available units over every level: a change
// in any of them is progress.
func (p *setPlanner) unitCounts(s SetStatus) ProgressCounts {
	c := ProgressCounts{Updated: s.UpdatedReplicas, Ready: s.ReadyReplicas, Available: s.AvailableReplicas}
	for _, v := range p.views {
		if v.obs == nil || v.obs.Terminating {
			continue
		}
		for _, rv := range v.roles {
			c.Updated += rv.status.UpdatedReplicas
			c.Ready += rv.status.ReadyReplicas
			c.Available += rv.status.AvailableReplicas
		}
	}
	return c
}

// progress carries the update's timestamps forward and tracks the deadline.
func (p *setPlanner) progress(s SetStatus, u *updatingSet) (Progress, bool) {
	rev, prev := p.in.Revisions, p.in.Previous
	prog := Progress{Paused: p.paused(), UpdateRevision: rev.Update.Name, UpdatingReplicas: u.progress, ReplicaGatesPassed: p.gatesPassed}
	if g := u.gate; g != nil {
		prog.Gate = &GateWait{Name: g.name, Reason: g.verdict.Reason, ReachedAt: g.reachedAt, Analysis: g.measured}
	}
	if prev.UpdateRevision == rev.Update.Name {
		prog.UpdateStartedAt, prog.UpdateEndedAt = prev.UpdateStartedAt, prev.UpdateEndedAt
	}
	if prog.UpdateStartedAt.IsZero() && p.rolloutActive() && !p.paused() {
		prog.UpdateStartedAt = p.in.Now
	}
	onDelete := p.shape.strategy == v1alpha1.OnDeleteStrategyType
	switch {
	case onDelete && !prog.UpdateStartedAt.IsZero():
		// the operator's part of an OnDelete update ends once targets moved
		prog.UpdateEndedAt = prog.UpdateStartedAt
	case s.Complete && prog.UpdateEndedAt.IsZero() && !prog.UpdateStartedAt.IsZero():
		prog.UpdateEndedAt = p.in.Now
	case !s.Complete:
		prog.UpdateEndedAt = time.Time{}
	}
	deadline := time.Duration(v1alpha1.DefaultProgressDeadlineSeconds) * time.Second
	if d := p.shape.spec.ProgressDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	var exceeded bool
	active := !s.Complete && !onDelete
	best := prev.Counts
	if prev.UpdateRevision != rev.Update.Name {
		best = ProgressCounts{} // a new rollout starts from nothing
	}
	// time waiting at a gate, as time paused, never counts against the deadline
	held := p.paused() || u.gate != nil
	restart := prev.UpdateRevision != rev.Update.Name ||
		(active && !held && (prev.Paused || prev.Gate != nil || !prev.UpdateEndedAt.IsZero()))
	prog.LastProgressAt, prog.Counts, exceeded = TrackProgress(prev.LastProgressAt, best, p.unitCounts(s), p.in.Now, held, active, restart, deadline)
	return prog, exceeded
}

func (p *setPlanner) availableCondition(s SetStatus) Condition {
	unavailable, surge := p.shape.setLimits()
	floor := p.shape.replicas - 1
	if fp, err := ResolveFenceposts(surge, unavailable, p.shape.replicas); err == nil {
		floor = p.shape.replicas - fp.MaxUnavailable
	}
	// maxUnavailable may allow every replica down during an update (one replica,
	// the default of 1), but nothing running is never Available.
	floor = max(floor, min(p.shape.replicas, 1))
	msg := fmt.Sprintf("%d of %d replicas available, at least %d required", s.AvailableReplicas, p.shape.replicas, max(floor, 0))
	if s.AvailableReplicas >= floor {
		return Condition{Type: v1alpha1.ConditionAvailable, Status: "True", Reason: v1alpha1.ReasonMinimumReplicasAvailable, Message: msg}
	}
	return Condition{Type: v1alpha1.ConditionAvailable, Status: "False", Reason: v1alpha1.ReasonMinimumReplicasUnavailable, Message: msg}
}

func (p *setPlanner) progressingCondition(s SetStatus, u *updatingSet) Condition {
	c := Condition{Type: v1alpha1.ConditionProgressing, Status: "True"}
	switch {
	case s.Complete && p.shape.partition > 0 && p.rolloutActive():
		c.Reason, c.Message = v1alpha1.ReasonPartitionReached, fmt.Sprintf("replicas from index %d run revision %s", p.shape.partition, s.UpdateRevision)
	case s.Complete:
		c.Reason, c.Message = v1alpha1.ReasonRolloutComplete, fmt.Sprintf("every replica runs revision %s", s.UpdateRevision)
	case p.paused():
		c.Status, c.Reason, c.Message = "Unknown", v1alpha1.ReasonPaused, "the rollout is paused"
	case u.gate != nil:
		c.Reason, c.Message = u.gate.verdict.Reason, fmt.Sprintf("%d of %d replicas updated; %s", s.UpdatedReplicas, p.shape.replicas, u.gate.verdict.Message)
		if u.gate.verdict.Failed {
			c.Status = "False" // a failure, as a passed deadline is
		}
	case s.DeadlineExceeded:
		c.Status, c.Reason, c.Message = "False", v1alpha1.ReasonProgressDeadlineExceeded, fmt.Sprintf("no progress since %s", s.Progress.LastProgressAt.UTC().Format(time.RFC3339))
	case !p.rolloutActive():
		// No revision change under way: replicas are being created or scaled.
		c.Reason, c.Message = v1alpha1.ReasonScaling, fmt.Sprintf("%d of %d replicas available on revision %s", s.AvailableReplicas, p.shape.replicas, s.UpdateRevision)
	case p.shape.strategy == v1alpha1.OnDeleteStrategyType:
		c.Reason, c.Message = v1alpha1.ReasonWaitingForDeletion, fmt.Sprintf("%d of %d replicas updated; outdated units update when deleted", s.UpdatedReplicas, p.shape.replicas)
	case u.steps != nil && u.steps.current < len(u.steps.steps) && len(u.steps.surgeLeft) > 0:
		st := u.steps.status()
		c.Reason, c.Message = v1alpha1.ReasonRoleStepWaiting, fmt.Sprintf("replica %d has %d of %d updated and ready units of role %s (step %d) and waits for %s to go",
			u.selected.index, st.UpdatedAndReady, st.Target, st.Role, st.Index+1, strings.Join(u.steps.surgeLeft, ", "))
	case u.selected != nil && u.selected.updated && u.selected.settled && len(u.selected.surgeLeft) > 0:
		c.Reason, c.Message = v1alpha1.ReasonRollingUpdateInProgress, fmt.Sprintf("%d of %d replicas updated; replica %d waits for %s to go before the next replica starts",
			s.UpdatedReplicas, p.shape.replicas, u.selected.index, strings.Join(u.selected.surgeLeft, ", "))
	case u.steps != nil && u.steps.current < len(u.steps.steps) && u.steps.issued:
		st := u.steps.status()
		c.Reason, c.Message = v1alpha1.ReasonRoleStepWaiting, fmt.Sprintf("replica %d waits for %d of %d updated and ready units of role %s (step %d)", u.selected.index, st.UpdatedAndReady, st.Target, st.Role, st.Index+1)
	default:
		c.Reason, c.Message = v1alpha1.ReasonRollingUpdateInProgress, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, p.shape.replicas)
	}
	return c
}
