package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// imagesByReplica counts, per PodCliqueSet replica, the pods running image.
func imagesByReplica(t *testing.T, ns, image string) map[string]int {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image {
			out[p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex]]++
		}
	}
	return out
}

// An approval gate after each replica: replica 0 rolls, the rollout then
// waits at replicas-1 (AwaitingApproval, an Event, nothing of replica 1
// touched) however long, and only the approval of that gate for that
// revision lets replica 1 go.
func TestPodCliqueSet_ApprovalGateHoldsAfterReplicaZeroUntilApproved(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true}
		setEngineImage("lockstep-examples/llm-engine:v2")(s)
	})
	const v2 = "lockstep-examples/llm-engine:v2"
	var gate *v1alpha1.GateStatus
	waitFor(t, "the rollout to wait at the gate after replica 0", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing")
		if up := pcs.Status.UpdateProgress; up != nil {
			gate = up.Gate
		}
		// the status counts a replica updated once its children say so, which
		// may be a pass after the pods brought the rollout to the gate
		return c != nil && c.Reason == string(v1alpha1.ReasonAwaitingApproval) && gate != nil && pcs.Status.UpdatedReplicas == 1,
			fmt.Sprintf("%+v", pcs.Status)
	})
	if gate.Name != "replicas-1" {
		t.Fatalf("waiting at %+v, want replicas-1", gate)
	}
	if r := apimeta.FindStatusCondition(pcs.Status.Conditions, "Reconciling"); r == nil || r.Status != "False" {
		t.Errorf("awaiting approval is held by design, Reconciling %+v", r)
	}
	assertEvent(t, ns, "GateWaiting", "replicas-1")
	// Nothing of replica 1 moves while the gate is closed, whatever else is
	// approved: another gate, or this gate of another revision.
	for _, wrong := range []string{v1alpha1.ApprovalOf(pcs.Status.UpdateRevision, "replicas-2"), v1alpha1.ApprovalOf("disagg-old", "replicas-1")} {
		setAnnotation(t, pcs, v1alpha1.AnnotationApprovedRevision, wrong)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if n := imagesByReplica(t, ns, v2)["1"]; n != 0 {
				t.Fatalf("approval %q: replica 1 has %d pods on v2 behind a closed gate", wrong, n)
			}
			time.Sleep(200 * time.Millisecond) // sampling a state that must not change, not waiting for one
		}
	}
	setAnnotation(t, pcs, v1alpha1.AnnotationApprovedRevision, v1alpha1.ApprovalOf(pcs.Status.UpdateRevision, gate.Name))
	waitFor(t, "the rollout to complete after the approval", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing")
		return pcs.Status.UpdatedReplicas == 2 && c != nil && c.Reason == string(v1alpha1.ReasonRolloutComplete), fmt.Sprintf("%+v", pcs.Status)
	})
	if up := pcs.Status.UpdateProgress; up == nil || up.Gate != nil || up.ReplicaGatesPassed != 1 {
		t.Errorf("after the rollout: progress %+v, want no gate and replicas-1 passed", up)
	}
	assertEvent(t, ns, "GatePassed", "replicas-1")
}

// prom is a real Prometheus scraping exporter; the operator may query it.
var prom *testenv.Prometheus

// exporter is the target whose test_error_ratio series the tests move.
var exporter testenv.Exporter

// analysisGate measures the namespace's error ratio: it passes under 0.1.
func analysisGate(ns string, onFailure v1alpha1.GateFailurePolicy) *v1alpha1.Gate {
	return &v1alpha1.Gate{OnFailure: onFailure, Analysis: &v1alpha1.GateAnalysis{IntervalSeconds: 1, Prometheus: &v1alpha1.PrometheusAnalysis{
		Address: prom.Address, Query: fmt.Sprintf("max(test_error_ratio{ns=%q})", ns), SuccessCondition: "result < 0.1"}}}
}

// setErrorRatio reports v for ns and waits until Prometheus has scraped it.
func setErrorRatio(t *testing.T, ns, v string) {
	t.Helper()
	exporter.Set(ns, v)
	if err := prom.WaitForSample(t.Context(), fmt.Sprintf("test_error_ratio{ns=%q} == %s", ns, v)); err != nil {
		t.Fatal(err)
	}
}

func progressingReason(pcs *v1alpha1.PodCliqueSet) string {
	if c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing"); c != nil {
		return c.Reason
	}
	return ""
}

