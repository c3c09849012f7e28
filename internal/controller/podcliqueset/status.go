package podcliqueset

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/metatime"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// maxUpdatingInStatus keeps status bounded with many concurrent replica updates.
const maxUpdatingInStatus = 100

// gangCondition is GangScheduled from the base gangs' statuses; ok is false
// without gang scheduling.
func gangCondition(gangs []replicaGang, generation int64) (metav1.Condition, bool) {
	if len(gangs) == 0 {
		return metav1.Condition{}, false
	}
	c := metav1.Condition{Type: string(v1alpha1.ConditionGangScheduled), Status: metav1.ConditionTrue, Reason: gang.ReasonScheduled,
		Message: fmt.Sprintf("the base gangs of all %d replicas are placed", len(gangs)), ObservedGeneration: generation}
	var waiting []string
	for _, g := range gangs {
		if g.status.Scheduled {
			continue
		}
		if c.Status == metav1.ConditionTrue {
			c.Status, c.Reason = metav1.ConditionFalse, g.status.Reason
		}
		waiting = append(waiting, fmt.Sprintf("replica %d: gang %s: %s", g.replica, g.name, g.status.Message))
	}
	if len(waiting) > 0 {
		c.Message = strings.Join(waiting, "; ")
		if len(c.Message) > 4000 {
			c.Message = strings.ToValidUTF8(c.Message[:4000], "") + "..."
		}
	}
	return c, true
}

// previousProgress reads the progress the last plan stored in the status.
func previousProgress(pcs *v1alpha1.PodCliqueSet) rollout.Progress {
	p := rollout.Progress{UpdateRevision: pcs.Status.UpdateRevision}
	if c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing)); c != nil {
		p.Paused = c.Reason == string(v1alpha1.ReasonPaused)
	}
	up := pcs.Status.UpdateProgress
	if up == nil {
		return p
	}
	p.UpdateStartedAt, p.UpdateEndedAt, p.LastProgressAt = metatime.Of(up.UpdateStartedAt), metatime.Of(up.UpdateEndedAt), metatime.Of(up.LastProgressAt)
	if c := up.ProgressCounts; c != nil {
		p.Counts = rollout.ProgressCounts{Updated: c.Updated, Ready: c.Ready, Available: c.Available}
	}
	for _, u := range up.UpdatingReplicas {
		rp := rollout.ReplicaProgress{Index: u.ReplicaIndex, StartedAt: metatime.Of(u.UpdateStartedAt), Surge: u.Surge}
		if s := u.RoleStep; s != nil {
			rp.RoleStep = &rollout.RoleStepStatus{Index: s.Index, Role: s.Role, Target: s.Target, UpdatedAndReady: s.UpdatedAndReady}
		}
		p.UpdatingReplicas = append(p.UpdatingReplicas, rp)
	}
	if g := up.Gate; g != nil {
		p.Gate = &rollout.GateWait{Name: g.Name, Reason: g.Reason, ReachedAt: g.ReachedAt.Time, Analysis: g.Analysis}
	}
	p.ReplicaGatesPassed = up.ReplicaGatesPassed
	return p
}

// updateStatus writes the status the plan implies and an Event for every step a
// rollout took since the last one. It returns how soon to look again when it
// held back a change that only moves the rollout's progress (write.Batch).
func (r *Reconciler) updateStatus(ctx context.Context, pcs *v1alpha1.PodCliqueSet, plan rollout.SetPlan, gangs []replicaGang, waiting []waitingPod) (time.Duration, error) {
	st := desiredStatus(pcs, plan, gangs, waiting)
	r.narrate(pcs, &pcs.Status, st)
	r.record(pcs, &pcs.Status, st, plan.Status, r.Now())
	if apiequality.Semantic.DeepEqual(st, &pcs.Status) {
		return 0, nil
	}
	key := "PodCliqueSet/" + client.ObjectKeyFromObject(pcs).String()
	now := r.Now()
	if wait := r.Batch.Wait(key, progressOnly(&pcs.Status, st), now); wait > 0 {
		return wait, nil
	}
	patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pcs.Status = *st
	if err := r.Client.Status().Patch(ctx, pcs, patch); err != nil {
		return 0, fmt.Errorf("updating status of PodCliqueSet %s: %w", pcs.Name, err)
	}
	r.Batch.Wrote(key, now)
	return 0, nil
}

