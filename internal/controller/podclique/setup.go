package podclique

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/expectations"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// SetupWithManager registers the reconciler; it wakes up on PodCliques and on
// changes of the pods they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Expectations == nil {
		r.Expectations = expectations.New[rollout.Unit](r.Now)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("podclique").
		For(&v1alpha1.PodClique{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Pod{}, r.Expectations.EnqueueController(v1alpha1.GroupVersion.WithKind("PodClique").GroupKind())).
		Complete(r)
}
