package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var scrapeTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// disaggregated is a PodCliqueSet of 2 replicas with a standalone frontend (2
// pods per replica) and a prefill scaling group (2 group replicas per replica),
// in the middle of a role-ordered rollout.
func disaggregated() *v1alpha1.PodCliqueSet {
	progress := metav1.NewTime(scrapeTime.Add(-90 * time.Second))
	return &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: "llm"},
		Spec: v1alpha1.PodCliqueSetSpec{
			Replicas:                ptr.To[int32](2),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			UpdateStrategy: v1alpha1.PodCliqueSetUpdateStrategy{
				RollingUpdate: &v1alpha1.PodCliqueSetRollingUpdate{Partition: ptr.To[int32](1)},
			},
			Template: v1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []v1alpha1.PodCliqueTemplateSpec{
					{Name: "frontend", Replicas: 2},
					{Name: "prefill-leader", Replicas: 1},
					{Name: "prefill-worker", Replicas: 3},
				},
				PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
					{Name: "prefill", CliqueNames: []string{"prefill-leader", "prefill-worker"}, Replicas: 2},
				},
			},
		},
		Status: v1alpha1.PodCliqueSetStatus{
			UpdatedReplicas:   0,
			AvailableReplicas: 2,
			Conditions: []metav1.Condition{
				{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "RoleStepWaiting"},
				{Type: "GangScheduled", Status: metav1.ConditionFalse, Reason: "Unschedulable"},
			},
			UpdateProgress: &v1alpha1.PodCliqueSetUpdateProgress{
				UpdateStartedAt: &progress,
				LastProgressAt:  &progress,
				UpdatingReplicas: []v1alpha1.PodCliqueSetReplicaUpdateProgress{
					{ReplicaIndex: 0, RoleStep: &v1alpha1.RoleStepProgress{Index: 2, Role: "frontend", Target: 2, UpdatedAndReady: 1}},
					{ReplicaIndex: 1, RoleStep: &v1alpha1.RoleStepProgress{Index: 1, Role: "prefill", Target: 1}},
				},
			},
		},
	}
}

func childLabels(pcs, clique, group string) map[string]string {
	l := map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, v1alpha1.LabelPodCliqueSet: pcs, v1alpha1.LabelClique: clique}
	if group != "" {
		l[v1alpha1.LabelPodCliqueScalingGroup] = group
	}
	return l
}

func clique(name, pcs, cliqueName, group, gang string, minAvailable int32, st v1alpha1.ChildStatus) *v1alpha1.PodClique {
	c := &v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: name, Labels: childLabels(pcs, cliqueName, group)},
		Spec:       v1alpha1.PodCliqueSpec{Replicas: minAvailable, MinAvailable: ptr.To(minAvailable)},
		Status:     st,
	}
	if gang != "" {
		c.Spec.Gang = &v1alpha1.PodCliqueGang{PodGroupName: gang}
	}
	return c
}

func group(name, pcs, groupName string, st v1alpha1.ChildStatus) *v1alpha1.PodCliqueScalingGroup {
	return &v1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "serving", Name: name, Labels: childLabels(pcs, "", groupName)},
		Status:     st,
	}
}

func newState(t *testing.T, elected bool, objs ...client.Object) *State {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return NewState(c, func() bool { return elected }, func() time.Time { return scrapeTime })
}