// progressOnly: next differs from prev only in what write.StatusBatch may
// hold back: the highest counts seen (and when they last rose) and the pods
// the Progressing message names.
func progressOnly(prev, next *v1alpha1.PodCliqueSetStatus) bool {
	if prev.UpdateProgress == nil || next.UpdateProgress == nil {
		return false
	}
	n := next.DeepCopy()
	n.UpdateProgress.ProgressCounts = prev.UpdateProgress.ProgressCounts
	n.UpdateProgress.LastProgressAt = prev.UpdateProgress.LastProgressAt
	pc := apimeta.FindStatusCondition(prev.Conditions, string(v1alpha1.ConditionProgressing))
	nc := apimeta.FindStatusCondition(n.Conditions, string(v1alpha1.ConditionProgressing))
	if pc != nil && nc != nil && pc.Status == nc.Status && pc.Reason == nc.Reason {
		nc.Message = pc.Message
	}
	return apiequality.Semantic.DeepEqual(n, prev)
}

// desiredStatus is the status the plan implies: counts, revisions, the
// conditions (Progressing naming what the rollout waits for), progress.
func desiredStatus(pcs *v1alpha1.PodCliqueSet, plan rollout.SetPlan, gangs []replicaGang, waiting []waitingPod) *v1alpha1.PodCliqueSetStatus {
	s := plan.Status
	st := pcs.Status.DeepCopy()
	st.ObservedGeneration = pcs.Generation
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas
	st.CurrentRevision, st.UpdateRevision = s.CurrentRevision, s.UpdateRevision
	st.Selector = labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodCliqueSet: pcs.Name}).String()
	stuck := unplacedSurge(s.Conditions, s.UpdateRevision, waiting)
	for _, c := range s.Conditions {
		if c.Type == v1alpha1.ConditionProgressing {
			c.Message += blockers(c.Reason, s.UpdateRevision, waiting)
		}
		if stuck != nil && (c.Type == v1alpha1.ConditionProgressing || c.Type == v1alpha1.ConditionReconciling || c.Type == v1alpha1.ConditionStalled) {
			c.Reason = v1alpha1.ReasonSurgeUnschedulable
			if c.Type == v1alpha1.ConditionProgressing {
				c.Message = fmt.Sprintf("surge pod %s cannot be placed (%s); the rollout waits for room for it and deletes no outdated unit beyond maxUnavailable to make room; %s",
					stuck.name, stuck.why, c.Message)
			}
		}
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: string(c.Reason), Message: c.Message, ObservedGeneration: pcs.Generation,
		})
	}
	if c, ok := gangCondition(gangs, pcs.Generation); ok {
		apimeta.SetStatusCondition(&st.Conditions, c)
	} else {
		apimeta.RemoveStatusCondition(&st.Conditions, string(v1alpha1.ConditionGangScheduled))
	}
	st.UpdateProgress = progressStatus(s.Progress)
	return st
}

// reportInvalid marks a PodCliqueSet whose spec breaks the admission rules:
// Progressing False and Stalled True with reason InvalidSpec, every error in the
// message, and a Warning Event when that is news. Nothing else is written.
func (r *Reconciler) reportInvalid(ctx context.Context, pcs *v1alpha1.PodCliqueSet, errs field.ErrorList) error {
	msg := "the spec is invalid and is not acted on: " + errs.ToAggregate().Error()
	if len(msg) > 4000 {
		msg = strings.ToValidUTF8(msg[:4000], "") + "..."
	}
	before := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
	if before == nil || before.Reason != string(v1alpha1.ReasonInvalidSpec) || before.Message != msg {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, string(v1alpha1.ReasonInvalidSpec), "Validate", "%s", msg)
	}
	return write.Status(ctx, r.Client, pcs, func(pcs *v1alpha1.PodCliqueSet) {
		pcs.Status.ObservedGeneration = pcs.Generation
		for _, c := range []struct {
			t      v1alpha1.ConditionType
			status metav1.ConditionStatus
		}{{v1alpha1.ConditionProgressing, metav1.ConditionFalse}, {v1alpha1.ConditionReconciling, metav1.ConditionFalse}, {v1alpha1.ConditionStalled, metav1.ConditionTrue}} {
			apimeta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: string(c.t), Status: c.status,
				Reason: string(v1alpha1.ReasonInvalidSpec), Message: msg, ObservedGeneration: pcs.Generation})
		}
	})
}

