package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
)

func newFleet(t *testing.T, elected bool, objs ...client.Object) *Fleet {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	f := NewFleet(c, func() bool { return elected })
	f.rounds = newFleetRounds() // each test its own rounds; RecordFleetRound's are the process's
	return f
}

// web mid-rollout: eu-1 has its whole share updated, us-1 holds the grant.
func web() *fleetv1alpha1.FederatedWorkload {
	return &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "web", UID: "web-1"},
		Spec:       fleetv1alpha1.FederatedWorkloadSpec{Replicas: 10},
		Status: fleetv1alpha1.FederatedWorkloadStatus{
			Replicas: 11, UpdatedReplicas: 5, AvailableReplicas: 9,
			Clusters: []fleetv1alpha1.FederatedClusterStatus{
				{Name: "eu-1", DesiredReplicas: 4, Replicas: 4, UpdatedReplicas: 4, AvailableReplicas: 4, Grant: fleetv1alpha1.MemberGrant{Started: true, Paused: true}},
				{Name: "us-1", DesiredReplicas: 6, Replicas: 7, UpdatedReplicas: 1, AvailableReplicas: 5,
					Grant: fleetv1alpha1.MemberGrant{Started: true, MaxUnavailable: 2, MaxSurge: 1}, Waiting: "1 pod not ready"},
			},
			Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.FederatedWorkloadReasonRolloutInProgress)}},
		},
	}
}

func TestFleet_ReportsEveryMemberOfAFederatedWorkloadMidRollout(t *testing.T) {
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "eu-1"},
		Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.MemberClusterReasonReachable)}}}}
	f := newFleet(t, true, web(), mc)
	want := `
# HELP lockstep_federatedworkload_member_replicas_updated A member's units on the update revision, as the hub last read them.
# TYPE lockstep_federatedworkload_member_replicas_updated gauge
lockstep_federatedworkload_member_replicas_updated{cluster="eu-1",federatedworkload="web",namespace="serving"} 4
lockstep_federatedworkload_member_replicas_updated{cluster="us-1",federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_member_grant_max_unavailable maxUnavailable granted to a Deployment member.
# TYPE lockstep_federatedworkload_member_grant_max_unavailable gauge
lockstep_federatedworkload_member_grant_max_unavailable{cluster="eu-1",federatedworkload="web",namespace="serving"} 0
lockstep_federatedworkload_member_grant_max_unavailable{cluster="us-1",federatedworkload="web",namespace="serving"} 2
# HELP lockstep_federatedworkload_member_waiting 1 while the rollout waits for this member (its status says why).
# TYPE lockstep_federatedworkload_member_waiting gauge
lockstep_federatedworkload_member_waiting{cluster="eu-1",federatedworkload="web",namespace="serving"} 0
lockstep_federatedworkload_member_waiting{cluster="us-1",federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_replicas_updated Units on the update revision over all members.
# TYPE lockstep_federatedworkload_replicas_updated gauge
lockstep_federatedworkload_replicas_updated{federatedworkload="web",namespace="serving"} 5
# HELP lockstep_federatedworkload_status_condition The FederatedWorkload's status conditions: 1 on the series whose status is the current one.
# TYPE lockstep_federatedworkload_status_condition gauge
lockstep_federatedworkload_status_condition{condition="Progressing",federatedworkload="web",namespace="serving",reason="RolloutInProgress",status="False"} 0
lockstep_federatedworkload_status_condition{condition="Progressing",federatedworkload="web",namespace="serving",reason="RolloutInProgress",status="True"} 1
lockstep_federatedworkload_status_condition{condition="Progressing",federatedworkload="web",namespace="serving",reason="RolloutInProgress",status="Unknown"} 0
# HELP lockstep_membercluster_status_condition A MemberCluster's status conditions: 1 on the series whose status is the current one.
# TYPE lockstep_membercluster_status_condition gauge
lockstep_membercluster_status_condition{cluster="eu-1",condition="Ready",reason="Reachable",status="False"} 0
lockstep_membercluster_status_condition{cluster="eu-1",condition="Ready",reason="Reachable",status="True"} 1
lockstep_membercluster_status_condition{cluster="eu-1",condition="Ready",reason="Reachable",status="Unknown"} 0
`
	if err := testutil.CollectAndCompare(f, strings.NewReader(want),
		"lockstep_federatedworkload_member_replicas_updated", "lockstep_federatedworkload_member_grant_max_unavailable",
		"lockstep_federatedworkload_member_waiting", "lockstep_federatedworkload_replicas_updated",
		"lockstep_federatedworkload_status_condition", "lockstep_membercluster_status_condition"); err != nil {
		t.Fatal(err)
	}
}

