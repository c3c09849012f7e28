package podcliqueset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// measure runs the analysis of the gate the rollout to updateRevision waits
// at, when a measurement is due (gate.MeasureDue); nil when none is.
func (r *Reconciler) measure(ctx context.Context, pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec, updateRevision string, now time.Time) *rollout.GateMeasurement {
	up := pcs.Status.UpdateProgress
	if r.Analysis == nil || up == nil || up.Gate == nil || up.Gate.Reason != v1alpha1.ReasonAnalysisRunning || pcs.Status.UpdateRevision != updateRevision {
		return nil
	}
	w := up.Gate
	g := gate.Of(spec, w.Name)
	if !gate.MeasureDue(g, w.ReachedAt.Time, w.Analysis, now) {
		return nil
	}
	st := r.Analysis.Measure(ctx, g.Analysis, analysis.State{Kind: "PodCliqueSet", Namespace: pcs.Namespace, Name: pcs.Name, Gate: w.Name,
		Revision: updateRevision, Replicas: spec.DesiredReplicas(), UpdatedReplicas: pcs.Status.UpdatedReplicas, AvailableReplicas: pcs.Status.AvailableReplicas})
	log.FromContext(ctx).Info("measured a gate's analysis", "gate", w.Name, "phase", st.Phase, "value", st.Value, "message", st.Message)
	return &rollout.GateMeasurement{Gate: w.Name, Status: st}
}

// requestRollback asks for the rollback a failed analysis calls for: the
// annotation lockstep.dev/rollback-to names the revision the rollout came
// from, and the next pass rolls back to it as for a user's request.
func (r *Reconciler) requestRollback(ctx context.Context, pcs *v1alpha1.PodCliqueSet, plan rollout.SetPlan) error {
	to := plan.Status.CurrentRevision
	if pcs.Annotations[v1alpha1.AnnotationRollbackTo] == to {
		return nil
	}
	patch := client.MergeFrom(pcs.DeepCopy())
	if pcs.Annotations == nil {
		pcs.Annotations = map[string]string{}
	}
	pcs.Annotations[v1alpha1.AnnotationRollbackTo] = to
	if err := r.Client.Patch(ctx, pcs, patch); err != nil {
		return fmt.Errorf("asking PodCliqueSet %s to roll back after a failed analysis: %w", pcs.Name, err)
	}
	gateName := ""
	if g := plan.Status.Progress.Gate; g != nil {
		gateName = g.Name
	}
	r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "AnalysisRollback", "Rollback",
		"Gate %s: the analysis failed; rolling back to revision %s", gateName, to)
	return nil
}
