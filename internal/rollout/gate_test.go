package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var v1v2 = Revisions{Current: setRevision("v1"), Update: setRevision("v2")}

// firstDone observes replicas of spec at v1 except the first n, which run v2
// and are available: their update is done.
func firstDone(spec *v1alpha1.PodCliqueSetSpec, n int) []ReplicaObservation {
	obs := steadyReplicas(spec, "v1")
	copy(obs, steadyReplicas(spec, "v2")[:n])
	return obs
}

// gated is threeRoles with 3 replicas and g after each.
func gated(g v1alpha1.Gate) *v1alpha1.PodCliqueSetSpec {
	return threeRoles(3, func(s *v1alpha1.PodCliqueSetSpec) { s.UpdateStrategy.Gate = &g })
}

func TestReplicaGate_ApprovalHoldsTheNextReplicaUntilItsCheckpointIsApproved(t *testing.T) {
	spec := gated(v1alpha1.Gate{Approval: true})
	// the first replica starts at once: there is no checkpoint before it
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: steadyReplicas(spec, "v1")})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{0}) || plan.Status.Progress.Gate != nil {
		t.Fatalf("at the start: updating %v, gate %+v; want replica 0 and no gate", got, plan.Status.Progress.Gate)
	}
	prev := Progress{UpdateRevision: "v2", UpdateStartedAt: epoch, UpdatingReplicas: []ReplicaProgress{{Index: 0, StartedAt: epoch}}}
	for _, approved := range []string{"", "v2@replicas-2", "v1@replicas-1"} {
		plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: prev, Approved: approved})
		if got := updatingIndices(plan); len(got) != 0 {
			t.Fatalf("approved %q: updating %v, want none", approved, got)
		}
		if g := plan.Status.Progress.Gate; g == nil || g.Name != "replicas-1" || g.Reason != v1alpha1.ReasonAwaitingApproval || !g.ReachedAt.Equal(epoch) {
			t.Fatalf("approved %q: gate %+v, want replicas-1 awaiting approval since now", approved, g)
		}
		if got := capString(targetOf(plan, 1, "frontend")); got != "frontend@v2 cap 0" {
			t.Fatalf("approved %q: replica 1 frontend %s, want held at cap 0", approved, got)
		}
		c := condition(plan, v1alpha1.ConditionProgressing)
		if c.Reason != v1alpha1.ReasonAwaitingApproval || !strings.Contains(c.Message, "v2@replicas-1") {
			t.Fatalf("approved %q: progressing %+v", approved, c)
		}
		if r := condition(plan, v1alpha1.ConditionReconciling); r.Status != "False" {
			t.Fatalf("approved %q: awaiting approval is held by design, reconciling %+v", approved, r)
		}
	}
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: prev, Approved: "v2@replicas-1"})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{1}) {
		t.Fatalf("approved: updating %v, want [1]", got)
	}
	if p := plan.Status.Progress; p.Gate != nil || p.ReplicaGatesPassed != 1 {
		t.Fatalf("approved: gate %+v passed %d, want none and 1", p.Gate, p.ReplicaGatesPassed)
	}
	// A passed checkpoint stays passed in this rollout, approval gone or not...
	passed := Progress{UpdateRevision: "v2", UpdateStartedAt: epoch, ReplicaGatesPassed: 1}
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: passed})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{1}) {
		t.Fatalf("checkpoint passed before: updating %v, want [1]", got)
	}
	// ...but not in the next one.
	passed.UpdateRevision = "v1"
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: passed})
	if got := updatingIndices(plan); len(got) != 0 {
		t.Fatalf("a checkpoint passed in another rollout opened this one: updating %v", got)
	}
	// the next checkpoint closes again
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 2), Previous: Progress{UpdateRevision: "v2", ReplicaGatesPassed: 1},
		Approved: "v2@replicas-1"})
	if g := plan.Status.Progress.Gate; g == nil || g.Name != "replicas-2" || len(updatingIndices(plan)) != 0 {
		t.Fatalf("after two replicas: gate %+v updating %v, want replicas-2 and nothing", g, updatingIndices(plan))
	}
	// no checkpoint after the last replica: the rollout completes
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 3), Previous: Progress{UpdateRevision: "v2", ReplicaGatesPassed: 2}})
	if !plan.Status.Complete || plan.Status.Progress.Gate != nil {
		t.Fatalf("all done: complete %v gate %+v", plan.Status.Complete, plan.Status.Progress.Gate)
	}
}