// A rollout at a stage gate reports how long it has waited there and where
// each stage stands.
func TestFleet_ReportsTheStageGateWaitAndTheStages(t *testing.T) {
	fw := web()
	reached := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fw.Status.Stages = []fleetv1alpha1.StageStatus{
		{Name: "canary-0", Phase: fleetv1alpha1.StageAwaitingApproval}, {Name: "group-1", Phase: fleetv1alpha1.StagePending}}
	fw.Status.Gate = &v1alpha1.GateStatus{Name: "stage-canary-0", Reason: v1alpha1.ReasonAwaitingApproval, ReachedAt: metav1.NewTime(reached)}
	f := newFleet(t, true, fw)
	f.Now = func() time.Time { return reached.Add(90 * time.Second) }
	want := `
# HELP lockstep_federatedworkload_gate_waiting_seconds Seconds the rollout has waited at the stage gate status.gate names; only while it waits. reason is Soaking, AwaitingConditions, AnalysisRunning, AwaitingApproval or AnalysisFailed.
# TYPE lockstep_federatedworkload_gate_waiting_seconds gauge
lockstep_federatedworkload_gate_waiting_seconds{federatedworkload="web",gate="stage-canary-0",namespace="serving",reason="AwaitingApproval"} 90
# HELP lockstep_federatedworkload_stage_phase 1 on the phase each stage of the rollout is in (status.stages).
# TYPE lockstep_federatedworkload_stage_phase gauge
lockstep_federatedworkload_stage_phase{federatedworkload="web",namespace="serving",phase="AwaitingApproval",stage="canary-0"} 1
lockstep_federatedworkload_stage_phase{federatedworkload="web",namespace="serving",phase="Pending",stage="group-1"} 1
`
	if err := testutil.CollectAndCompare(f, strings.NewReader(want),
		"lockstep_federatedworkload_gate_waiting_seconds", "lockstep_federatedworkload_stage_phase"); err != nil {
		t.Fatal(err)
	}
}

// A hub that does not lead reports nothing (but its scrape-error counter).
func TestFleet_OnlyTheLeaderReports(t *testing.T) {
	f := newFleet(t, false, web())
	if n := testutil.CollectAndCount(f); n != 1 {
		t.Fatalf("%d series from a hub that does not lead, want only the error counter", n)
	}
}

// webRound is the round that wrote web's status: 2 of 2 units of
// maxUnavailable and 1 of 1 of maxSurge charged (us-1's grant), and us-1
// counted lost, as it would be once unreachable past memberLostTimeoutSeconds.
func webRound() *round.Output {
	return &round.Output{
		Plan: align.Plan{MaxUnavailable: 2, MaxSurge: 1, Unavailable: 2, Surge: 1},
		Members: []round.MemberView{
			{Name: "eu-1", Reach: align.Current},
			{Name: "us-1", Reach: align.Lost},
		},
	}
}

var roundSeries = []string{
	"lockstep_federatedworkload_budget_max_unavailable", "lockstep_federatedworkload_budget_max_surge",
	"lockstep_federatedworkload_budget_unavailable_charged", "lockstep_federatedworkload_budget_surge_charged",
	"lockstep_federatedworkload_member_lost",
}

func TestFleet_ReportsTheBudgetAndTheLostMembersOfTheLastRound(t *testing.T) {
	fw := web()
	f := newFleet(t, true, fw)
	if n := testutil.CollectAndCount(f, roundSeries...); n != 0 {
		t.Fatalf("%d budget or lost series before any round, want none", n)
	}
	f.rounds.record(fw, webRound())
	want := `
# HELP lockstep_federatedworkload_budget_max_surge The global maxSurge in units, as the last round resolved it against spec.replicas.
# TYPE lockstep_federatedworkload_budget_max_surge gauge
lockstep_federatedworkload_budget_max_surge{federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_budget_max_unavailable The global maxUnavailable in units, as the last round resolved it against spec.replicas.
# TYPE lockstep_federatedworkload_budget_max_unavailable gauge
lockstep_federatedworkload_budget_max_unavailable{federatedworkload="web",namespace="serving"} 2
# HELP lockstep_federatedworkload_budget_surge_charged Units the last round's grants may run above replicas together: what the planner charged against maxSurge.
# TYPE lockstep_federatedworkload_budget_surge_charged gauge
lockstep_federatedworkload_budget_surge_charged{federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_budget_unavailable_charged Units the last round's grants may take down together: what the planner charged against maxUnavailable.
# TYPE lockstep_federatedworkload_budget_unavailable_charged gauge
lockstep_federatedworkload_budget_unavailable_charged{federatedworkload="web",namespace="serving"} 2
# HELP lockstep_federatedworkload_member_lost 1 when the last round counted the member lost (unreachable for longer than memberLostTimeoutSeconds: its whole share unavailable), else 0.
# TYPE lockstep_federatedworkload_member_lost gauge
lockstep_federatedworkload_member_lost{cluster="eu-1",federatedworkload="web",namespace="serving"} 0
lockstep_federatedworkload_member_lost{cluster="us-1",federatedworkload="web",namespace="serving"} 1
# HELP lockstep_federatedworkload_member_replicas_current A member's units, surge included, as the hub last read them.
# TYPE lockstep_federatedworkload_member_replicas_current gauge
lockstep_federatedworkload_member_replicas_current{cluster="eu-1",federatedworkload="web",namespace="serving"} 4
lockstep_federatedworkload_member_replicas_current{cluster="us-1",federatedworkload="web",namespace="serving"} 7
# HELP lockstep_federatedworkload_replicas_current Units in all members, surge included (status.replicas).
# TYPE lockstep_federatedworkload_replicas_current gauge
lockstep_federatedworkload_replicas_current{federatedworkload="web",namespace="serving"} 11
`
	if err := testutil.CollectAndCompare(f, strings.NewReader(want), append(roundSeries,
		"lockstep_federatedworkload_member_replicas_current", "lockstep_federatedworkload_replicas_current")...); err != nil {
		t.Fatal(err)
	}
}

