package round

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
)

func TestSummarize_ProgressingNamesWhatTheRolloutWaitsFor(t *testing.T) {
	ready := func(n, updated int32) align.Status {
		return align.Status{Replicas: n, Updated: updated, UpdatedAvailable: updated, Available: n}
	}
	cases := []struct {
		name     string
		replicas int32
		paused   bool
		views    []MemberView
		plan     align.Plan
		status   metav1.ConditionStatus
		reason   fleetv1alpha1.FederatedWorkloadReason
		contains []string
		avail    metav1.ConditionStatus
	}{
		{
			name:   "a pod not ready and a stale member",
			views:  []MemberView{{Name: "eu-2", Desired: 4, Status: align.Status{Replicas: 4, Available: 3}}, {Name: "us-1", Desired: 6, Status: ready(6, 0), Reach: align.Stale}},
			plan:   align.Plan{MaxUnavailable: 2, AllowedUpdated: 10},
			status: metav1.ConditionTrue, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
			contains: []string{"cluster eu-2: 1 pod not ready", "cluster us-1: status stale", "0 of 10 pods updated"},
			avail:    metav1.ConditionTrue,
		},
		{
			name:   "an unreachable member and too few available",
			views:  []MemberView{{Name: "a", Desired: 5, Status: ready(5, 5)}, {Name: "b", Desired: 5, Status: ready(5, 0), Reach: align.Lost}},
			plan:   align.Plan{MaxUnavailable: 2, AllowedUpdated: 10},
			status: metav1.ConditionTrue, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
			contains: []string{"cluster b: unreachable"},
			avail:    metav1.ConditionTrue,
		},
		{
			name:     "the planner's reason when nothing else holds it",
			replicas: 5,
			views:    []MemberView{{Name: "a", Desired: 5, Status: ready(5, 0)}},
			plan:     align.Plan{MaxUnavailable: 1, AllowedUpdated: 5, Members: []align.MemberPlan{{Name: "a", Waiting: "no budget left"}}},
			status:   metav1.ConditionTrue, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
			contains: []string{"cluster a: no budget left"},
			avail:    metav1.ConditionTrue,
		},
		{
			name:     "re-divided units held by the partition",
			replicas: 10,
			views:    []MemberView{{Name: "a", Desired: 5, Target: 7, Status: ready(5, 5)}, {Name: "b", Desired: 5, Target: 3, Status: ready(5, 0)}},
			plan: align.Plan{MaxUnavailable: 1, AllowedUpdated: 5, Done: true, SharesHeld: 2, Members: []align.MemberPlan{
				{Name: "a", Waiting: "its share grows by 2, but the partition leaves room for 0 more updated units"}}},
			status: metav1.ConditionTrue, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
			contains: []string{"2 pods of the new division cannot move yet", "cluster a: its share grows by 2, but the partition"},
			avail:    metav1.ConditionTrue,
		},
		{
			name:   "a Deployment's share does not fit the partition",
			views:  []MemberView{{Name: "a", Desired: 5, Status: ready(5, 5)}, {Name: "b", Desired: 5, Status: ready(5, 0)}},
			plan:   align.Plan{MaxUnavailable: 1, AllowedUpdated: 7, Done: true, WholeShareShortfall: 2},
			status: metav1.ConditionFalse, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutComplete,
			avail: metav1.ConditionTrue,
		},
		{
			name:   "a cluster leaving keeps it progressing",
			views:  []MemberView{{Name: "a", Desired: 10, Status: ready(8, 8)}, {Name: "b", Desired: 2, Status: ready(2, 2), Leaving: true}},
			plan:   align.Plan{MaxUnavailable: 1, AllowedUpdated: 10, Done: true},
			status: metav1.ConditionTrue, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
			contains: []string{"cluster a: 2 pods not ready", "cluster b: left the placement; its 2 pods move to the others first"},
			avail:    metav1.ConditionTrue,
		},
		{
			name:     "paused",
			replicas: 3,
			paused:   true,
			views:    []MemberView{{Name: "a", Desired: 3, Status: ready(3, 1)}},
			plan:     align.Plan{MaxUnavailable: 1, AllowedUpdated: 3},
			status:   metav1.ConditionFalse, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutPaused,
			avail: metav1.ConditionTrue,
		},
		{
			name: "a member object of another owner, counted as none of the units",
			views: []MemberView{{Name: "a", Desired: 5, Status: ready(5, 5)}, {Name: "b", Desired: 5, Reach: align.Stale,
				Conflict: "Conflict: Deployment shop/web exists in the member and is not managed by this FederatedWorkload (label ...)"}},
			plan:   align.Plan{MaxUnavailable: 2, AllowedUpdated: 10},
			status: metav1.ConditionFalse, reason: fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict,
			contains: []string{"member object conflict in cluster b:", "cluster b: Conflict: Deployment shop/web exists", "5 of 10 pods updated"},
			avail:    metav1.ConditionFalse,
		},
		{
			name:     "a conflict wins over paused",
			replicas: 4,
			paused:   true,
			views: []MemberView{{Name: "a", Desired: 2, Reach: align.Stale, Conflict: "Conflict: one"},
				{Name: "b", Desired: 2, Reach: align.Stale, Conflict: "Conflict: two"}},
			plan:   align.Plan{MaxUnavailable: 1, AllowedUpdated: 4},
			status: metav1.ConditionFalse, reason: fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict,
			contains: []string{"member object conflict in clusters a, b:", "cluster a: Conflict: one; cluster b: Conflict: two"},
			avail:    metav1.ConditionFalse,
		},
		{
			name:   "below the minimum",
			views:  []MemberView{{Name: "a", Desired: 10, Status: align.Status{Replicas: 10, Available: 7}}},
			plan:   align.Plan{MaxUnavailable: 2, AllowedUpdated: 10},
			status: metav1.ConditionTrue, reason: fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress,
			contains: []string{"cluster a: 3 pods not ready"},
			avail:    metav1.ConditionFalse,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			replicas := c.replicas
			if replicas == 0 {
				replicas = 10
			}
			s := summarize("pod", replicas, c.paused, c.views, c.plan, nil)
			prog := meta.FindStatusCondition(s.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
			if prog.Status != c.status || prog.Reason != string(c.reason) {
				t.Errorf("Progressing %s %s (%s), want %s %s", prog.Status, prog.Reason, prog.Message, c.status, c.reason)
			}
			for _, want := range c.contains {
				if !strings.Contains(prog.Message, want) {
					t.Errorf("Progressing message %q lacks %q", prog.Message, want)
				}
			}
			if a := meta.FindStatusCondition(s.Conditions, string(fleetv1alpha1.FederatedWorkloadAvailable)); a.Status != c.avail {
				t.Errorf("Available %s (%s), want %s", a.Status, a.Message, c.avail)
			}
			if p := meta.IsStatusConditionTrue(s.Conditions, string(fleetv1alpha1.FederatedWorkloadPaused)); p != c.paused {
				t.Errorf("Paused %v, want %v", p, c.paused)
			}
		})
	}
}

