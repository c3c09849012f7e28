package podcliquescalinggroup

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Condition reasons of a PodCliqueScalingGroup.
const (
	ReasonMinimumAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumUnavailable = "MinimumReplicasUnavailable"
	ReasonUpdateComplete     = "UpdateComplete"
	ReasonUpdating           = "Updating"
	ReasonWaitingForDeletion = "WaitingForDeletion"
	ReasonHeldBackByOwner    = "HeldBackByOwner"
	maxIndicesInList         = 100
)

// updateStatus writes what the Observation and the plan say about the group.
func (r *Reconciler) updateStatus(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, plan rollout.LevelPlan, obs Observation, updateHash string, now time.Time) error {
	st := g.Status.DeepCopy()
	ls := plan.Status
	st.ObservedGeneration = g.Generation
	st.Replicas = ls.Replicas
	st.ReadyReplicas = ls.ReadyReplicas
	st.AvailableReplicas = ls.AvailableReplicas
	st.UpdatedReplicas = ls.UpdatedReplicas
	st.UpdatedReadyReplicas = ls.UpdatedReadyReplicas
	st.ScheduledReplicas = 0
	for _, u := range rollout.GroupUnits(memberMinimums(g), obs.Replicas) {
		if u.Scheduled && !u.Terminating {
			st.ScheduledReplicas++
		}
	}
	st.Selector = labels.SelectorFromSet(labels.Set(selector(g))).String()

	onDelete := g.Spec.UpdateStrategy.Type == v1alpha1.OnDeleteStrategyType
	mt := metav1.NewTime(now)
	if st.UpdateRevision != updateHash {
		st.UpdateRevision = updateHash
		st.UpdateProgress = &v1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: &mt}
		if onDelete || st.CurrentRevision == "" {
			st.UpdateProgress.UpdateEndedAt = &mt
		}
	}
	if st.CurrentRevision == "" || ls.Complete {
		st.CurrentRevision = updateHash
	}
	if p := st.UpdateProgress; p != nil {
		if ls.Complete && p.UpdateEndedAt == nil {
			p.UpdateEndedAt = &mt
		}
		p.ReplicaIndicesSelectedToUpdate = nil
		for _, idx := range ls.SelectedToUpdate {
			if len(p.ReplicaIndicesSelectedToUpdate) == maxIndicesInList {
				break
			}
			p.ReplicaIndicesSelectedToUpdate = append(p.ReplicaIndicesSelectedToUpdate, idx)
		}
	}

	minAvailable := g.Spec.Replicas
	if g.Spec.MinAvailable != nil {
		minAvailable = *g.Spec.MinAvailable
	}
	available := metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: ReasonMinimumAvailable, ObservedGeneration: g.Generation,
		Message: fmt.Sprintf("%d of %d group replicas available, minimum %d", ls.AvailableReplicas, g.Spec.Replicas, minAvailable)}
	if ls.AvailableReplicas < minAvailable {
		available.Status, available.Reason = metav1.ConditionFalse, ReasonMinimumUnavailable
	}
	apimeta.SetStatusCondition(&st.Conditions, available)
	progressing := metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, ObservedGeneration: g.Generation}
	switch {
	case ls.Complete:
		progressing.Reason, progressing.Message = ReasonUpdateComplete, fmt.Sprintf("all %d group replicas run the current templates", g.Spec.Replicas)
	case onDelete:
		progressing.Reason, progressing.Message = ReasonWaitingForDeletion, fmt.Sprintf("%d group replicas run older templates and are replaced when deleted", g.Spec.Replicas-ls.UpdatedReplicas)
	case g.Spec.UpdateStrategy.MaxUpdated != nil && ls.UpdatedReplicas >= *g.Spec.UpdateStrategy.MaxUpdated:
		progressing.Reason = ReasonHeldBackByOwner
		progressing.Message = fmt.Sprintf("%d of %d group replicas updated; the owner allows %d for now", ls.UpdatedReplicas, g.Spec.Replicas, *g.Spec.UpdateStrategy.MaxUpdated)
	default:
		progressing.Reason, progressing.Message = ReasonUpdating, fmt.Sprintf("%d of %d group replicas updated, %d available", ls.UpdatedReplicas, g.Spec.Replicas, ls.AvailableReplicas)
	}
	apimeta.SetStatusCondition(&st.Conditions, progressing)

	if apiequality.Semantic.DeepEqual(st, &g.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(g.DeepCopy(), client.MergeFromWithOptimisticLock{})
	g.Status = *st
	if err := r.Client.Status().Patch(ctx, g, patch); err != nil {
		return fmt.Errorf("updating status of PodCliqueScalingGroup %s: %w", g.Name, err)
	}
	return nil
}