// A round that could not be planned (no placement, say) has no budget to
// report, and saw no member.
func TestFleet_ReportsNoBudgetOfARoundThatCouldNotBePlanned(t *testing.T) {
	fw := web()
	f := newFleet(t, true, fw)
	f.rounds.record(fw, webRound())
	f.rounds.record(fw, &round.Output{Stuck: fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound})
	if n := testutil.CollectAndCount(f, roundSeries...); n != 0 {
		t.Fatalf("%d budget or lost series after a round that could not be planned, want none", n)
	}
}

// The series of a deleted FederatedWorkload go with it, the last round
// included, and one created again under its name does not inherit them.
func TestFleet_LeavesNoSeriesOfADeletedFederatedWorkload(t *testing.T) {
	fw := web()
	f := newFleet(t, true, fw)
	f.rounds.record(fw, webRound())
	if n := testutil.CollectAndCount(f, roundSeries...); n != 6 {
		t.Fatalf("%d budget and lost series, want 6 (4 budget, 2 members)", n)
	}
	c := f.Reader.(client.Client)
	if err := c.Delete(t.Context(), fw); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f); n != 1 { // only lockstep_fleet_state_scrape_errors_total
		t.Fatalf("%d series after the FederatedWorkload was deleted, want only the scrape error counter", n)
	}
	if n := len(f.rounds.last); n != 0 {
		t.Fatalf("%d rounds kept of workloads no longer listed", n)
	}

	f.rounds.record(fw, webRound()) // a round of the old one, late
	again := web()
	again.UID, again.ResourceVersion = "web-2", ""
	if err := c.Create(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(f, roundSeries...); n != 0 {
		t.Fatalf("%d budget or lost series of a workload created again before its first round, want none", n)
	}
	if n := testutil.CollectAndCount(f, "lockstep_federatedworkload_replicas_desired"); n != 1 {
		t.Fatalf("%d replicas_desired series of the workload created again, want 1", n)
	}
}

// A round recorded while a scrape read the list may be of a workload the list
// missed: that scrape does not forget it.
func TestFleetRounds_KeepARoundRecordedAfterTheListWasRead(t *testing.T) {
	rs := newFleetRounds()
	listedAt := time.Now()
	rs.record(web(), webRound())
	rs.keepOnly(nil, listedAt)
	if rs.of(web()) == nil {
		t.Fatal("a round recorded after the list was read was forgotten")
	}
	rs.keepOnly(nil, time.Now())
	if rs.of(web()) != nil {
		t.Fatal("the round of a workload the next list does not hold was kept")
	}
}

// RecordFleetRound feeds every Fleet of the process: the reconciler and the
// collector share no object but this.
func TestRecordFleetRound_ReachesTheHubsCollector(t *testing.T) {
	fw := web()
	fw.UID = "web-record"
	t.Cleanup(func() { lastRounds.keepOnly(nil, time.Now()) })
	RecordFleetRound(fw, webRound())
	f := newFleet(t, true, fw)
	f.rounds = lastRounds // as NewFleet has it
	if got := testutil.CollectAndCount(f, "lockstep_federatedworkload_budget_unavailable_charged"); got != 1 {
		t.Fatalf("%d unavailable_charged series after RecordFleetRound, want 1", got)
	}
}