// blockers names what a rollout waits for: the oldest pods of the update
// revision that are not ready, and why (a surge pod whose gang does not fit, a
// crash-looping container). Empty when the rollout is not waiting on pods.
func blockers(reason v1alpha1.ConditionReason, updateRevision string, waiting []waitingPod) string {
	switch reason {
	case v1alpha1.ReasonRollingUpdateInProgress, v1alpha1.ReasonRoleStepWaiting, v1alpha1.ReasonProgressDeadlineExceeded:
	default:
		return ""
	}
	var named []string
	more := 0
	for _, w := range waiting {
		if w.setRevision != updateRevision {
			continue
		}
		if len(named) == maxBlockersNamed {
			more++
			continue
		}
		what := "pod " + w.name
		if w.surge {
			what = "surge " + what
		}
		named = append(named, what+" ("+w.why+")")
	}
	if len(named) == 0 {
		return ""
	}
	out := "; waiting for " + strings.Join(named, ", ")
	if more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

// unplacedSurge is the oldest surge pod of the update revision the scheduler
// found no room for, while a rollout is moving (not paused, not past its
// deadline: those reasons say more); nil when there is none.
func unplacedSurge(conditions []rollout.Condition, updateRevision string, waiting []waitingPod) *waitingPod {
	moving := false
	for _, c := range conditions {
		if c.Type == v1alpha1.ConditionProgressing {
			moving = c.Reason == v1alpha1.ReasonRollingUpdateInProgress || c.Reason == v1alpha1.ReasonRoleStepWaiting
		}
	}
	if !moving {
		return nil
	}
	for i := range waiting {
		if w := &waiting[i]; w.surge && w.unschedulable && w.setRevision == updateRevision {
			return w
		}
	}
	return nil
}

// maxBlockersNamed keeps the Progressing message short.
const maxBlockersNamed = 2

func progressStatus(p rollout.Progress) *v1alpha1.PodCliqueSetUpdateProgress {
	if p.UpdateStartedAt.IsZero() && len(p.UpdatingReplicas) == 0 && p.Gate == nil {
		return nil
	}
	out := &v1alpha1.PodCliqueSetUpdateProgress{
		UpdateStartedAt: metatime.Ptr(p.UpdateStartedAt), UpdateEndedAt: metatime.Ptr(p.UpdateEndedAt), LastProgressAt: metatime.Ptr(p.LastProgressAt),
		ProgressCounts:     &v1alpha1.UnitCounts{Updated: p.Counts.Updated, Ready: p.Counts.Ready, Available: p.Counts.Available},
		ReplicaGatesPassed: p.ReplicaGatesPassed,
	}
	if g := p.Gate; g != nil {
		out.Gate = &v1alpha1.GateStatus{Name: g.Name, Reason: g.Reason, ReachedAt: metav1.NewTime(g.ReachedAt), Analysis: g.Analysis}
	}
	for _, u := range p.UpdatingReplicas {
		if len(out.UpdatingReplicas) == maxUpdatingInStatus {
			break
		}
		rp := v1alpha1.PodCliqueSetReplicaUpdateProgress{ReplicaIndex: u.Index, UpdateStartedAt: metatime.Ptr(u.StartedAt), Surge: u.Surge}
		if s := u.RoleStep; s != nil {
			rp.RoleStep = &v1alpha1.RoleStepProgress{Index: s.Index, Role: s.Role, Target: s.Target, UpdatedAndReady: s.UpdatedAndReady}
		}
		out.UpdatingReplicas = append(out.UpdatingReplicas, rp)
	}
	return out
}

// announceRollout emits RolloutStarted when the plan moves to a new revision,
// before anything is deleted or written for it, naming the strategy in force
// (spec is defaulted: an object written without the webhook has no type).
func (r *Reconciler) announceRollout(pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec, plan rollout.SetPlan) {
	before, after := pcs.Status.UpdateRevision, plan.Status.UpdateRevision
	if before == "" || after == before {
		return
	}
	r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "RolloutStarted", "Rollout",
		"Rolling out revision %s (from %s) with %s", after, plan.Status.CurrentRevision, spec.UpdateStrategy.Type)
}

