package podcliqueset

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/enqueue"
	"github.com/lockstep-dev/lockstep/internal/gang"
)

// SetupWithManager registers the reconciler. Pods wake it up too: readiness
// gates role steps and moves the rollout from one replica to the next.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podcliqueset").
		For(&v1alpha1.PodCliqueSet{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&v1alpha1.PodClique{}).
		Owns(&v1alpha1.PodCliqueScalingGroup{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.Pod{}, enqueue.ToPodCliqueSet()).
		Watches(&v1alpha1.PodClique{}, enqueue.ToPodCliqueSet())
	if r.Gangs.Name() == gang.NameNative {
		// The scheduler explains an unplaceable gang on its PodGroup, sometimes
		// after the pods' last change: GangScheduled must catch up with it.
		b = b.Watches(&schedulingv1alpha2.PodGroup{}, enqueue.ToPodCliqueSet())
	}
	return b.Complete(r)
}
