package podclique

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
)

// SetupWithManager registers the reconciler; it wakes up on PodCliques and on
// changes of the pods they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("podclique").
		For(&v1alpha1.PodClique{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Pod{}, r.Expectations.EnqueueController(v1alpha1.GroupVersion.WithKind("PodClique").GroupKind())).
		Complete(expectations.Reconciler(r.Client, r.Expectations, r.reconcile))
}
