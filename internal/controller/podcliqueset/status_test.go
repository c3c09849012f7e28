package podcliqueset

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

func TestBlockers_NameTheOldestWaitingPodsOfTheUpdateRevision(t *testing.T) {
	waiting := []waitingPod{
		{name: "old-0", setRevision: "v1", why: "not scheduled yet"},
		{name: "pcs-0-frontend-3", setRevision: "v2", surge: true, why: "not scheduled: 0/4 nodes are available"},
		{name: "pcs-0-frontend-0", setRevision: "v2", why: "scheduled on n, not ready yet"},
		{name: "pcs-0-frontend-1", setRevision: "v2", why: "not scheduled yet"},
	}
	got := blockers(v1alpha1.ReasonProgressDeadlineExceeded, "v2", waiting)
	want := "; waiting for surge pod pcs-0-frontend-3 (not scheduled: 0/4 nodes are available), pod pcs-0-frontend-0 (scheduled on n, not ready yet) and 1 more"
	if got != want {
		t.Fatalf("blockers:\n got %q\nwant %q", got, want)
	}
	if got := blockers(v1alpha1.ReasonRolloutComplete, "v2", waiting); got != "" {
		t.Fatalf("a complete rollout names blockers: %q", got)
	}
	if got := blockers(v1alpha1.ReasonRollingUpdateInProgress, "v3", waiting); got != "" {
		t.Fatalf("pods of other revisions named: %q", got)
	}
}

// RolloutStarted names the strategy in force, also for an object written
// without the defaulting webhook, whose stored type is empty.
func TestAnnounceRollout_NamesTheEffectiveStrategy(t *testing.T) {
	fake := events.NewFakeRecorder(2)
	r := &Reconciler{Recorder: fake}
	pcs := &v1alpha1.PodCliqueSet{Status: v1alpha1.PodCliqueSetStatus{UpdateRevision: "v1", CurrentRevision: "v1"}}
	spec := pcs.Spec.DeepCopy()
	defaulted := &v1alpha1.PodCliqueSet{Spec: *spec}
	defaulted.Default()
	plan := rollout.SetPlan{Status: rollout.SetStatus{UpdateRevision: "v2", CurrentRevision: "v1"}}
	r.announceRollout(pcs, &defaulted.Spec, plan)
	if got := <-fake.Events; !strings.Contains(got, "RolloutStarted Rolling out revision v2 (from v1) with RollingUpdate") {
		t.Fatalf("event %q", got)
	}
	r.announceRollout(&v1alpha1.PodCliqueSet{Status: v1alpha1.PodCliqueSetStatus{UpdateRevision: "v2"}}, &defaulted.Spec, plan)
	if len(fake.Events) != 0 {
		t.Fatalf("a plan on the same revision announced a rollout: %q", <-fake.Events)
	}
}

// A rollout's duration is recorded once, with how it ended: a newer spec
// replacing it mid-way, or its deadline passing.
func TestRecord_RolloutDurationByResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := &Reconciler{Metrics: metrics.NewRollouts(reg)}
	pcs := &v1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm"}}
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	running := &v1alpha1.PodCliqueSetStatus{UpdateRevision: "v2", UpdateProgress: &v1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: &start}}
	superseding := &v1alpha1.PodCliqueSetStatus{UpdateRevision: "v3", UpdateProgress: &v1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: &start}}
	r.record(pcs, running, superseding, rollout.SetStatus{}, start.Add(90*time.Second))
	r.record(pcs, running, running, rollout.SetStatus{DeadlineExceeded: true}, start.Add(10*time.Minute))
	stalled := running.DeepCopy()
	stalled.Conditions = []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionFalse, Reason: string(v1alpha1.ReasonProgressDeadlineExceeded)}}
	r.record(pcs, stalled, stalled, rollout.SetStatus{DeadlineExceeded: true}, start.Add(11*time.Minute)) // still stalled: not again

	want := map[string]uint64{"superseded": 1, "stalled": 1}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "lockstep_rollout_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					got[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("durations %v, want %v", got, want)
		}
	}
}