func TestReplicaGate_NeverStopsAReplicaHalfWay(t *testing.T) {
	spec := gated(v1alpha1.Gate{Approval: true})
	obs := firstDone(spec, 1)
	obs[1].Cliques[0].Pods[0].Revision = "frontend@v2" // replica 1 began; the progress saying so was lost
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: obs})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{1}) || plan.Status.Progress.Gate != nil {
		t.Fatalf("updating %v gate %+v, want replica 1 to go on", got, plan.Status.Progress.Gate)
	}
}

func TestReplicaGate_SoakCountsFromTheCheckpointAndStopsTheDeadlineClock(t *testing.T) {
	spec := gated(v1alpha1.Gate{SoakSeconds: 60})
	spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	reached := epoch.Add(-30 * time.Second)
	prev := Progress{UpdateRevision: "v2", UpdateStartedAt: epoch.Add(-time.Hour), LastProgressAt: epoch.Add(-time.Hour),
		Gate: &GateWait{Name: "replicas-1", Reason: v1alpha1.ReasonSoaking, ReachedAt: reached}}
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: prev})
	if got := updatingIndices(plan); len(got) != 0 {
		t.Fatalf("soaking: updating %v", got)
	}
	if g := plan.Status.Progress.Gate; g == nil || g.Reason != v1alpha1.ReasonSoaking || !g.ReachedAt.Equal(reached) {
		t.Fatalf("gate %+v, want soaking since %s", g, reached)
	}
	if plan.Status.GateRecheckIn != 30*time.Second {
		t.Fatalf("recheck in %s, want 30s", plan.Status.GateRecheckIn)
	}
	// the clock stands at the gate, and starts again when the rollout goes on
	if plan.Status.DeadlineExceeded || !plan.Status.Progress.LastProgressAt.Equal(prev.LastProgressAt) {
		t.Fatalf("a soak counted against the deadline: exceeded %v, last progress %s", plan.Status.DeadlineExceeded, plan.Status.Progress.LastProgressAt)
	}
	if r := condition(plan, v1alpha1.ConditionReconciling); r.Status != "True" {
		t.Fatalf("a soak ends by itself: reconciling %+v", r)
	}
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: prev, Now: epoch.Add(30 * time.Second)})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{1}) {
		t.Fatalf("soaked: updating %v, want [1]", got)
	}
	if at := plan.Status.Progress.LastProgressAt; !at.Equal(epoch.Add(30 * time.Second)) {
		t.Fatalf("soaked: last progress %s, want the clock restarted as the rollout goes on", at)
	}
}

func TestReplicaGate_PausedWinsOverAGate(t *testing.T) {
	spec := gated(v1alpha1.Gate{Approval: true})
	spec.Paused = true
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: Progress{UpdateRevision: "v2"}})
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonPaused || plan.Status.Progress.Gate != nil {
		t.Fatalf("progressing %+v gate %+v, want Paused and no gate", c, plan.Status.Progress.Gate)
	}
}

func TestReplicaGate_ReplicaRecreateStartsNoRecreationPastAClosedGate(t *testing.T) {
	spec := threeRoles(3, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.ReplicaRecreateStrategyType, Gate: &v1alpha1.Gate{Approval: true}}
	})
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: Progress{UpdateRevision: "v2"}})
	if len(plan.Deletes) != 0 || len(plan.Creates) != 0 {
		t.Fatalf("closed gate: deletes %v creates %v", plan.Deletes, plan.Creates)
	}
	if g := plan.Status.Progress.Gate; g == nil || g.Name != "replicas-1" {
		t.Fatalf("gate %+v, want replicas-1", g)
	}
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: Progress{UpdateRevision: "v2"}, Approved: "v2@replicas-1"})
	if len(plan.Deletes) != 1 || plan.Deletes[0].Index != 1 {
		t.Fatalf("approved: deletes %v, want replica 1", plan.Deletes)
	}
}

