package rollout

import (
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// ChildFacts are what a child level's status says besides its plan: its spec and
// what only its controller observes.
type ChildFacts struct {
	// Kind is KindClique (units are pods) or KindGroup (units are group replicas).
	Kind ChildKind
	// Name is the object's name; pods are named after it.
	Name       string
	Generation int64
	// Spec is the child's update strategy and size as its owner wrote them.
	Replicas, MinAvailable int32
	Strategy               v1alpha1.ChildUpdateStrategy
	// UpdateRevision is the hash of the child's template.
	UpdateRevision string
	// SelectorLabels select the object's pods (for /scale).
	SelectorLabels map[string]string
}

// ChildStatus is the status of a PodClique or PodCliqueScalingGroup after plan,
// given the status it had: counts, revisions, when the update started and
// ended, the units selected to update, and the Available and Progressing
// conditions. Condition transition times are now.
func ChildStatus(prev v1alpha1.ChildStatus, f ChildFacts, ls LevelStatus, now time.Time) v1alpha1.ChildStatus {
	st := *prev.DeepCopy()
	st.ObservedGeneration = f.Generation
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = ls.Replicas, ls.ReadyReplicas, ls.AvailableReplicas
	st.UpdatedReplicas, st.UpdatedReadyReplicas = ls.UpdatedReplicas, ls.UpdatedReadyReplicas
	st.ScheduledReplicas = ls.ScheduledReplicas
	st.Selector = labels.SelectorFromSet(f.SelectorLabels).String()

	onDelete := f.Strategy.Type == v1alpha1.OnDeleteStrategyType
	mt := metav1.NewTime(now)
	var w v1alpha1.UpdateWindow
	if prev.UpdateProgress != nil {
		w = *prev.UpdateProgress.UpdateWindow.DeepCopy()
	}
	if st.UpdateRevision != f.UpdateRevision {
		st.UpdateRevision = f.UpdateRevision
		w = v1alpha1.UpdateWindow{UpdateStartedAt: &mt}
		if onDelete || st.CurrentRevision == "" {
			// OnDelete is done as soon as the template is taken over.
			w.UpdateEndedAt = &mt
		}
	}
	if st.CurrentRevision == "" || ls.Complete {
		st.CurrentRevision = f.UpdateRevision
	}
	if ls.Complete && w.UpdateEndedAt == nil {
		w.UpdateEndedAt = &mt
	}
	for _, c := range []Condition{childAvailable(f, ls), childProgressing(f, ls)} {
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status),
			Reason: string(c.Reason), Message: c.Message, ObservedGeneration: f.Generation, LastTransitionTime: mt})
	}
	st.UpdateProgress = &v1alpha1.ChildUpdateProgress{UpdateWindow: w}
	for i, idx := range ls.SelectedToUpdate {
		if i == maxSelectedInStatus {
			break
		}
		if f.Kind == KindGroup {
			st.UpdateProgress.ReplicaIndicesSelectedToUpdate = append(st.UpdateProgress.ReplicaIndicesSelectedToUpdate, idx)
		} else {
			st.UpdateProgress.PodsSelectedToUpdate = append(st.UpdateProgress.PodsSelectedToUpdate, naming.Pod(f.Name, int(idx)))
		}
	}
	return st
}

// maxSelectedInStatus keeps the status bounded.
const maxSelectedInStatus = 100

// units is what a child level's units are called in messages.
func (f ChildFacts) units() string {
	if f.Kind == KindGroup {
		return "group replicas"
	}
	return "pods"
}

func childAvailable(f ChildFacts, ls LevelStatus) Condition {
	c := Condition{Type: v1alpha1.ConditionAvailable, Status: "True",
		Message: fmt.Sprintf("%d of %d %s available, minimum %d", ls.AvailableReplicas, f.Replicas, f.units(), f.MinAvailable)}
	ok, short := v1alpha1.ReasonMinimumPodsAvailable, v1alpha1.ReasonMinimumPodsUnavailable
	if f.Kind == KindGroup {
		ok, short = v1alpha1.ReasonMinimumReplicasAvailable, v1alpha1.ReasonMinimumReplicasUnavailable
	}
	c.Reason = ok
	if ls.AvailableReplicas < f.MinAvailable {
		c.Status, c.Reason = "False", short
	}
	return c
}

func childProgressing(f ChildFacts, ls LevelStatus) Condition {
	c := Condition{Type: v1alpha1.ConditionProgressing, Status: "True"}
	template := "template"
	if f.Kind == KindGroup {
		template = "templates"
	}
	switch maxUpdated := f.Strategy.MaxUpdated; {
	case ls.Complete:
		c.Reason, c.Message = v1alpha1.ReasonUpdateComplete, fmt.Sprintf("all %d %s run the current %s", f.Replicas, f.units(), template)
	case f.Strategy.Type == v1alpha1.OnDeleteStrategyType:
		c.Reason = v1alpha1.ReasonWaitingForDeletion
		c.Message = fmt.Sprintf("%d %s run an older %s and are replaced when deleted", f.Replicas-ls.UpdatedReplicas, f.units(), template)
		if f.Kind == KindGroup {
			c.Message = fmt.Sprintf("%d %s run older %s and are replaced when deleted", f.Replicas-ls.UpdatedReplicas, f.units(), template)
		}
	case maxUpdated != nil && ls.UpdatedReplicas >= *maxUpdated:
		c.Reason = v1alpha1.ReasonHeldBackByOwner
		c.Message = fmt.Sprintf("%d of %d %s updated; the owner allows %d for now", ls.UpdatedReplicas, f.Replicas, f.units(), *maxUpdated)
	default:
		c.Reason, c.Message = v1alpha1.ReasonUpdating, fmt.Sprintf("%d of %d %s updated, %d available", ls.UpdatedReplicas, f.Replicas, f.units(), ls.AvailableReplicas)
	}
	return c
}

// ChildProgressOnly reports whether next differs from prev only in how far
// the units have come (the ready, available, updated and scheduled counts, and
// condition messages whose status and reason stay): a change its writer may
// hold back for a moment. Replicas, revisions, condition statuses and reasons,
// the update window and the units selected to update are not. Nor is the
// available or updated count reaching the spec's replicas (desired): a parent
// waits for that in the child's written status before it says it is done
// (see Report), so holding it back would hold the parent back. Crossing
// minAvailable flips the Available condition and is written at once too. A
// count falling needs no haste: the parent sees the pods go first.
func ChildProgressOnly(prev, next v1alpha1.ChildStatus, desired int32) bool {
	reaches := func(before, after int32) bool { return before < desired && after >= desired }
	if reaches(prev.AvailableReplicas, next.AvailableReplicas) || reaches(prev.UpdatedReplicas, next.UpdatedReplicas) {
		return false
	}
	n := *next.DeepCopy()
	n.ReadyReplicas, n.AvailableReplicas, n.UpdatedReplicas = prev.ReadyReplicas, prev.AvailableReplicas, prev.UpdatedReplicas
	n.UpdatedReadyReplicas, n.ScheduledReplicas = prev.UpdatedReadyReplicas, prev.ScheduledReplicas
	for i := range n.Conditions {
		c := &n.Conditions[i]
		if p := apimeta.FindStatusCondition(prev.Conditions, c.Type); p != nil && p.Status == c.Status && p.Reason == c.Reason {
			c.Message = p.Message
		}
	}
	return apiequality.Semantic.DeepEqual(n, prev)
}
