package fleetplan_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// staged is web rolled over a, b and c, one decision group each (the
// placement cuts one cluster per group), a's group named canary:
// ProgressivePerGroup, canary first, an approval gate after each stage.
func staged(deadline time.Duration) fleetplan.Input {
	to := web("web:2", 6)
	to.Spec.RolloutStrategy.Stages = &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup,
		MandatoryDecisionGroups: []fleetv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}},
		MinSuccessTime:          metav1.Duration{Duration: 2 * time.Second}, ProgressDeadline: metav1.Duration{Duration: deadline},
		Gate: &v1alpha1.Gate{Approval: true}}
	one := intOrString(1)
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: fleetv1alpha1.PlacementSpec{DecisionStrategy: fleetv1alpha1.DecisionStrategy{GroupStrategy: fleetv1alpha1.GroupStrategy{
			DecisionGroups: []fleetv1alpha1.DecisionGroup{{GroupName: "canary",
				GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"n": "a"}}}},
			ClustersPerDecisionGroup: &one}}}}
	return fleetplan.Input{From: web("web:1", 6), Workload: to, Clusters: clusters("a", "b", "c"), Placement: pl,
		Sets:     []fleetv1alpha1.MemberClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "all"}}},
		Bindings: []fleetv1alpha1.MemberClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "all"}, Spec: fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: "all"}}},
		Kind:     member.Deployment, Startup: time.Second}
}

// Without approvals the plan holds at the canary's gate, by design; each
// approval lets the next stage roll, and with both the rollout completes
// stage by stage, within the budget.
func TestRun_StagesHoldAtTheirGateUntilApproved(t *testing.T) {
	in := staged(0)
	res, out := text(t, in)
	if res.Done || !res.Held || !strings.Contains(out, "canary-0 AwaitingApproval, group-1 Pending, group-2 Pending") ||
		!strings.Contains(out, "Result: Stuck after") || !strings.Contains(out, "held by design: AwaitingApproval: gate stage-canary-0") {
		t.Fatalf("unapproved:\n%s", out)
	}
	in.Approve = map[string]time.Duration{"stage-canary-0": 10 * time.Second, "stage-group-1": 0}
	res, out = text(t, in)
	if !res.Done || res.Held || len(res.Breaches) > 0 {
		t.Fatalf("approved:\n%s", out)
	}
	for _, s := range res.Status.Stages {
		if s.Phase != fleetv1alpha1.StageSucceeded {
			t.Errorf("stage %s %s at the end", s.Name, s.Phase)
		}
	}
	// b starts only after the canary's approval (wave 11, at 10 s)
	for i, w := range res.Waves[:10] {
		if m := w.Members[1]; m.Updated > 0 || m.Grant.Started {
			t.Fatalf("wave %d: b started before the canary's gate was approved:\n%s", i+1, out)
		}
	}
}

// A cluster whose new pods never start fails its stage past
// progressDeadline; with maxFailures 0 the rollout halts and c never starts.
func TestRun_AFailingClusterHaltsTheStages(t *testing.T) {
	in := staged(5 * time.Second)
	in.Approve = map[string]time.Duration{"stage-canary-0": 0}
	in.Fail = map[string]int{"b": 1}
	res, out := text(t, in)
	if res.Done || !res.Halted || !strings.Contains(out, "group-1 Failed (failed: b)") ||
		!strings.Contains(out, "Result: Halted after") || !strings.Contains(out, "MaxFailuresExceeded") {
		t.Fatalf("halted:\n%s", out)
	}
	for _, w := range res.Waves {
		if w.Members[2].Updated > 0 {
			t.Fatalf("c started after the halt:\n%s", out)
		}
	}
}

func intOrString(n int32) intstr.IntOrString { return intstr.FromInt32(n) }

// A stage gate's analysis takes the result --analysis scripts for it: a pass
// opens it, a failure holds the next stage (AnalysisFailed), and without a
// result the plan stays at the gate.
func TestRun_AStageGatesAnalysisTakesItsScriptedResult(t *testing.T) {
	in := staged(0)
	in.Workload.Spec.RolloutStrategy.Stages.Gate = &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{
		Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://prometheus:9090", Query: "up", SuccessCondition: "result > 0"}}}
	res, out := text(t, in)
	if res.Done || !strings.Contains(out, "Result: Stuck after") || !strings.Contains(out, "AnalysisRunning") {
		t.Fatalf("no result:\n%s", out)
	}
	in.Analyses = []gate.Scripted{{Gate: "stage-canary-0", Phase: v1alpha1.AnalysisFailed}}
	res, out = text(t, in)
	if res.Done || !strings.Contains(out, "at a stage gate: AnalysisFailed") {
		t.Fatalf("a failure:\n%s", out)
	}
	for _, w := range res.Waves {
		if w.Members[1].Updated > 0 {
			t.Fatalf("b started behind a failed analysis:\n%s", out)
		}
	}
	in.Analyses = []gate.Scripted{{Gate: "stage-canary-0", Phase: v1alpha1.AnalysisPassed, At: 20 * time.Second},
		{Gate: "stage-group-1", Phase: v1alpha1.AnalysisPassed}}
	if res, out = text(t, in); !res.Done {
		t.Fatalf("passes:\n%s", out)
	}
}
