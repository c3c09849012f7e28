package podcliquescalinggroup

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/enqueue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
)

// SetupWithManager registers the reconciler. It wakes up on its groups, their
// member PodCliques, and the pods of those (readiness decides availability).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("podcliquescalinggroup").
		For(&v1alpha1.PodCliqueScalingGroup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.PodClique{}, r.Expectations.EnqueueController(v1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup").GroupKind())).
		Watches(&corev1.Pod{}, enqueue.ToScalingGroup()).
		Complete(expectations.Reconciler(r.Client, r.Expectations, r.reconcile))
}
