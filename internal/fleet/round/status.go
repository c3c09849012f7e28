package round

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
	"github.com/lockstep-dev/lockstep/internal/message"
)

// maxWaitsInMessage bounds the Progressing message; the rest is counted.
const maxWaitsInMessage = 5

// maxWaiting is the longest status.clusters[].waiting (the CRD's maxLength).
const maxWaiting = 256

// summary is the status a round reports.
type summary struct {
	Clusters                     []fleetv1alpha1.FederatedClusterStatus
	Replicas, Updated, Available int32
	Conditions                   []metav1.Condition
}

// summarize turns the round's view and plan into status: per-member counts and
// grants, global sums, and conditions naming what the rollout waits for.
func summarize(unit string, replicas int32, paused bool, views []MemberView, plan align.Plan, walk *stages.Plan) summary {
	grants := make(map[string]align.MemberPlan, len(plan.Members))
	for _, mp := range plan.Members {
		grants[mp.Name] = mp
	}
	var s summary
	var waits, conflicts []string
	leaving := false
	for _, v := range views {
		mp := grants[v.Name]
		w := waitOf(unit, v, mp)
		s.Clusters = append(s.Clusters, fleetv1alpha1.FederatedClusterStatus{
			Name: v.Name, DesiredReplicas: v.Desired,
			Replicas: v.Status.Replicas, UpdatedReplicas: v.Status.Updated, AvailableReplicas: v.Status.Available,
			Grant:       apiGrant(mp.Grant),
			StillActing: apiGrantOrNil(v.StillActing),
			Waiting:     message.Truncate(w, maxWaiting),
		})
		if v.Conflict != "" {
			conflicts = append(conflicts, v.Name)
		}
		s.Replicas += v.Status.Replicas
		s.Updated += v.Status.Updated
		s.Available += v.Status.Available
		leaving = leaving || v.Leaving
		if w != "" {
			waits = append(waits, "cluster "+v.Name+": "+w)
		}
	}
	if plan.SharesHeld > 0 {
		waits = append(waits, fmt.Sprintf("%s of the new division cannot move yet (each cluster says why)", plural(plan.SharesHeld, unit)))
	}
	if plan.WholeShareShortfall > 0 {
		verb := "stay"
		if plan.WholeShareShortfall == 1 {
			verb = "stays"
		}
		waits = append(waits, fmt.Sprintf("%s allowed on the new revision %s on the old one: a Deployment member takes its whole share or none, and no member's whole share fits",
			plural(plan.WholeShareShortfall, unit), verb))
	}

	avail := metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadAvailable), Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.FederatedWorkloadReasonMinimumAvailable),
		Message: fmt.Sprintf("%d of %d %ss available, at least %d needed", s.Available, replicas, unit, max(0, replicas-plan.MaxUnavailable))}
	if s.Available < replicas-plan.MaxUnavailable {
		avail.Status, avail.Reason = metav1.ConditionFalse, string(fleetv1alpha1.FederatedWorkloadReasonBelowMinimumAvailable)
	}
	prog := metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadProgressing), Status: metav1.ConditionFalse, Reason: string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete),
		Message: fmt.Sprintf("%d of %d %ss updated; nothing left to do", s.Updated, replicas, unit)}
	switch {
	case len(conflicts) > 0:
		// Before paused: nothing but a person can clear it, and no rollout
		// completes until then.
		prog.Status, prog.Reason = metav1.ConditionFalse, string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict)
		prog.Message = fmt.Sprintf("member object conflict in %s: an object not managed by this workload holds its name there "+
			"(delete it, or label it as status.clusters[].waiting says to hand it over); %d of %d %ss updated; waiting for %s",
			clusterList(conflicts), s.Updated, plan.AllowedUpdated, unit, waitsMessage(waits, "the conflicts"))
	case paused:
		prog.Status, prog.Reason = metav1.ConditionFalse, string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused)
		prog.Message = "paused: " + waitsMessage(waits, "no member is waiting")
	case !plan.Done || leaving || plan.SharesHeld > 0:
		prog.Status, prog.Reason = metav1.ConditionTrue, string(fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress)
		prog.Message = fmt.Sprintf("%d of %d %ss updated; waiting for %s", s.Updated, plan.AllowedUpdated, unit, waitsMessage(waits, "the members to act on their grants"))
	}
	if walk != nil && prog.Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutComplete) && !walk.Finished() {
		prog.Status, prog.Reason = metav1.ConditionTrue, string(fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress)
		prog.Message = fmt.Sprintf("%d of %d %ss updated; waiting for the stages: %s", s.Updated, plan.AllowedUpdated, unit, stagesMessage(walk))
	}
	prog = stageProgress(prog, walk)
	pause := metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadPaused), Status: metav1.ConditionFalse, Reason: string(fleetv1alpha1.FederatedWorkloadReasonRolloutNotPaused), Message: "spec.rolloutStrategy.paused is false"}
	if paused {
		pause.Status, pause.Reason, pause.Message = metav1.ConditionTrue, string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused), "spec.rolloutStrategy.paused is true: no member starts a new replacement"
	}
	s.Conditions = append([]metav1.Condition{avail, prog, pause}, kstatusConditions(prog)...)
	return s
}