// A change that only moves the rollout's progress (the highest counts, when
// they last rose, the pods Progressing names) may wait for the next write;
// anything else a user or the planner reads back may not.
func TestProgressOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := &v1alpha1.PodCliqueSetStatus{
		ObservedGeneration: 2, UpdatedReplicas: 0, UpdateRevision: "v2",
		Conditions: []metav1.Condition{{Type: string(v1alpha1.ConditionProgressing), Status: metav1.ConditionTrue,
			Reason: string(v1alpha1.ReasonRollingUpdateInProgress), Message: "rolling; waiting for pod a-0 (not ready yet) and 14 more"}},
		UpdateProgress: &v1alpha1.PodCliqueSetUpdateProgress{
			UpdateStartedAt: &metav1.Time{Time: t0}, LastProgressAt: &metav1.Time{Time: t0},
			ProgressCounts:   &v1alpha1.UnitCounts{Updated: 15, Ready: 45, Available: 45},
			UpdatingReplicas: []v1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 0, UpdateStartedAt: &metav1.Time{Time: t0}}},
		},
	}
	progress := func(s *v1alpha1.PodCliqueSetStatus) {
		s.UpdateProgress.ProgressCounts = &v1alpha1.UnitCounts{Updated: 16, Ready: 46, Available: 46}
		s.UpdateProgress.LastProgressAt = &metav1.Time{Time: t0.Add(300 * time.Millisecond)}
		s.Conditions[0].Message = "rolling; waiting for pod a-1 (not ready yet) and 13 more"
	}
	cases := []struct {
		name   string
		change func(*v1alpha1.PodCliqueSetStatus)
		want   bool
	}{
		{"progress only", progress, true},
		{"a replica count", func(s *v1alpha1.PodCliqueSetStatus) { progress(s); s.UpdatedReplicas = 1 }, false},
		{"the Progressing reason", func(s *v1alpha1.PodCliqueSetStatus) {
			progress(s)
			s.Conditions[0].Reason = string(v1alpha1.ReasonRolloutComplete)
		}, false},
		{"a replica starts updating", func(s *v1alpha1.PodCliqueSetStatus) {
			progress(s)
			s.UpdateProgress.UpdatingReplicas = append(s.UpdateProgress.UpdatingReplicas, v1alpha1.PodCliqueSetReplicaUpdateProgress{ReplicaIndex: 1})
		}, false},
		{"a role step's count", func(s *v1alpha1.PodCliqueSetStatus) {
			s.UpdateProgress.UpdatingReplicas[0].RoleStep = &v1alpha1.RoleStepProgress{Index: 0, Role: "prefill", Target: 2, UpdatedAndReady: 1}
		}, false},
		{"the first progress", progress, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, next := prev.DeepCopy(), prev.DeepCopy()
			c.change(next)
			if c.name == "the first progress" {
				before.UpdateProgress = nil
			}
			if got := progressOnly(before, next); got != c.want {
				t.Fatalf("progressOnly = %v, want %v", got, c.want)
			}
		})
	}
}

