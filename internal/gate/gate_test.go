package gate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestEvaluate(t *testing.T) {
	soak := &v1alpha1.Gate{SoakSeconds: 60}
	approval := &v1alpha1.Gate{Approval: true}
	both := &v1alpha1.Gate{SoakSeconds: 60, Approval: true}
	for _, tc := range []struct {
		name      string
		gate      *v1alpha1.Gate
		after     time.Duration
		approved  string
		open      bool
		reason    v1alpha1.ConditionReason
		recheckIn time.Duration
	}{
		{name: "no gate", open: true},
		{name: "a gate that checks nothing", gate: &v1alpha1.Gate{}, open: true},
		{name: "soak just begun", gate: soak, reason: v1alpha1.ReasonSoaking, recheckIn: 60 * time.Second},
		{name: "soak half way", gate: soak, after: 45 * time.Second, reason: v1alpha1.ReasonSoaking, recheckIn: 15 * time.Second},
		{name: "soak over", gate: soak, after: 60 * time.Second, open: true},
		{name: "no approval", gate: approval, reason: v1alpha1.ReasonAwaitingApproval},
		{name: "approved", gate: approval, approved: "v2@replicas-1", open: true},
		{name: "approval of another gate", gate: approval, approved: "v2@replicas-2", reason: v1alpha1.ReasonAwaitingApproval},
		{name: "approval of an earlier rollout", gate: approval, approved: "v1@replicas-1", reason: v1alpha1.ReasonAwaitingApproval},
		{name: "approved early: the soak still runs", gate: both, after: 10 * time.Second, approved: "v2@replicas-1",
			reason: v1alpha1.ReasonSoaking, recheckIn: 50 * time.Second},
		{name: "soaked, not approved", gate: both, after: time.Hour, reason: v1alpha1.ReasonAwaitingApproval},
		{name: "soaked and approved", gate: both, after: time.Hour, approved: "v2@replicas-1", open: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(Input{Gate: tc.gate, Name: "replicas-1", Revision: "v2", ReachedAt: t0, Now: t0.Add(tc.after), Approved: tc.approved})
			if v.Open != tc.open || v.Reason != tc.reason || v.RecheckIn != tc.recheckIn {
				t.Fatalf("got %+v, want open %v reason %q recheck in %s", v, tc.open, tc.reason, tc.recheckIn)
			}
			if !v.Open && v.Message == "" {
				t.Fatal("a closed gate must say what it waits for")
			}
		})
	}
}

func measured(phase v1alpha1.AnalysisPhase, at time.Duration) *v1alpha1.AnalysisStatus {
	return &v1alpha1.AnalysisStatus{Phase: phase, Message: string(phase), MeasuredAt: metav1.NewTime(t0.Add(at))}
}

func TestEvaluate_Analysis(t *testing.T) {
	analysis := &v1alpha1.GateAnalysis{Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://p:9090", Query: "q", SuccessCondition: "result < 1"}}
	pause := &v1alpha1.Gate{SoakSeconds: 60, Analysis: analysis}
	rollback := &v1alpha1.Gate{Analysis: analysis, OnFailure: v1alpha1.GateFailureRollback}
	approveAfter := &v1alpha1.Gate{Analysis: analysis, Approval: true}
	for _, tc := range []struct {
		name     string
		gate     *v1alpha1.Gate
		after    time.Duration
		measured *v1alpha1.AnalysisStatus
		approved string
		open     bool
		reason   v1alpha1.ConditionReason
		failed   bool
		rollback bool
	}{
		{name: "soaking first", gate: pause, after: 30 * time.Second, reason: v1alpha1.ReasonSoaking},
		{name: "no measurement yet", gate: pause, after: time.Minute, reason: v1alpha1.ReasonAnalysisRunning},
		{name: "a pass taken during the soak does not count", gate: pause, after: 2 * time.Minute,
			measured: measured(v1alpha1.AnalysisPassed, 30*time.Second), reason: v1alpha1.ReasonAnalysisRunning},
		{name: "a pass after the soak opens", gate: pause, after: 2 * time.Minute, measured: measured(v1alpha1.AnalysisPassed, 70*time.Second), open: true},
		{name: "inconclusive holds", gate: pause, after: 2 * time.Minute, measured: measured(v1alpha1.AnalysisInconclusive, 70*time.Second),
			reason: v1alpha1.ReasonAnalysisRunning},
		{name: "a failure pauses", gate: pause, after: 2 * time.Minute, measured: measured(v1alpha1.AnalysisFailed, 70*time.Second),
			reason: v1alpha1.ReasonAnalysisFailed, failed: true},
		{name: "an approval overrides a failure", gate: pause, after: 2 * time.Minute, measured: measured(v1alpha1.AnalysisFailed, 70*time.Second),
			approved: "v2@replicas-1", open: true},
		{name: "a failure rolls back", gate: rollback, after: time.Minute, measured: measured(v1alpha1.AnalysisFailed, time.Second),
			reason: v1alpha1.ReasonAnalysisFailed, failed: true, rollback: true},
		{name: "a pass, then the approval", gate: approveAfter, after: time.Minute, measured: measured(v1alpha1.AnalysisPassed, time.Second),
			reason: v1alpha1.ReasonAwaitingApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(Input{Gate: tc.gate, Name: "replicas-1", Revision: "v2", ReachedAt: t0, Now: t0.Add(tc.after), Approved: tc.approved,
				Measured: tc.measured})
			if v.Open != tc.open || v.Reason != tc.reason || v.Failed != tc.failed || v.Rollback != tc.rollback {
				t.Fatalf("got %+v", v)
			}
		})
	}
}

