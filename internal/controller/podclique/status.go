package podclique

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
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Condition types and reasons of a PodClique.
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"

	ReasonMinimumAvailable    = "MinimumPodsAvailable"
	ReasonMinimumUnavailable  = "MinimumPodsUnavailable"
	ReasonUpdateComplete      = "UpdateComplete"
	ReasonUpdating            = "Updating"
	ReasonWaitingForDeletion  = "WaitingForDeletion"
	ReasonHeldBackByOwner     = "HeldBackByOwner"
	maxSelectedToUpdateInList = 100
)

// updateStatus writes what the observation and the plan say about the clique.
func (r *Reconciler) updateStatus(ctx context.Context, pclq *v1alpha1.PodClique, plan rollout.LevelPlan, obs observation, t revisionTemplates, now time.Time) error {
	st := pclq.Status.DeepCopy()
	ls := plan.Status
	st.ObservedGeneration = pclq.Generation
	st.Replicas = ls.Replicas
	st.ReadyReplicas = ls.ReadyReplicas
	st.AvailableReplicas = ls.AvailableReplicas
	st.UpdatedReplicas = ls.UpdatedReplicas
	st.UpdatedReadyReplicas = ls.UpdatedReadyReplicas
	st.ScheduledReplicas = 0
	for _, u := range obs.units {
		if u.Scheduled && !u.Terminating {
			st.ScheduledReplicas++
		}
	}
	st.Selector = labels.SelectorFromSet(labels.Set{v1alpha1.LabelPodClique: pclq.Name}).String()

	onDelete := pclq.Spec.UpdateStrategy.Type == v1alpha1.OnDeleteStrategyType
	mt := metav1.NewTime(now)
	if st.UpdateRevision != t.update.hash {
		st.UpdateRevision = t.update.hash
		st.UpdateProgress = &v1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: &mt}
		if onDelete || st.CurrentRevision == "" {
			// OnDelete is done as soon as the template is taken over (seed 001).
			st.UpdateProgress.UpdateEndedAt = &mt
		}
	}
	if st.CurrentRevision == "" || ls.Complete {
		st.CurrentRevision = t.update.hash
	}
	if p := st.UpdateProgress; p != nil {
		if ls.Complete && p.UpdateEndedAt == nil {
			p.UpdateEndedAt = &mt
		}
		p.PodsSelectedToUpdate = nil
		for _, idx := range ls.SelectedToUpdate {
			if len(p.PodsSelectedToUpdate) == maxSelectedToUpdateInList {
				break
			}
			p.PodsSelectedToUpdate = append(p.PodsSelectedToUpdate, naming.Pod(pclq.Name, int(idx)))
		}
	}

	minAvailable := pclq.Spec.Replicas
	if pclq.Spec.MinAvailable != nil {
		minAvailable = *pclq.Spec.MinAvailable
	}
	available := metav1.Condition{Type: ConditionAvailable, Status: metav1.ConditionTrue, Reason: ReasonMinimumAvailable,
		Message: fmt.Sprintf("%d of %d pods available, minimum %d", ls.AvailableReplicas, pclq.Spec.Replicas, minAvailable), ObservedGeneration: pclq.Generation}
	if ls.AvailableReplicas < minAvailable {
		available.Status, available.Reason = metav1.ConditionFalse, ReasonMinimumUnavailable
	}
	apimeta.SetStatusCondition(&st.Conditions, available)
	apimeta.SetStatusCondition(&st.Conditions, progressing(pclq, ls, onDelete))

	if apiequality.Semantic.DeepEqual(st, &pclq.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(pclq.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pclq.Status = *st
	if err := r.Client.Status().Patch(ctx, pclq, patch); err != nil {
		return fmt.Errorf("updating status of PodClique %s: %w", pclq.Name, err)
	}
	return nil
}

func progressing(pclq *v1alpha1.PodClique, ls rollout.LevelStatus, onDelete bool) metav1.Condition {
	c := metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionTrue, ObservedGeneration: pclq.Generation}
	outdated := pclq.Spec.Replicas - ls.UpdatedReplicas
	switch {
	case ls.Complete:
		c.Reason, c.Message = ReasonUpdateComplete, fmt.Sprintf("all %d pods run the current template", pclq.Spec.Replicas)
	case onDelete:
		c.Reason, c.Message = ReasonWaitingForDeletion, fmt.Sprintf("%d pods run an older template and are replaced when deleted", outdated)
	case pclq.Spec.UpdateStrategy.MaxUpdated != nil && ls.UpdatedReplicas >= *pclq.Spec.UpdateStrategy.MaxUpdated:
		c.Reason = ReasonHeldBackByOwner
		c.Message = fmt.Sprintf("%d of %d pods updated; the owner allows %d for now", ls.UpdatedReplicas, pclq.Spec.Replicas, *pclq.Spec.UpdateStrategy.MaxUpdated)
	default:
		c.Reason, c.Message = ReasonUpdating, fmt.Sprintf("%d of %d pods updated, %d available", ls.UpdatedReplicas, pclq.Spec.Replicas, ls.AvailableReplicas)
	}
	return c
}