// narrate emits an Event for each rollout step between two statuses: a
// replica starting to update, a role step starting, the Progressing
// condition changing reason.
func (r *Reconciler) narrate(pcs *v1alpha1.PodCliqueSet, before, after *v1alpha1.PodCliqueSetStatus) {
	prev := map[int32]v1alpha1.PodCliqueSetReplicaUpdateProgress{}
	if before.UpdateProgress != nil {
		for _, u := range before.UpdateProgress.UpdatingReplicas {
			prev[u.ReplicaIndex] = u
		}
	}
	if after.UpdateProgress != nil {
		for _, u := range after.UpdateProgress.UpdatingReplicas {
			old, was := prev[u.ReplicaIndex]
			if !was {
				r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "ReplicaUpdating", "Rollout", "Updating replica %d", u.ReplicaIndex)
			}
			// A step without a role is the end of the steps, not a step.
			if s := u.RoleStep; s != nil && s.Role != "" && (old.RoleStep == nil || old.RoleStep.Index != s.Index) {
				r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "RoleStepStarted", "Rollout",
					"Replica %d: step %d, %s to %d updated and ready (%d now)", u.ReplicaIndex, s.Index+1, s.Role, s.Target, s.UpdatedAndReady)
			}
		}
	}
	r.narrateGate(pcs, before, after)
	// Warn when the scheduler cannot place a gang, not while a gang merely waits
	// for a member being replaced or for the scheduler's next pass.
	if g := apimeta.FindStatusCondition(after.Conditions, string(v1alpha1.ConditionGangScheduled)); g != nil && g.Status == metav1.ConditionFalse && actionableGangReason(g.Reason) {
		if old := apimeta.FindStatusCondition(before.Conditions, string(v1alpha1.ConditionGangScheduled)); old == nil || old.Status != g.Status || old.Reason != g.Reason {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "GangNotScheduled", "Schedule", "%s", g.Message)
		}
	}
	oldC := apimeta.FindStatusCondition(before.Conditions, string(v1alpha1.ConditionProgressing))
	newC := apimeta.FindStatusCondition(after.Conditions, string(v1alpha1.ConditionProgressing))
	if newC != nil && (oldC == nil || oldC.Reason != newC.Reason) {
		kind := corev1.EventTypeNormal
		if newC.Status == metav1.ConditionFalse || newC.Reason == string(v1alpha1.ReasonSurgeUnschedulable) {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(pcs, nil, kind, newC.Reason, "Rollout", "%s", newC.Message)
	}
}

// actionableGangReason: the gang waits for something a user has to look at.
func actionableGangReason(reason string) bool {
	switch reason {
	case gang.ReasonWaitingForPods, gang.ReasonPending, gang.ReasonSchedulingGated:
		return false
	}
	return true
}

