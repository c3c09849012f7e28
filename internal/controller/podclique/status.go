package podclique

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/write"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// maxSelectedToUpdateInList keeps the status bounded.
const maxSelectedToUpdateInList = 100

// updateStatus writes what the observation and the plan say about the clique.
func (r *Reconciler) updateStatus(ctx context.Context, pclq *v1alpha1.PodClique, plan rollout.LevelPlan, t revisionTemplates, now time.Time) error {
	facts := rollout.ChildFacts{
		Kind: rollout.KindClique, Generation: pclq.Generation,
		Replicas: pclq.Spec.Replicas, MinAvailable: pclq.Spec.EffectiveMinAvailable(), Strategy: pclq.Spec.UpdateStrategy,
		UpdateRevision: t.update.hash,
		Selector:       labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodClique: pclq.Name}).String(),
	}
	window := pclq.Status.UpdateProgress.Window()
	return write.Status(ctx, r.Client, pclq, func(pclq *v1alpha1.PodClique) {
		st, w := rollout.ChildStatus(pclq.Status.ChildStatus, window, facts, plan.Status, now)
		progress := &v1alpha1.PodCliqueUpdateProgress{UpdateWindow: *w}
		for _, idx := range plan.Status.SelectedToUpdate {
			if len(progress.PodsSelectedToUpdate) == maxSelectedToUpdateInList {
				break
			}
			progress.PodsSelectedToUpdate = append(progress.PodsSelectedToUpdate, naming.Pod(pclq.Name, int(idx)))
		}
		pclq.Status = v1alpha1.PodCliqueStatus{ChildStatus: st, UpdateProgress: progress}
	})
}
