package simulate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// drawGated draws a rollout whose spec has a gate after each PodCliqueSet
// replica (RollingUpdate or ReplicaRecreate; an OnDelete draw becomes
// RollingUpdate).
func drawGated(t *rapid.T) (Scenario, *v1alpha1.Gate) {
	spec := drawSpec(t)
	if spec.UpdateStrategy.Type == v1alpha1.OnDeleteStrategyType {
		spec.UpdateStrategy.Type = v1alpha1.RollingUpdateStrategyType
		spec.UpdateStrategy.RollingUpdate = nil
	}
	g := &v1alpha1.Gate{Approval: rapid.Bool().Draw(t, "approval")}
	if !g.Approval || rapid.Bool().Draw(t, "soak too") {
		g.SoakSeconds = int32(rapid.IntRange(1, 300).Draw(t, "soak s"))
	}
	spec.UpdateStrategy.Gate = g
	sc := drawRollout(t, spec)
	sc.MaxSteps = 4000
	return sc, g
}

// No PodCliqueSet replica starts past a closed gate: approvals come at random
// times for random checkpoints, and the checker counts the replicas started
// against them and the time between starts against the soak.
func TestGates_NoReplicaStartsPastAClosedGate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc, g := drawGated(t)
		replicas := int(*sc.To.Replicas)
		for range rapid.IntRange(0, 3).Draw(t, "approvals") {
			sc.Approvals = append(sc.Approvals, Approval{At: time.Duration(rapid.IntRange(0, 900).Draw(t, "approval at s")) * time.Second,
				Gate: fmt.Sprintf("replicas-%d", rapid.IntRange(1, max(replicas, 1)).Draw(t, "approved checkpoint"))})
		}
		res := Run(sc)
		switch {
		case res.Outcome.Kind == Violation:
			t.Fatalf("violation: %s\n%s", res.Outcome.Reason, strings.Join(lines(res, all), "\n"))
		case res.Outcome.Kind == Stuck && !g.Approval:
			t.Fatalf("a soak alone never holds a rollout for good: %s", res.Outcome.Reason)
		case res.Outcome.Kind == Stuck && !strings.HasPrefix(res.Outcome.Reason, string(v1alpha1.ReasonAwaitingApproval)):
			t.Fatalf("stuck, but not at a gate: %s", res.Outcome.Reason)
		}
	})
}

// Approving each checkpoint in turn, once it is reached, completes the
// rollout.
func TestGates_ApprovedInTurnTheRolloutCompletes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc, _ := drawGated(t)
		sc.To.UpdateStrategy.Gate.Approval = true
		for n := 1; n < int(*sc.To.Replicas); n++ {
			// a replica takes minutes at most here: each approval comes after its checkpoint
			sc.Approvals = append(sc.Approvals, Approval{At: time.Duration(n) * time.Hour, Gate: fmt.Sprintf("replicas-%d", n)})
		}
		res := Run(sc)
		if res.Outcome.Kind != Complete {
			t.Fatalf("outcome %s: %s\n%s", res.Outcome.Kind, res.Outcome.Reason, strings.Join(lines(res, all), "\n"))
		}
	})
}

// An analysis gate after each replica, given scripted results at random
// times: no replica starts past a checkpoint whose analysis has not passed
// (the checker counts passes); with every result a pass the rollout
// completes; a failure at a checkpoint it stops at holds it (onFailure Pause: Stuck AnalysisFailed) or
// rolls it back to the revision it came from (Rollback: Complete, rolled
// back), every budget invariant checked on the way.
func TestGates_ScriptedAnalysesOpenHoldOrRollBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc, _ := drawGated(t)
		policy := rapid.SampledFrom([]v1alpha1.GateFailurePolicy{v1alpha1.GateFailurePause, v1alpha1.GateFailureRollback}).Draw(t, "onFailure")
		sc.To.UpdateStrategy.Gate = &v1alpha1.Gate{OnFailure: policy, Analysis: &v1alpha1.GateAnalysis{
			Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://prometheus:9090", Query: "up", SuccessCondition: "result > 0"}}}
		fails := map[string]bool{}
		for n := 1; n < int(*sc.To.Replicas); n++ {
			phase := v1alpha1.AnalysisPassed
			if rapid.IntRange(0, 3).Draw(t, "fails") == 0 {
				phase = v1alpha1.AnalysisFailed
				fails[fmt.Sprintf("replicas-%d", n)] = true
			}
			sc.Analyses = append(sc.Analyses, gate.Scripted{At: time.Duration(rapid.IntRange(0, 7200).Draw(t, "measured at s")) * time.Second,
				Gate: fmt.Sprintf("replicas-%d", n), Phase: phase})
		}
		// a checkpoint the rollout never waits at (a partition, a wide
		// wave) takes no result: count the failures measured
		failed := false
		sc.OnPlan = func(in rollout.SetInput, _ rollout.TreePlan) {
			if m := in.Measured; m != nil && m.Status.Phase == v1alpha1.AnalysisFailed {
				if !fails[m.Gate] {
					t.Fatalf("a failure measured for %s, scripted to pass", m.Gate)
				}
				failed = true
			}
		}
		res := Run(sc)
		out := res.Outcome
		switch {
		case out.Kind == Violation:
			t.Fatalf("violation: %s\n%s", out.Reason, strings.Join(lines(res, all), "\n"))
		case out.Kind == Stuck && (!failed || policy != v1alpha1.GateFailurePause || !strings.HasPrefix(out.Reason, string(v1alpha1.ReasonAnalysisFailed))):
			t.Fatalf("stuck: %s", out.Reason)
		case out.Kind == Complete && out.RolledBack != (failed && policy == v1alpha1.GateFailureRollback):
			t.Fatalf("complete, rolled back %v, with a failure %v under %s", out.RolledBack, failed, policy)
		}
	})
}