// An analysis gate whose query is bad when replica 0 is done rolls the
// PodCliqueSet back by itself: replica 1 never moves, replica 0 comes back to
// the old image, and the rollout back completes.
func TestPodCliqueSet_FailedAnalysisRollsBack(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	oldRevision := pcs.Status.UpdateRevision
	setErrorRatio(t, ns, "0.01")
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.Gate = analysisGate(ns, v1alpha1.GateFailureRollback)
		setEngineImage("lockstep-examples/llm-engine:v2")(s)
	})
	setErrorRatio(t, ns, "0.5") // the new version turns bad
	assertEvent(t, ns, "AnalysisRollback", "replicas-1: the analysis failed")
	waitFor(t, "the rollback to complete", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.UpdateRevision == oldRevision && pcs.Status.CurrentRevision == oldRevision && pcs.Status.UpdatedReplicas == 2 &&
			progressingReason(pcs) == string(v1alpha1.ReasonRolloutComplete), fmt.Sprintf("%+v", pcs.Status)
	})
	if n := imagesByReplica(t, ns, "lockstep-examples/llm-engine:v2"); len(n) != 0 {
		t.Errorf("pods still on v2 after the rollback: %v", n)
	}
	if img := pcs.Spec.Template.Cliques[1].Template.Spec.Containers[0].Image; img != "lockstep-examples/llm-engine:v1" {
		t.Errorf("the spec after the rollback asks for %s", img)
	}
}

// With onFailure Pause a failed analysis holds the rollout (Progressing False
// AnalysisFailed, Stalled True) and measures no more; approving the gate
// overrides the failure. A passing analysis opens the gate by itself.
func TestPodCliqueSet_AnalysisGatePausesOnFailureAndOpensOnAPass(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	setErrorRatio(t, ns, "0.5")
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.Gate = analysisGate(ns, v1alpha1.GateFailurePause)
		setEngineImage("lockstep-examples/llm-engine:v2")(s)
	})
	waitFor(t, "the analysis to fail", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing")
		return c != nil && c.Reason == string(v1alpha1.ReasonAnalysisFailed) && c.Status == "False", fmt.Sprintf("%+v", pcs.Status)
	})
	if s := apimeta.FindStatusCondition(pcs.Status.Conditions, "Stalled"); s == nil || s.Status != "True" {
		t.Errorf("a failed analysis is not Stalled: %+v", s)
	}
	g := pcs.Status.UpdateProgress.Gate
	if g == nil || g.Analysis == nil || g.Analysis.Phase != v1alpha1.AnalysisFailed || g.Analysis.Value != "0.5" {
		t.Fatalf("gate status %+v, want the failed measurement 0.5", g)
	}
	if n := imagesByReplica(t, ns, "lockstep-examples/llm-engine:v2")["1"]; n != 0 {
		t.Fatalf("replica 1 has %d pods on v2 behind a failed analysis", n)
	}
	setAnnotation(t, pcs, v1alpha1.AnnotationApprovedRevision, v1alpha1.ApprovalOf(pcs.Status.UpdateRevision, g.Name))
	waitFor(t, "the approved rollout to complete", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.UpdatedReplicas == 2 && progressingReason(pcs) == string(v1alpha1.ReasonRolloutComplete), fmt.Sprintf("%+v", pcs.Status)
	})

	// the next rollout measures a healthy version and goes on by itself
	setErrorRatio(t, ns, "0.01")
	updatePCS(t, pcs, setEngineImage("lockstep-examples/llm-engine:v3"))
	waitFor(t, "the rollout past a passing analysis", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.UpdatedReplicas == 2 && progressingReason(pcs) == string(v1alpha1.ReasonRolloutComplete) &&
			imagesByReplica(t, ns, "lockstep-examples/llm-engine:v3")["1"] > 0, fmt.Sprintf("%+v", pcs.Status)
	})
	assertEvent(t, ns, "GatePassed", "replicas-1")
}

// A gate that requires a condition another controller writes on the
// PodCliqueSet: the rollout waits after replica 0 until it is there, and the
// operator keeps the condition in every status it writes.
func TestPodCliqueSet_RequiredConditionWrittenByAnotherController(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	const verified = "example.com/Verified"
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.Gate = &v1alpha1.Gate{RequiredConditions: []v1alpha1.RequiredCondition{{Type: verified, Status: metav1.ConditionTrue}}}
		setEngineImage("lockstep-examples/llm-engine:v2")(s)
	})
	waitFor(t, "the rollout to wait for the condition", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return progressingReason(pcs) == string(v1alpha1.ReasonAwaitingConditions) && pcs.Status.UpdatedReplicas == 1, fmt.Sprintf("%+v", pcs.Status)
	})
	if n := imagesByReplica(t, ns, "lockstep-examples/llm-engine:v2")["1"]; n != 0 {
		t.Fatalf("replica 1 has %d pods on v2 before the condition", n)
	}
	// the other controller's verdict
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs); err != nil {
			return err
		}
		apimeta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{Type: verified, Status: metav1.ConditionTrue, Reason: "Checked", Message: "by the test"})
		return env.Client.Status().Update(ctx, pcs)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rollout to complete once the condition holds", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.UpdatedReplicas == 2 && progressingReason(pcs) == string(v1alpha1.ReasonRolloutComplete), fmt.Sprintf("%+v", pcs.Status)
	})
	if c := apimeta.FindStatusCondition(pcs.Status.Conditions, verified); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the operator dropped or changed the other controller's condition: %+v", c)
	}
}
