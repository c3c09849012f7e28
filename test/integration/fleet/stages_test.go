package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// writeGroupDecision writes PlacementDecision number n of the placement as
// the Placement controller writes a slice of decision group name/index.
func (f *fedFleet) writeGroupDecision(n int, name string, index int, clusters ...string) {
	f.t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: f.ns, Name: fmt.Sprintf("%s-decision-%d", fwPlacement, n)}
	labels := map[string]string{fleetv1alpha1.LabelPlacement: fwPlacement,
		fleetv1alpha1.LabelDecisionGroupIndex: fmt.Sprint(index), fleetv1alpha1.LabelDecisionGroupName: name}
	pd := &fleetv1alpha1.PlacementDecision{}
	err := hubEnv.Client.Get(ctx, key, pd)
	switch {
	case apierrors.IsNotFound(err):
		pd.ObjectMeta = metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: labels}
		err = hubEnv.Client.Create(ctx, pd)
	case err == nil:
		pd.Labels = labels
		err = hubEnv.Client.Update(ctx, pd)
	}
	if err != nil {
		f.t.Fatalf("writing %s: %v", key.Name, err)
	}
	pd.Status.Decisions = nil
	for _, c := range clusters {
		pd.Status.Decisions = append(pd.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: c})
	}
	if err := hubEnv.Client.Status().Update(ctx, pd); err != nil {
		f.t.Fatalf("writing the clusters of %s: %v", key.Name, err)
	}
}

// setErrorRatio reports v for the test's namespace and waits until
// Prometheus has scraped it.
func (f *fedFleet) setErrorRatio(v string) {
	f.t.Helper()
	exporter.Set(f.ns, v)
	if err := prom.WaitForSample(f.t.Context(), fmt.Sprintf("test_error_ratio{ns=%q} == %s", f.ns, v)); err != nil {
		f.t.Fatal(err)
	}
}

// The controller walks the stages over the decision groups its
// PlacementDecisions' labels name: the canary group's member rolls alone,
// then the hub measures the stage gate's analysis in a real Prometheus. A bad
// measurement holds the next stage (AnalysisFailed, Stalled) with b never
// started; approving the gate (an annotation, which wakes the controller)
// overrides it, and the rollout completes within the global budget.
func TestFederatedWorkload_StageGateAnalysisHoldsTheNextGroupUntilApproved(t *testing.T) {
	f := newFedFleet(t, "fw-stage", false)
	a, b := f.clusters[0], f.clusters[1]
	f.writeGroupDecision(1, "canary", 0, a)
	f.writeGroupDecision(2, "", 1, b)
	f.createSettledWorkload(10, intstr.FromInt32(2), intstr.FromInt32(1))

	f.setErrorRatio("0.5")
	f.update("staging the rollout", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.RolloutStrategy.Stages = &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup,
			Gate: &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{IntervalSeconds: 1, Prometheus: &v1alpha1.PrometheusAnalysis{
				Address: prom.Address, Query: fmt.Sprintf("max(test_error_ratio{ns=%q})", f.ns), SuccessCondition: "result < 0.1"}}}}
		fw.Spec.Template = deploymentTemplate(newImage)
	})
	eventually(t, fwStepTimeout, a+" (the canary) started", func() (bool, string) {
		f.ack()
		d := readDep(f.deployment(a))
		return d.image == newImage && !d.paused, d.String()
	})
	if d := readDep(f.deployment(b)); d.image == newImage {
		t.Fatalf("%s started with the canary: %v", b, d)
	}
	f.setStatus(a, 5, 5, 5)
	fw := f.waitForCondition("the stage gate's analysis failed", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		f.ack()
		return progressing(fw).Reason == string(v1alpha1.ReasonAnalysisFailed)
	})
	if !meta.IsStatusConditionTrue(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadStalled)) {
		t.Errorf("a failed analysis is not Stalled: %+v", fw.Status.Conditions)
	}
	g := fw.Status.Gate
	if g == nil || g.Name != "stage-canary-0" || g.Analysis == nil || g.Analysis.Phase != v1alpha1.AnalysisFailed || g.Analysis.Value != "0.5" {
		t.Fatalf("gate %+v, want stage-canary-0 failed at 0.5", g)
	}
	if st := fw.Status.Stages; len(st) != 2 || st[0].Phase != fleetv1alpha1.StageAwaitingApproval || st[1].Phase != fleetv1alpha1.StagePending {
		t.Fatalf("stages %+v", st)
	}
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); {
		if d := readDep(f.deployment(b)); d.image == newImage || !d.paused {
			t.Fatalf("%s started behind a failed analysis: %v", b, d)
		}
		time.Sleep(100 * time.Millisecond) // pacing the checks of a negative, not synchronisation
	}

	f.update("approving the gate", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Annotations = map[string]string{v1alpha1.AnnotationApprovedRevision: v1alpha1.ApprovalOf(fw.Status.UpdateRevision, "stage-canary-0")}
	})
	f.rollout(nil)
	fw = f.workload()
	if st := fw.Status.Stages; st[0].Phase != fleetv1alpha1.StageSucceeded || st[1].Phase != fleetv1alpha1.StageSucceeded ||
		fw.Status.Gate != nil || !strings.Contains(progressing(fw).Reason, "RolloutComplete") {
		t.Errorf("at the end: stages %+v, gate %+v, %+v", st, fw.Status.Gate, progressing(fw))
	}
}
