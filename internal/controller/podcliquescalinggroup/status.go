package podcliquescalinggroup

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/write"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// updateStatus writes what the plan says about the group's replicas.
func (r *Reconciler) updateStatus(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, plan rollout.LevelPlan, updateHash string, now time.Time) error {
	facts := rollout.ChildFacts{
		Kind: rollout.KindGroup, Name: g.Name, Generation: g.Generation,
		Replicas: g.Spec.Replicas, MinAvailable: g.Spec.EffectiveMinAvailable(), Strategy: g.Spec.UpdateStrategy,
		UpdateRevision: updateHash,
		Selector:       labels.SelectorFromSet(labels.Set(selector(g))).String(),
	}
	return write.Status(ctx, r.Client, g, func(g *v1alpha1.PodCliqueScalingGroup) {
		g.Status = rollout.ChildStatus(g.Status, facts, plan.Status, now)
	})
}
