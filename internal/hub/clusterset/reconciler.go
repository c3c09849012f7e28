// Package clusterset keeps the status of MemberClusterSets (how many
// MemberClusters each selects, whether its selector parses) and of
// MemberClusterSetBindings (whether the set they bind exists). It decides
// nothing about placements: the Placement controller reads sets and bindings
// itself, through the pure fleet.Select.
package clusterset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/enqueue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/requeue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersetbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersetbindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// Reconciler runs two small controllers: one for MemberClusterSets, one for
// MemberClusterSetBindings.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupWithManager registers both controllers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("memberclusterset").
		For(&fleetv1alpha1.MemberClusterSet{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&fleetv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.allSets),
			builder.WithPredicates(labelsChanged{})).
		Complete(reconcile.Func(r.reconcileSet))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("memberclustersetbinding").
		For(&fleetv1alpha1.MemberClusterSetBinding{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A set's generation moves when it is deleted (the deletion timestamp),
		// so generation changes, creations and deletions are all a binding
		// needs to hear about.
		Watches(&fleetv1alpha1.MemberClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOf),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(reconcile.Func(r.reconcileBinding))
}

// allSets maps a MemberCluster change to every set: any of them may select it.
func (r *Reconciler) allSets(ctx context.Context, _ client.Object) []reconcile.Request {
	return enqueue.Listed(ctx, r.Client, &fleetv1alpha1.MemberClusterSetList{}, "a MemberCluster")
}

// bindingsOf maps a set to the bindings named after it, in every namespace.
func (r *Reconciler) bindingsOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list fleetv1alpha1.MemberClusterSetBindingList
	if err := r.Client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing MemberClusterSetBindings", "change", "a MemberClusterSet", "set", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, b := range list.Items {
		if b.Spec.ClusterSet == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
	}
	return out
}

// reconcileSet counts the set's MemberClusters and says whether its selector
// parses.
func (r *Reconciler) reconcileSet(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var set fleetv1alpha1.MemberClusterSet
	if err := r.Client.Get(ctx, req.NamespacedName, &set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !set.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	cond := metav1.Condition{
		Type: string(fleetv1alpha1.MemberClusterSetSelectorValid), Status: metav1.ConditionTrue,
		Reason: string(fleetv1alpha1.MemberClusterSetReasonSelectorValid), Message: "spec.clusterSelector is valid", ObservedGeneration: set.Generation,
	}
	count := 0
	sel, err := fleet.SetSelector(&set)
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, string(fleetv1alpha1.MemberClusterSetReasonInvalidSelector)
		cond.Message = fmt.Sprintf("spec.clusterSelector: %v; the set contains no cluster", err)
	} else {
		var list fleetv1alpha1.MemberClusterList
		if err := r.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return reconcile.Result{}, fmt.Errorf("listing the MemberClusters of set %s: %w", set.Name, err)
		}
		for _, mc := range list.Items {
			if mc.DeletionTimestamp.IsZero() {
				count++
			}
		}
	}
	wasValid := !meta.IsStatusConditionFalse(set.Status.Conditions, cond.Type)
	err = write.Status(ctx, r.Client, &set, func(s *fleetv1alpha1.MemberClusterSet) {
		s.Status.ObservedGeneration = s.Generation
		s.Status.MemberClusterCount = int32(count)
		meta.SetStatusCondition(&s.Status.Conditions, cond)
	})
	if err != nil {
		return requeue.OnConflict(reconcile.Result{}, err)
	}
	if cond.Status == metav1.ConditionFalse && wasValid {
		r.Recorder.Eventf(&set, nil, corev1.EventTypeWarning, string(fleetv1alpha1.MemberClusterSetReasonInvalidSelector), "Select", "%s", cond.Message)
	}
	return reconcile.Result{}, nil
}

// reconcileBinding says whether the set a binding names exists.
func (r *Reconciler) reconcileBinding(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var b fleetv1alpha1.MemberClusterSetBinding
	if err := r.Client.Get(ctx, req.NamespacedName, &b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var set fleetv1alpha1.MemberClusterSet
	err := r.Client.Get(ctx, client.ObjectKey{Name: b.Spec.ClusterSet}, &set)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("reading MemberClusterSet %s of binding %s: %w", b.Spec.ClusterSet, req, err)
	}
	cond := BoundCondition(&b, err == nil && set.DeletionTimestamp.IsZero())
	was := meta.FindStatusCondition(b.Status.Conditions, cond.Type)
	changed := was == nil || was.Status != cond.Status // read before the write changes it in place
	if err := write.Status(ctx, r.Client, &b, func(b *fleetv1alpha1.MemberClusterSetBinding) {
		b.Status.ObservedGeneration = b.Generation
		meta.SetStatusCondition(&b.Status.Conditions, cond)
	}); err != nil {
		return requeue.OnConflict(reconcile.Result{}, err)
	}
	if changed {
		kind := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(&b, nil, kind, cond.Reason, "Bind", "%s", cond.Message)
	}
	return reconcile.Result{}, nil
}

// BoundCondition is a binding's Bound condition, given whether its set exists.
func BoundCondition(b *fleetv1alpha1.MemberClusterSetBinding, setExists bool) metav1.Condition {
	c := metav1.Condition{
		Type: string(fleetv1alpha1.MemberClusterSetBindingBound), Status: metav1.ConditionTrue,
		Reason:             string(fleetv1alpha1.MemberClusterSetBindingReasonBound),
		Message:            fmt.Sprintf("the Placements of namespace %s may select the clusters of MemberClusterSet %s", b.Namespace, b.Spec.ClusterSet),
		ObservedGeneration: b.Generation,
	}
	if !setExists {
		c.Status, c.Reason = metav1.ConditionFalse, string(fleetv1alpha1.MemberClusterSetBindingReasonSetNotFound)
		c.Message = fmt.Sprintf("MemberClusterSet %s does not exist: this binding adds no cluster to the Placements of namespace %s", b.Spec.ClusterSet, b.Namespace)
	}
	return c
}

// labelsChanged passes the MemberCluster events that can change a set's
// count: creation, deletion, a change of labels, and the start of deletion.
type labelsChanged struct {
	predicate.Funcs
}

// Update implements predicate.Predicate.
func (labelsChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return true
	}
	return !labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
}