func TestState_ReportsEveryRoleOfAPodCliqueSetMidRollout(t *testing.T) {
	s := newState(t, true,
		disaggregated(),
		clique("llm-0-frontend", "llm", "frontend", "", "llm-0", 2, v1alpha1.ChildStatus{Replicas: 2, ScheduledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 1}),
		clique("llm-1-frontend", "llm", "frontend", "", "llm-1", 2, v1alpha1.ChildStatus{Replicas: 3, ScheduledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}),
		// Members of the group are counted through the group, not as roles.
		clique("llm-0-prefill-0-prefill-worker", "llm", "prefill-worker", "prefill", "llm-0", 3, v1alpha1.ChildStatus{Replicas: 3, ScheduledReplicas: 3}),
		clique("llm-1-prefill-1-prefill-worker", "llm", "prefill-worker", "prefill", "llm-1-prefill-1", 3, v1alpha1.ChildStatus{Replicas: 3, ScheduledReplicas: 1}),
		group("llm-0-prefill", "llm", "prefill", v1alpha1.ChildStatus{Replicas: 2, ScheduledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2}),
		group("llm-1-prefill", "llm", "prefill", v1alpha1.ChildStatus{Replicas: 2, ScheduledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}),
		// Another PodCliqueSet's child never leaks into llm's series.
		clique("other-0-frontend", "other", "frontend", "", "", 5, v1alpha1.ChildStatus{Replicas: 5, UpdatedReplicas: 5}),
	)
	want := `
# HELP lockstep_podcliqueset_role_units_desired Units a role should have over all PodCliqueSet replicas: pods of a standalone clique, replicas of a scaling group.
# TYPE lockstep_podcliqueset_role_units_desired gauge
lockstep_podcliqueset_role_units_desired{namespace="serving",podcliqueset="llm",role="frontend"} 4
lockstep_podcliqueset_role_units_desired{namespace="serving",podcliqueset="llm",role="prefill"} 4
# HELP lockstep_podcliqueset_role_units_updated Units of a role made from its current template.
# TYPE lockstep_podcliqueset_role_units_updated gauge
lockstep_podcliqueset_role_units_updated{namespace="serving",podcliqueset="llm",role="frontend"} 1
lockstep_podcliqueset_role_units_updated{namespace="serving",podcliqueset="llm",role="prefill"} 2
# HELP lockstep_podcliqueset_role_units_available Units of a role ready for at least minReadySeconds.
# TYPE lockstep_podcliqueset_role_units_available gauge
lockstep_podcliqueset_role_units_available{namespace="serving",podcliqueset="llm",role="frontend"} 4
lockstep_podcliqueset_role_units_available{namespace="serving",podcliqueset="llm",role="prefill"} 3
# HELP lockstep_podcliqueset_role_units_unscheduled Units of a role that exist but are not bound to nodes.
# TYPE lockstep_podcliqueset_role_units_unscheduled gauge
lockstep_podcliqueset_role_units_unscheduled{namespace="serving",podcliqueset="llm",role="frontend"} 1
lockstep_podcliqueset_role_units_unscheduled{namespace="serving",podcliqueset="llm",role="prefill"} 1
# HELP lockstep_podcliqueset_role_step Index (0-based) of the earliest roleUpgrade step a replica is at; the role label is that step's role. Only while a replica is at a step.
# TYPE lockstep_podcliqueset_role_step gauge
lockstep_podcliqueset_role_step{namespace="serving",podcliqueset="llm",role="prefill"} 1
# HELP lockstep_podcliqueset_unscheduled_gangs Gangs with fewer scheduled pods than their minimum.
# TYPE lockstep_podcliqueset_unscheduled_gangs gauge
lockstep_podcliqueset_unscheduled_gangs{namespace="serving",podcliqueset="llm"} 1
# HELP lockstep_podcliqueset_seconds_since_last_progress Seconds since the rollout last made progress; only while a rollout runs, unpaused and at no gate (the progress deadline does not run there).
# TYPE lockstep_podcliqueset_seconds_since_last_progress gauge
lockstep_podcliqueset_seconds_since_last_progress{namespace="serving",podcliqueset="llm"} 90
# HELP lockstep_podcliqueset_partition spec.updateStrategy.rollingUpdate.partition: replicas below it keep the old revision.
# TYPE lockstep_podcliqueset_partition gauge
lockstep_podcliqueset_partition{namespace="serving",podcliqueset="llm"} 1
# HELP lockstep_podcliqueset_replicas_updating PodCliqueSet replicas being updated now.
# TYPE lockstep_podcliqueset_replicas_updating gauge
lockstep_podcliqueset_replicas_updating{namespace="serving",podcliqueset="llm"} 2
# HELP lockstep_podcliqueset_status_condition The PodCliqueSet's status conditions: 1 on the series whose status is the current one.
# TYPE lockstep_podcliqueset_status_condition gauge
lockstep_podcliqueset_status_condition{condition="GangScheduled",namespace="serving",podcliqueset="llm",reason="Unschedulable",status="False"} 1
lockstep_podcliqueset_status_condition{condition="GangScheduled",namespace="serving",podcliqueset="llm",reason="Unschedulable",status="True"} 0
lockstep_podcliqueset_status_condition{condition="GangScheduled",namespace="serving",podcliqueset="llm",reason="Unschedulable",status="Unknown"} 0
lockstep_podcliqueset_status_condition{condition="Progressing",namespace="serving",podcliqueset="llm",reason="RoleStepWaiting",status="False"} 0
lockstep_podcliqueset_status_condition{condition="Progressing",namespace="serving",podcliqueset="llm",reason="RoleStepWaiting",status="True"} 1
lockstep_podcliqueset_status_condition{condition="Progressing",namespace="serving",podcliqueset="llm",reason="RoleStepWaiting",status="Unknown"} 0
`
	names := []string{
		"lockstep_podcliqueset_role_units_desired", "lockstep_podcliqueset_role_units_updated",
		"lockstep_podcliqueset_role_units_available", "lockstep_podcliqueset_role_units_unscheduled",
		"lockstep_podcliqueset_role_step", "lockstep_podcliqueset_unscheduled_gangs",
		"lockstep_podcliqueset_seconds_since_last_progress", "lockstep_podcliqueset_partition",
		"lockstep_podcliqueset_replicas_updating", "lockstep_podcliqueset_status_condition",
	}
	if err := testutil.CollectAndCompare(s, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

func TestState_LeavesNoSeriesOfADeletedPodCliqueSet(t *testing.T) {
	pcs := disaggregated()
	s := newState(t, true, pcs)
	if n := testutil.CollectAndCount(s, "lockstep_podcliqueset_replicas_desired"); n != 1 {
		t.Fatalf("%d series of replicas_desired, want 1", n)
	}
	if err := s.Reader.(client.Client).Delete(t.Context(), pcs); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(s); n != 1 { // only lockstep_state_scrape_errors_total
		t.Fatalf("%d series after the PodCliqueSet was deleted, want only the scrape error counter", n)
	}
}

func TestState_FollowerReportsNothing(t *testing.T) {
	s := newState(t, false, disaggregated())
	if n := testutil.CollectAndCount(s); n != 1 {
		t.Fatalf("a follower reported %d series, want only the scrape error counter", n)
	}
}

func TestState_NoProgressClockOnceTheRolloutEnded(t *testing.T) {
	pcs := disaggregated()
	ended := metav1.NewTime(scrapeTime.Add(-time.Second))
	pcs.Status.UpdateProgress.UpdateEndedAt = &ended
	pcs.Status.UpdateProgress.UpdatingReplicas = nil
	s := newState(t, true, pcs)
	if n := testutil.CollectAndCount(s, "lockstep_podcliqueset_seconds_since_last_progress", "lockstep_podcliqueset_role_step"); n != 0 {
		t.Fatalf("%d progress-clock or role-step series after the rollout ended", n)
	}
}

// The deadline clock stands while paused: lastProgressAt is kept as it was,
// and the time since it is no sign of a stuck rollout.
func TestState_NoProgressClockWhilePaused(t *testing.T) {
	pcs := disaggregated()
	pcs.Spec.Paused = true
	s := newState(t, true, pcs)
	if n := testutil.CollectAndCount(s, "lockstep_podcliqueset_seconds_since_last_progress"); n != 0 {
		t.Fatalf("%d progress-clock series while paused", n)
	}
}

func TestState_AGateWaitingReplacesTheNoProgressClock(t *testing.T) {
	pcs := disaggregated()
	pcs.Status.UpdateProgress.Gate = &v1alpha1.GateStatus{Name: "replicas-1", Reason: v1alpha1.ReasonAwaitingApproval,
		ReachedAt: metav1.NewTime(scrapeTime.Add(-5 * time.Minute))}
	s := newState(t, true, pcs)
	want := `
# HELP lockstep_podcliqueset_gate_waiting_seconds Seconds the rollout has waited at its gate (status.updateProgress.gate); only while it waits. reason is Soaking or AwaitingApproval.
# TYPE lockstep_podcliqueset_gate_waiting_seconds gauge
lockstep_podcliqueset_gate_waiting_seconds{gate="replicas-1",namespace="serving",podcliqueset="llm",reason="AwaitingApproval"} 300
`
	if err := testutil.CollectAndCompare(s, strings.NewReader(want), "lockstep_podcliqueset_gate_waiting_seconds", "lockstep_podcliqueset_seconds_since_last_progress"); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterState_ReplacesTheCollectorOfAnEarlierStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := RegisterState(reg, newState(t, true, disaggregated())); err != nil {
		t.Fatal(err)
	}
	if err := RegisterState(reg, newState(t, true)); err != nil {
		t.Fatalf("second start: %v", err)
	}
	if n, err := testutil.GatherAndCount(reg, "lockstep_podcliqueset_replicas_desired"); err != nil || n != 0 {
		t.Fatalf("the first start's collector still reports (%d series, %v)", n, err)
	}
}

func TestRollouts_CountsRollbacksByResult(t *testing.T) {
	m := NewRollouts(prometheus.NewRegistry())
	m.Rollback("ns", "pcs", RollbackStarted)
	m.Rollback("ns", "pcs", RollbackStarted)
	m.Rollback("ns", "pcs", RollbackFailed)
	if got := testutil.ToFloat64(m.Rollbacks.WithLabelValues("ns", "pcs", RollbackStarted)); got != 2 {
		t.Fatalf("started = %v, want 2", got)
	}
	m.Forget("ns", "pcs")
	if n := testutil.CollectAndCount(m.Rollbacks); n != 0 {
		t.Fatalf("%d rollback series left after Forget", n)
	}
}