func TestRoleStepGate_HoldsTheNextStepOfTheReplica(t *testing.T) {
	spec := threeRoles(2, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
			{Role: "decode", UpdateTo: intstr.FromInt32(1), Gate: &v1alpha1.Gate{Approval: true}},
			{Role: "prefill", UpdateTo: intstr.FromString("100%")},
		}}
	})
	obs := steadyReplicas(spec, "v1")
	obs[0].Groups[0].Replicas[0].Revision = "decode@v2"
	obs[0].Groups[0].Replicas[0].Cliques[0].Pods[0].Revision = "decode-leader@v2"
	prev := Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 0, StartedAt: epoch, RoleStep: &RoleStepStatus{Index: 0}}}}
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: obs, Previous: prev})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 0" {
		t.Fatalf("gate closed: prefill %s, want cap 0", got)
	}
	if g := plan.Status.Progress.Gate; g == nil || g.Name != "replica-0-step-1" || g.Reason != v1alpha1.ReasonAwaitingApproval {
		t.Fatalf("gate %+v, want replica-0-step-1 awaiting approval", g)
	}
	if st := plan.Replicas[0].RoleStep; st == nil || st.Index != 0 {
		t.Fatalf("role step %+v, want still step 0", st)
	}
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: obs, Previous: prev, Approved: "v2@replica-0-step-1"})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 3" {
		t.Fatalf("approved: prefill %s, want cap 3", got)
	}
	if st := plan.Replicas[0].RoleStep; st == nil || st.Index != 1 || plan.Status.Progress.Gate != nil {
		t.Fatalf("approved: role step %+v gate %+v, want step 1 and no gate", st, plan.Status.Progress.Gate)
	}
	// the passed step is kept in the progress: the approval may go
	plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: obs, Previous: plan.Status.Progress})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 3" {
		t.Fatalf("after the approval went: prefill %s, want cap 3", got)
	}
}

func TestReplicaGate_AnalysisFailureRollsBackOrHolds(t *testing.T) {
	a := &v1alpha1.GateAnalysis{Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://p:9090", Query: "q", SuccessCondition: "result < 1"}}
	failed := &GateMeasurement{Gate: "replicas-1", Status: v1alpha1.AnalysisStatus{Phase: v1alpha1.AnalysisFailed, Value: "3",
		Message: "result[0] = 3, want < 1", MeasuredAt: metav1.NewTime(epoch)}}
	for _, policy := range []v1alpha1.GateFailurePolicy{v1alpha1.GateFailurePause, v1alpha1.GateFailureRollback} {
		spec := gated(v1alpha1.Gate{Analysis: a, OnFailure: policy})
		prev := Progress{UpdateRevision: "v2", Gate: &GateWait{Name: "replicas-1", Reason: v1alpha1.ReasonAnalysisRunning, ReachedAt: epoch.Add(-time.Minute)}}
		// waiting for the first measurement
		plan := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: prev})
		if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonAnalysisRunning || plan.Status.GateRecheckIn == 0 {
			t.Fatalf("%s, unmeasured: progressing %+v, recheck in %s", policy, c, plan.Status.GateRecheckIn)
		}
		plan = planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: prev, Measured: failed})
		c := condition(plan, v1alpha1.ConditionProgressing)
		if c.Reason != v1alpha1.ReasonAnalysisFailed || c.Status != "False" || !strings.Contains(c.Message, "result[0] = 3") {
			t.Fatalf("%s: progressing %+v", policy, c)
		}
		if s := condition(plan, v1alpha1.ConditionStalled); s.Status != "True" {
			t.Errorf("%s: stalled %+v", policy, s)
		}
		if got := updatingIndices(plan); len(got) != 0 {
			t.Errorf("%s: updating %v past a failed analysis", policy, got)
		}
		if plan.Status.Rollback != (policy == v1alpha1.GateFailureRollback) {
			t.Errorf("%s: rollback %v", policy, plan.Status.Rollback)
		}
		if g := plan.Status.Progress.Gate; g == nil || g.Analysis == nil || g.Analysis.Value != "3" {
			t.Errorf("%s: the measurement is not kept: %+v", policy, g)
		}
		// the kept measurement still holds on the next pass
		again := planSet(t, SetInput{Spec: spec, Revisions: v1v2, Replicas: firstDone(spec, 1), Previous: plan.Status.Progress})
		if c := condition(again, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonAnalysisFailed {
			t.Errorf("%s: next pass %+v", policy, c)
		}
	}
}

func TestGates_ARolloutBackToTheCurrentRevisionPassesEveryGate(t *testing.T) {
	spec := gated(v1alpha1.Gate{Approval: true})
	// v2 is in replica 0; the spec went back to v1 (a rollback): replica 0 returns at once
	obs := steadyReplicas(spec, "v1")
	copy(obs, steadyReplicas(spec, "v2")[:1])
	v1 := Revisions{Current: setRevision("v1"), Update: setRevision("v1")}
	plan := planSet(t, SetInput{Spec: spec, Revisions: v1, Replicas: obs, Previous: Progress{UpdateRevision: "v1"}})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{0}) || plan.Status.Progress.Gate != nil {
		t.Fatalf("rolling back: updating %v gate %+v, want replica 0 and no gate", got, plan.Status.Progress.Gate)
	}
}
