package podclique

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/write"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// updateStatus writes what the plan says about the clique's pods.
func (r *Reconciler) updateStatus(ctx context.Context, pclq *v1alpha1.PodClique, plan rollout.LevelPlan, t revisionTemplates, now time.Time) error {
	facts := rollout.ChildFacts{
		Kind: rollout.KindClique, Name: pclq.Name, Generation: pclq.Generation,
		Replicas: pclq.Spec.Replicas, MinAvailable: pclq.Spec.EffectiveMinAvailable(), Strategy: pclq.Spec.UpdateStrategy,
		UpdateRevision: t.update.hash,
		Selector:       labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodClique: pclq.Name}).String(),
	}
	return write.Status(ctx, r.Client, pclq, func(pclq *v1alpha1.PodClique) {
		pclq.Status = rollout.ChildStatus(pclq.Status, facts, plan.Status, now)
	})
}
