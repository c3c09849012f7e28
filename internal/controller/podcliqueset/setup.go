package podcliqueset

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/enqueue"
	"github.com/lockstep-dev/lockstep/internal/gang"
)

// SetupWithManager registers the reconciler. What pods do reaches it mostly
// through their PodClique's status (counts of scheduled, ready, available and
// updated pods: readiness gates role steps and moves the rollout from one
// replica to the next); pods themselves wake it only for what that status does
// not carry: a pod going away (a replica being recreated waits for its last
// pod) and a change in how it is scheduled (why a gang waits). Waking it on every
// pod event would write its status once per pod transition.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podcliqueset").
		For(&v1alpha1.PodCliqueSet{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&v1alpha1.PodClique{}).
		Owns(&v1alpha1.PodCliqueScalingGroup{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.Pod{}, enqueue.ToPodCliqueSet(), builder.WithPredicates(podsBeyondCliqueStatus)).
		Watches(&v1alpha1.PodClique{}, enqueue.ToPodCliqueSet())
	if r.Gangs.Name() == gang.NameNative {
		// The scheduler explains an unplaceable gang on its PodGroup, sometimes
		// after the pods' last change: GangScheduled must catch up with it.
		b = b.Watches(&schedulingv1alpha2.PodGroup{}, enqueue.ToPodCliqueSet())
	}
	return b.Complete(r)
}

// podsBeyondCliqueStatus passes the pod events a PodClique's status does not
// reflect: deletions, and changes of scheduling gates, the PodScheduled
// condition or the deletion timestamp.
var podsBeyondCliqueStatus = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.Pod)
		after, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return (before.DeletionTimestamp == nil) != (after.DeletionTimestamp == nil) ||
			len(before.Spec.SchedulingGates) != len(after.Spec.SchedulingGates) ||
			!equality.Semantic.DeepEqual(scheduledCondition(before), scheduledCondition(after))
	},
}

func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodScheduled {
			return &corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}