// kstatusConditions are Reconciling and Stalled, read from Progressing the way
// kstatus (helm --wait, Flux, Argo CD) expects them, both always present with
// Progressing's reason and message, as on a PodCliqueSet: Reconciling is True
// while the hub still has work it will do by itself (a rollout or a
// re-division, or waiting for the placement to place a cluster); a rollout
// held by design (paused) is not reconciling; one that only a person can move
// on (a member object conflict, a round that cannot be planned) is stalled.
func kstatusConditions(prog metav1.Condition) []metav1.Condition {
	reconciling := metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadReconciling), Status: metav1.ConditionFalse, Reason: prog.Reason, Message: prog.Message}
	stalled := metav1.Condition{Type: string(fleetv1alpha1.FederatedWorkloadStalled), Status: metav1.ConditionFalse, Reason: prog.Reason, Message: prog.Message}
	switch fleetv1alpha1.FederatedWorkloadReason(prog.Reason) {
	case fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress, fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced,
		fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonSoaking), fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAwaitingConditions),
		fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAnalysisRunning):
		reconciling.Status = metav1.ConditionTrue
	case fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict, fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound,
		fleetv1alpha1.FederatedWorkloadReasonTooManyClusters, fleetv1alpha1.FederatedWorkloadReasonInvalidTemplate,
		fleetv1alpha1.FederatedWorkloadReasonInvalidDivision, fleetv1alpha1.FederatedWorkloadReasonAlignFailed,
		fleetv1alpha1.FederatedWorkloadReasonMaxFailuresExceeded, fleetv1alpha1.FederatedWorkloadReason(v1alpha1.ReasonAnalysisFailed):
		stalled.Status = metav1.ConditionTrue
	}
	return []metav1.Condition{reconciling, stalled}
}

// waitOf is what the member holds the rollout up with, "" when nothing.
func waitOf(unit string, v MemberView, mp align.MemberPlan) string {
	switch {
	case v.Conflict != "":
		return v.Conflict
	case v.Reach == align.Lost:
		return "unreachable for longer than memberLostTimeoutSeconds; its whole share counts as unavailable"
	case v.Unknown:
		return "status stale; not read since the workload's status was lost: taken to hold the most it could, under the widest grant"
	case v.Reach == align.Stale:
		return "status stale"
	case v.Leaving && v.Desired > 0:
		return fmt.Sprintf("left the placement; its %s move to the others first", plural(v.Desired, unit))
	case v.Leaving:
		return fmt.Sprintf("left the placement; removing its %s", plural(v.Status.Replicas+v.Status.Terminating, unit))
	}
	if n := v.Desired - v.Status.Available; n > 0 {
		return plural(n, unit) + " not ready"
	}
	if n := v.Status.Replicas + v.Status.Terminating - v.Desired; n > 0 {
		return plural(n, unit) + " above its share to remove"
	}
	return mp.Waiting
}

// clusterList names clusters, "cluster a" or "clusters a, b", at most
// maxWaitsInMessage of them.
func clusterList(names []string) string {
	word := "cluster "
	if len(names) > 1 {
		word = "clusters "
	}
	if len(names) > maxWaitsInMessage {
		return word + strings.Join(names[:maxWaitsInMessage], ", ") + fmt.Sprintf(" and %d more", len(names)-maxWaitsInMessage)
	}
	return word + strings.Join(names, ", ")
}

func waitsMessage(waits []string, none string) string {
	if len(waits) == 0 {
		return none
	}
	if len(waits) > maxWaitsInMessage {
		return strings.Join(waits[:maxWaitsInMessage], "; ") + fmt.Sprintf("; and %d more", len(waits)-maxWaitsInMessage)
	}
	return strings.Join(waits, "; ")
}

func plural(n int32, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func apiGrant(g align.Grant) fleetv1alpha1.MemberGrant {
	return fleetv1alpha1.MemberGrant{Started: g.Started, MaxUnavailable: g.MaxUnavailable, MaxSurge: g.MaxSurge, Partition: g.Partition, Paused: g.Paused}
}

func apiGrantOrNil(g *align.Grant) *fleetv1alpha1.MemberGrant {
	if g == nil {
		return nil
	}
	out := apiGrant(*g)
	return &out
}