// A surge pod the scheduler finds no room for turns the rollout's reason to
// SurgeUnschedulable, saying what it waits for, with a Warning Event once;
// a surge pod merely not scheduled yet does not.
func TestDesiredStatus_AnUnplaceableSurgePodIsSurgeUnschedulable(t *testing.T) {
	plan := rollout.SetPlan{Status: rollout.SetStatus{UpdateRevision: "v2", Conditions: []rollout.Condition{
		{Type: v1alpha1.ConditionProgressing, Status: "True", Reason: v1alpha1.ReasonRollingUpdateInProgress, Message: "0 of 2 replicas updated"},
		{Type: v1alpha1.ConditionReconciling, Status: "True", Reason: v1alpha1.ReasonRollingUpdateInProgress},
	}}}
	pending := waitingPod{name: "gpu-0-kv-2-kv-worker-0", setRevision: "v2", surge: true, why: "not scheduled yet"}
	stuck := waitingPod{name: "gpu-0-kv-2-kv-leader-0", setRevision: "v2", surge: true, unschedulable: true,
		why: "not scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}

	pcs := &v1alpha1.PodCliqueSet{}
	st := desiredStatus(pcs, plan, nil, []waitingPod{pending})
	if c := findCondition(st, v1alpha1.ConditionProgressing); c.Reason != string(v1alpha1.ReasonRollingUpdateInProgress) {
		t.Fatalf("a surge pod not scheduled yet: %+v", c)
	}
	st = desiredStatus(pcs, plan, nil, []waitingPod{pending, stuck})
	c := findCondition(st, v1alpha1.ConditionProgressing)
	if c.Reason != string(v1alpha1.ReasonSurgeUnschedulable) || c.Status != metav1.ConditionTrue ||
		!strings.Contains(c.Message, "surge pod gpu-0-kv-2-kv-leader-0 cannot be placed (not scheduled: 0/3 nodes are available") ||
		!strings.Contains(c.Message, "waits for room") {
		t.Fatalf("progressing %+v", c)
	}
	if r := findCondition(st, v1alpha1.ConditionReconciling); r.Status != metav1.ConditionTrue {
		t.Fatalf("reconciling %+v: the rollout is still under way", r)
	}
	fake := events.NewFakeRecorder(4)
	(&Reconciler{Recorder: fake}).narrate(pcs, &pcs.Status, st)
	if got := <-fake.Events; !strings.HasPrefix(got, "Warning SurgeUnschedulable surge pod gpu-0-kv-2-kv-leader-0 cannot be placed") {
		t.Fatalf("event %q", got)
	}
}

func findCondition(st *v1alpha1.PodCliqueSetStatus, typ v1alpha1.ConditionType) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == string(typ) {
			return c
		}
	}
	return metav1.Condition{}
}

func TestRecordGate_CountsPassesAndFailures(t *testing.T) {
	m := metrics.NewRollouts(prometheus.NewRegistry())
	l := prometheus.Labels{"namespace": "ns", "podcliqueset": "web"}
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	at := func(name string, reason v1alpha1.ConditionReason) *v1alpha1.PodCliqueSetStatus {
		st := &v1alpha1.PodCliqueSetStatus{UpdateRevision: "v2", UpdateProgress: &v1alpha1.PodCliqueSetUpdateProgress{}}
		if name != "" {
			st.UpdateProgress.Gate = &v1alpha1.GateStatus{Name: name, Reason: reason, ReachedAt: metav1.NewTime(now.Add(-time.Minute))}
		}
		return st
	}
	recordGate(m, l, at("", ""), at("replicas-1", v1alpha1.ReasonAwaitingApproval), now)
	recordGate(m, l, at("replicas-1", v1alpha1.ReasonAwaitingApproval), at("replicas-1", v1alpha1.ReasonAwaitingApproval), now)
	recordGate(m, l, at("replicas-1", v1alpha1.ReasonAwaitingApproval), at("", ""), now)
	recordGate(m, l, at("", ""), at("replicas-2", v1alpha1.ReasonAnalysisRunning), now)
	recordGate(m, l, at("replicas-2", v1alpha1.ReasonAnalysisRunning), at("replicas-2", v1alpha1.ReasonAnalysisFailed), now)
	recordGate(m, l, at("replicas-2", v1alpha1.ReasonAnalysisFailed), at("replicas-2", v1alpha1.ReasonAnalysisFailed), now)
	passed := testutil.ToFloat64(m.Gates.With(prometheus.Labels{"namespace": "ns", "podcliqueset": "web", "outcome": metrics.GatePassed}))
	failed := testutil.ToFloat64(m.Gates.With(prometheus.Labels{"namespace": "ns", "podcliqueset": "web", "outcome": metrics.GateAnalysisFailed}))
	if passed != 1 || failed != 1 {
		t.Fatalf("passed %v, analysis_failed %v; want 1 and 1", passed, failed)
	}
	if n := testutil.CollectAndCount(m.GateWait); n != 1 {
		t.Fatalf("%d wait series", n)
	}
}