func TestMeasureDue(t *testing.T) {
	g := &v1alpha1.Gate{SoakSeconds: 60, Analysis: &v1alpha1.GateAnalysis{IntervalSeconds: 10}}
	for _, tc := range []struct {
		name  string
		after time.Duration
		last  *v1alpha1.AnalysisStatus
		due   bool
	}{
		{"during the soak", 30 * time.Second, nil, false},
		{"after the soak, none yet", time.Minute, nil, true},
		{"the last one from the soak", 2 * time.Minute, measured(v1alpha1.AnalysisPassed, 30*time.Second), true},
		{"inconclusive, interval not over", 75 * time.Second, measured(v1alpha1.AnalysisInconclusive, 70*time.Second), false},
		{"inconclusive, interval over", 80 * time.Second, measured(v1alpha1.AnalysisInconclusive, 70*time.Second), true},
		{"a failure is final", time.Hour, measured(v1alpha1.AnalysisFailed, 70*time.Second), false},
		{"a pass is final", time.Hour, measured(v1alpha1.AnalysisPassed, 70*time.Second), false},
	} {
		if got := MeasureDue(g, t0, tc.last, t0.Add(tc.after)); got != tc.due {
			t.Errorf("%s: due %v", tc.name, got)
		}
	}
	if MeasureDue(&v1alpha1.Gate{Approval: true}, t0, nil, t0.Add(time.Hour)) {
		t.Error("a gate without an analysis measures")
	}
}

func TestOf(t *testing.T) {
	replica, step := &v1alpha1.Gate{Approval: true}, &v1alpha1.Gate{SoakSeconds: 1}
	spec := &v1alpha1.PodCliqueSetSpec{UpdateStrategy: v1alpha1.PodCliqueSetUpdateStrategy{Gate: replica,
		RoleUpgrade: &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{{Role: "a"}, {Role: "b", Gate: step}}}}}
	for name, want := range map[string]*v1alpha1.Gate{"replicas-3": replica, "replica-0-step-2": step, "replica-0-step-1": nil,
		"replica-0-step-3": nil, "replicas-x": nil, "replicas-3x": nil, "other": nil} {
		if got := Of(spec, name); got != want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestEvaluate_RequiredConditions(t *testing.T) {
	g := &v1alpha1.Gate{SoakSeconds: 10, Approval: true, RequiredConditions: []v1alpha1.RequiredCondition{
		{Type: "Available", Status: metav1.ConditionTrue}, {Type: "example.com/Verified", Status: metav1.ConditionTrue}}}
	available := metav1.Condition{Type: "Available", Status: metav1.ConditionTrue}
	verified := metav1.Condition{Type: "example.com/Verified", Status: metav1.ConditionFalse}
	for _, tc := range []struct {
		name   string
		after  time.Duration
		conds  []metav1.Condition
		reason v1alpha1.ConditionReason
		says   string
	}{
		{"the soak comes first", time.Second, nil, v1alpha1.ReasonSoaking, "soaks"},
		{"absent", time.Minute, []metav1.Condition{available}, v1alpha1.ReasonAwaitingConditions, "example.com/Verified=True (now absent)"},
		{"not yet", time.Minute, []metav1.Condition{available, verified}, v1alpha1.ReasonAwaitingConditions, "example.com/Verified=True (now False)"},
	} {
		v := Evaluate(Input{Gate: g, Name: "replicas-1", Revision: "v2", ReachedAt: t0, Now: t0.Add(tc.after), Conditions: tc.conds})
		if v.Open || v.Reason != tc.reason || !strings.Contains(v.Message, tc.says) {
			t.Errorf("%s: %+v", tc.name, v)
		}
		if v.Reason == v1alpha1.ReasonAwaitingConditions && v.RecheckIn == 0 {
			t.Errorf("%s: conditions another controller writes are never looked at again", tc.name)
		}
	}
	verified.Status = metav1.ConditionTrue
	v := Evaluate(Input{Gate: g, Name: "replicas-1", Revision: "v2", ReachedAt: t0, Now: t0.Add(time.Minute), Conditions: []metav1.Condition{available, verified}})
	if v.Reason != v1alpha1.ReasonAwaitingApproval {
		t.Errorf("conditions met: %+v, want the approval next", v)
	}
}
