package podcliquescalinggroup

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/write"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// maxIndicesInList keeps the status bounded.
const maxIndicesInList = 100

// updateStatus writes what the observation and the plan say about the group.
func (r *Reconciler) updateStatus(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, plan rollout.LevelPlan, updateHash string, now time.Time) error {
	facts := rollout.ChildFacts{
		Kind: rollout.KindGroup, Generation: g.Generation,
		Replicas: g.Spec.Replicas, MinAvailable: g.Spec.EffectiveMinAvailable(), Strategy: g.Spec.UpdateStrategy,
		UpdateRevision: updateHash,
		Selector:       labels.SelectorFromSet(labels.Set(selector(g))).String(),
	}
	window := g.Status.UpdateProgress.Window()
	return write.Status(ctx, r.Client, g, func(g *v1alpha1.PodCliqueScalingGroup) {
		st, w := rollout.ChildStatus(g.Status.ChildStatus, window, facts, plan.Status, now)
		progress := &v1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateWindow: *w}
		for _, idx := range plan.Status.SelectedToUpdate {
			if len(progress.ReplicaIndicesSelectedToUpdate) == maxIndicesInList {
				break
			}
			progress.ReplicaIndicesSelectedToUpdate = append(progress.ReplicaIndicesSelectedToUpdate, idx)
		}
		g.Status = v1alpha1.PodCliqueScalingGroupStatus{ChildStatus: st, UpdateProgress: progress}
	})
}
