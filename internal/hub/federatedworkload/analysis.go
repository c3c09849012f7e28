package federatedworkload

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// measured is fw with a measurement of the stage gate the rollout waits at
// (as the last round reported it in status.gate) when one is due, for the
// round to judge; fw itself when none is. fw is left as read: it is the base
// the status is written against.
func (r *Reconciler) measured(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) *fleetv1alpha1.FederatedWorkload {
	w := fw.Status.Gate
	st := fw.Spec.RolloutStrategy.Stages
	if r.Analysis == nil || w == nil || st == nil || st.Gate == nil || w.Reason != v1alpha1.ReasonAnalysisRunning {
		return fw
	}
	if !gate.MeasureDue(st.Gate, w.ReachedAt.Time, w.Analysis, r.now()) {
		return fw
	}
	m := r.Analysis.Measure(ctx, st.Gate.Analysis, analysis.State{Kind: "FederatedWorkload", Namespace: fw.Namespace, Name: fw.Name,
		Gate: w.Name, Revision: fw.Status.UpdateRevision, Replicas: fw.Spec.Replicas,
		UpdatedReplicas: fw.Status.UpdatedReplicas, AvailableReplicas: fw.Status.AvailableReplicas})
	ctrl.LoggerFrom(ctx).Info("measured a stage gate's analysis", "gate", w.Name, "phase", m.Phase, "value", m.Value, "message", m.Message)
	out := fw.DeepCopy()
	out.Status.Gate.Analysis = &m
	return out
}
