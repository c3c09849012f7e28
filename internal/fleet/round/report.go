package round

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
	"github.com/lockstep-dev/lockstep/internal/message"
)

// Reasons of the Events a round records on the workload (besides
// MemberObjectConflict, also a Progressing reason).
const (
	// EventGranted: grants changed; the message lists the new ones.
	EventGranted = "Granted"
	// EventMemberObjectConflictCleared: the object of another owner under the
	// workload's name in a member is gone (or was handed over).
	EventMemberObjectConflictCleared = "MemberObjectConflictCleared"
	// EventMemberObjectsLeft: the workload was deleted while members could
	// not be reached; their member objects stay.
	EventMemberObjectsLeft = "MemberObjectsLeft"
	// EventForeignMemberObjectsKept: the workload was deleted; objects under
	// its name that are not its own stay.
	EventForeignMemberObjectsKept = "ForeignMemberObjectsKept"
)

// maxMessage bounds a condition's or an Event's message.
const maxMessage = 1024

// report is the workload's status after the round, and its Events: a
// member's conflict appearing, changing or going away, and changed grants.
func report(in Input, tmpl *member.Template, ms []*observed, plan align.Plan, walk *stages.Plan) (fleetv1alpha1.FederatedWorkloadStatus, []Event) {
	fw := in.Workload
	var views []MemberView
	for _, m := range ms {
		if !m.gone {
			views = append(views, m.MemberView)
		}
	}
	s := summarize(tmpl.Kind.Unit(), fw.Spec.Replicas, fw.Spec.RolloutStrategy.Paused, views, plan, walk)
	events := conflictEvents(fw, ms)
	if changed := changedGrants(fw.Status.Clusters, s.Clusters); len(changed) > 0 {
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: EventGranted, Action: "Align",
			Message: message.Truncate(strings.Join(changed, "; "), maxMessage)})
	}
	st := fw.Status.DeepCopy()
	st.ObservedGeneration = fw.Generation
	st.UpdateRevision = tmpl.Revision
	st.Replicas, st.UpdatedReplicas, st.AvailableReplicas = s.Replicas, s.Updated, s.Available
	st.Clusters = s.Clusters
	st.Stages, st.Gate = stagesStatus(fw, walk)
	for _, c := range s.Conditions {
		setCondition(st, c, fw.Generation, in.Now)
	}
	return *st, events
}

// stuck is the output of a round that cannot be planned: Progressing False
// with why (Stalled, or Reconciling while no cluster is placed yet), and
// nothing written to any member.
func stuck(in Input, reason fleetv1alpha1.FederatedWorkloadReason, why string, requeue time.Duration) Output {
	fw := in.Workload
	st := fw.Status.DeepCopy()
	st.ObservedGeneration = fw.Generation
	prog := metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadProgressing), Status: metav1.ConditionFalse,
		Reason: string(reason), Message: message.Truncate(why, maxMessage)}
	for _, c := range append([]metav1.Condition{prog}, kstatusConditions(prog)...) {
		setCondition(st, c, fw.Generation, in.Now)
	}
	return Output{Stuck: reason, Status: *st, Requeue: requeue}
}

// setCondition sets c on st, at the clock of the round when its status
// changes.
func setCondition(st *fleetv1alpha1.FederatedWorkloadStatus, c metav1.Condition, generation int64, now time.Time) {
	c.ObservedGeneration = generation
	c.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(&st.Conditions, c)
}

// conflictEvents are an Event for each member whose conflict appeared,
// changed or went away since the status last written: once per change, not
// every round. A member that could not be read this round (status stale) has
// not shown that its conflict went away.
func conflictEvents(fw *fleetv1alpha1.FederatedWorkload, ms []*observed) []Event {
	before := make(map[string]string)
	for _, c := range fw.Status.Clusters {
		if strings.HasPrefix(c.Waiting, conflictPrefix) {
			before[c.Name] = c.Waiting
		}
	}
	var out []Event
	for _, m := range ms {
		if m.gone {
			continue
		}
		was, had := before[m.Name]
		switch {
		case m.Conflict != "" && message.Truncate(m.Conflict, maxWaiting) != was:
			out = append(out, Event{Type: corev1.EventTypeWarning, Reason: string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict),
				Action: "Apply", Message: fmt.Sprintf("cluster %s: %s", m.Name, m.Conflict)})
		case m.Conflict == "" && had && m.reached:
			out = append(out, Event{Type: corev1.EventTypeNormal, Reason: EventMemberObjectConflictCleared, Action: "Apply",
				Message: fmt.Sprintf("cluster %s: no object of another owner holds the workload's name any more", m.Name)})
		}
	}
	return out
}

// changedGrants lists the members whose grant differs from the last status.
func changedGrants(before, after []fleetv1alpha1.FederatedClusterStatus) []string {
	old := make(map[string]fleetv1alpha1.MemberGrant, len(before))
	for _, c := range before {
		old[c.Name] = c.Grant
	}
	var out []string
	for _, c := range after {
		if g, ok := old[c.Name]; !ok || g != c.Grant {
			out = append(out, fmt.Sprintf("%s: started=%t maxUnavailable=%d maxSurge=%d partition=%d paused=%t share=%d",
				c.Name, c.Grant.Started, c.Grant.MaxUnavailable, c.Grant.MaxSurge, c.Grant.Partition, c.Grant.Paused, c.DesiredReplicas))
		}
	}
	return out
}

// LogValues are the key/value pairs of a debug line about the round: what it
// saw of each member and what it granted and charged, the record a budget
// question is answered from.
func (o Output) LogValues() []any {
	if o.Stuck != "" {
		return []any{"stuck", string(o.Stuck)}
	}
	plans := make(map[string]align.MemberPlan, len(o.Plan.Members))
	for _, mp := range o.Plan.Members {
		plans[mp.Name] = mp
	}
	var ms []string
	for _, m := range o.Members {
		mp := plans[m.Name]
		st := m.Status
		ms = append(ms, fmt.Sprintf("%s[reach=%d share=%d/%d status=%d+%dt/%du/%dua/%da settling=%t last=%s seen=%s grant=%s charged=%du/%ds wait=%q]",
			m.Name, m.Reach, m.Desired, m.Target, st.Replicas, st.Terminating, st.Updated, st.UpdatedAvailable, st.Available, st.Settling,
			grantString(m.Last), grantString(m.Observed), grantString(&mp.Grant), mp.Unavailable, mp.Surge, mp.Waiting))
	}
	p := o.Plan
	return []any{"members", strings.Join(ms, " "),
		"charged", fmt.Sprintf("%du/%ds of %du/%ds", p.Unavailable, p.Surge, p.MaxUnavailable, p.MaxSurge),
		"granted", fmt.Sprintf("%d of %d", p.Granted, p.AllowedUpdated), "done", p.Done}
}

func grantString(g *align.Grant) string {
	if g == nil {
		return "-"
	}
	return fmt.Sprintf("{started=%t mu=%d ms=%d partition=%d paused=%t}", g.Started, g.MaxUnavailable, g.MaxSurge, g.Partition, g.Paused)
}
