package federatedworkload

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// measure runs the analysis of the stage gate the rollout waits at (as the
// last round reported it in status.gate) when a measurement is due, and
// puts it into fw's status for the round to judge.
func (r *Reconciler) measure(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) {
	w := fw.Status.Gate
	st := fw.Spec.RolloutStrategy.Stages
	if r.Analysis == nil || w == nil || st == nil || st.Gate == nil || w.Reason != v1alpha1.ReasonAnalysisRunning {
		return
	}
	if !gate.MeasureDue(st.Gate, w.ReachedAt.Time, w.Analysis, r.now()) {
		return
	}
	m := r.Analysis.Measure(ctx, st.Gate.Analysis, analysis.State{Kind: "FederatedWorkload", Namespace: fw.Namespace, Name: fw.Name,
		Gate: w.Name, Revision: fw.Status.UpdateRevision, Replicas: fw.Spec.Replicas,
		UpdatedReplicas: fw.Status.UpdatedReplicas, AvailableReplicas: fw.Status.AvailableReplicas})
	ctrl.LoggerFrom(ctx).Info("measured a stage gate's analysis", "gate", w.Name, "phase", m.Phase, "value", m.Value, "message", m.Message)
	w.Analysis = &m
}