// record updates the rollout metrics from one status to the next.
func (r *Reconciler) record(pcs *v1alpha1.PodCliqueSet, before, after *v1alpha1.PodCliqueSetStatus, s rollout.SetStatus, now time.Time) {
	m := r.Metrics
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": pcs.Namespace, "podcliqueset": pcs.Name}
	inProgress := 0.0
	if !s.Complete {
		inProgress = 1
	}
	m.InProgress.With(l).Set(inProgress)
	m.UpdatedUnits.With(l).Set(float64(s.Units.Updated))
	duration := func(result string, d time.Duration) {
		m.Duration.With(prometheus.Labels{"namespace": pcs.Namespace, "podcliqueset": pcs.Name, "result": result}).Observe(d.Seconds())
	}
	if p := after.UpdateProgress; p != nil && p.UpdateEndedAt != nil && p.UpdateStartedAt != nil &&
		(before.UpdateProgress == nil || before.UpdateProgress.UpdateEndedAt == nil) {
		duration("complete", p.UpdateEndedAt.Sub(p.UpdateStartedAt.Time))
	}
	if b := before.UpdateProgress; b != nil && b.UpdateStartedAt != nil && b.UpdateEndedAt == nil &&
		before.UpdateRevision != "" && after.UpdateRevision != before.UpdateRevision {
		duration("superseded", now.Sub(b.UpdateStartedAt.Time))
	}
	if s.DeadlineExceeded {
		if c := apimeta.FindStatusCondition(before.Conditions, string(v1alpha1.ConditionProgressing)); c == nil || c.Reason != string(v1alpha1.ReasonProgressDeadlineExceeded) {
			m.Stalls.With(l).Inc()
			if p := after.UpdateProgress; p != nil && p.UpdateStartedAt != nil {
				duration("stalled", now.Sub(p.UpdateStartedAt.Time))
			}
		}
	}
	recordGate(m, l, before, after, now)
	prev := map[int32]*v1alpha1.RoleStepProgress{}
	if before.UpdateProgress != nil {
		for _, u := range before.UpdateProgress.UpdatingReplicas {
			prev[u.ReplicaIndex] = u.RoleStep
		}
	}
	if after.UpdateProgress != nil {
		for _, u := range after.UpdateProgress.UpdatingReplicas {
			old, was := prev[u.ReplicaIndex]
			if !was {
				m.Steps.With(prometheus.Labels{"namespace": pcs.Namespace, "podcliqueset": pcs.Name, "step": "replica"}).Inc()
			}
			if u.RoleStep != nil && (old == nil || old.Index != u.RoleStep.Index) {
				m.Steps.With(prometheus.Labels{"namespace": pcs.Namespace, "podcliqueset": pcs.Name, "step": "role"}).Inc()
			}
		}
	}
}

// narrateGate emits GateWaiting when the rollout comes to a checkpoint or
// what it waits for there changes (a soak ends, approval is due) and
// GatePassed when it leaves one.
func (r *Reconciler) narrateGate(pcs *v1alpha1.PodCliqueSet, before, after *v1alpha1.PodCliqueSetStatus) {
	was, now := gateOf(before), gateOf(after)
	if was != nil && (now == nil || now.Name != was.Name) {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "GatePassed", "Rollout", "Gate %s passed", was.Name)
	}
	if now != nil && (was == nil || was.Name != now.Name || was.Reason != now.Reason) {
		msg := now.Name
		if c := apimeta.FindStatusCondition(after.Conditions, string(v1alpha1.ConditionProgressing)); c != nil {
			msg = c.Message
		}
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "GateWaiting", "Rollout", "%s: %s", now.Reason, msg)
	}
}

// recordGate counts a gate passed (with how long the rollout waited at it)
// and an analysis failing, from one status to the next.
func recordGate(m *metrics.Rollouts, l prometheus.Labels, before, after *v1alpha1.PodCliqueSetStatus, now time.Time) {
	was, is := gateOf(before), gateOf(after)
	outcome := func(o string) prometheus.Labels {
		return prometheus.Labels{"namespace": l["namespace"], "podcliqueset": l["podcliqueset"], "outcome": o}
	}
	if was != nil && (is == nil || is.Name != was.Name) && before.UpdateRevision == after.UpdateRevision {
		m.Gates.With(outcome(metrics.GatePassed)).Inc()
		m.GateWait.With(l).Observe(now.Sub(was.ReachedAt.Time).Seconds())
	}
	if is != nil && is.Reason == v1alpha1.ReasonAnalysisFailed && (was == nil || was.Name != is.Name || was.Reason != is.Reason) {
		m.Gates.With(outcome(metrics.GateAnalysisFailed)).Inc()
	}
}

// gateOf is the gate a status says the rollout waits at; nil for none.
func gateOf(s *v1alpha1.PodCliqueSetStatus) *v1alpha1.GateStatus {
	if s.UpdateProgress == nil {
		return nil
	}
	return s.UpdateProgress.Gate
}