func TestSummarize_MessageIsBounded(t *testing.T) {
	var views []MemberView
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		views = append(views, MemberView{Name: n, Desired: 1, Reach: align.Stale})
	}
	s := summarize("pod", 7, false, views, align.Plan{AllowedUpdated: 7}, nil)
	prog := meta.FindStatusCondition(s.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
	if !strings.Contains(prog.Message, "and 2 more") || strings.Contains(prog.Message, "cluster f") {
		t.Errorf("message %q", prog.Message)
	}
}

func TestSummarize_AConflictIsTheMembersWaitingAndItsUnitsAreNone(t *testing.T) {
	conflict := "Conflict: Deployment shop/web exists in the member and is not managed by this FederatedWorkload (label " +
		strings.Repeat("x", 300) + ")"
	views := []MemberView{{Name: "a", Desired: 3, Reach: align.Stale, Conflict: conflict}}
	s := summarize("pod", 3, false, views, align.Plan{AllowedUpdated: 3, Members: []align.MemberPlan{{Name: "a", Waiting: "status stale"}}}, nil)
	c := s.Clusters[0]
	if len(c.Waiting) != maxWaiting || !strings.HasPrefix(c.Waiting, "Conflict: Deployment shop/web") {
		t.Errorf("waiting %q (%d bytes), want the conflict cut to %d", c.Waiting, len(c.Waiting), maxWaiting)
	}
	if c.Replicas != 0 || c.AvailableReplicas != 0 || s.Available != 0 {
		t.Errorf("units counted for a member object of another owner: %+v, %d available", c, s.Available)
	}
}
