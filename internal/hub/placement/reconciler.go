// Package placement chooses the Ready MemberClusters of each Placement, among
// the MemberClusterSets bound to its namespace, and publishes the choice in
// PlacementDecisions. Which clusters (fleet.Select) and what to write are
// decided by the pure functions in internal/fleet; this package reads what they
// need, applies the planner's writes exactly as its contract asks, and reports
// in status and events.
package placement

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
)

// replanDelay is how soon the slices are read again after a plan was applied in
// full; the watch on PlacementDecisions usually comes first.
const replanDelay = 200 * time.Millisecond

// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=placements,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=placements/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=placementdecisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=placementdecisions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersetbindings,verbs=get;list;watch

// Reconciler keeps each Placement's PlacementDecisions.
type Reconciler struct {
	Client client.Client
	// APIReader reads PlacementDecisions live: the planner must plan from a
	// read that reflects every write made so far.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("placement").
		For(&fleetv1alpha1.Placement{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&fleetv1alpha1.PlacementDecision{}).
		// Only a change a selection is made from, and only to the placements
		// whose selector matches the cluster before or after it: a probe that
		// rewrites a message wakes none, a cluster turning Ready wakes those
		// that may select it, not all of them.
		Watches(&fleetv1alpha1.MemberCluster{}, r.memberClusterEvents(),
			builder.WithPredicates(membercluster.DecisionInputsChanged{})).
		// Status writes of sets and bindings change no selection; a deletion
		// starting moves the generation.
		Watches(&fleetv1alpha1.MemberClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.placementsBinding),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&fleetv1alpha1.MemberClusterSetBinding{}, handler.EnqueueRequestsFromMapFunc(r.placementsInNamespace),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// memberClusterEvents maps a MemberCluster event to the Placements whose
// clusterSelector matches the cluster's labels, before or after an update: no
// other placement can select it, or have selected it, whatever its sets (a set
// narrows a selection, never widens it). A placement whose selector does not
// parse is enqueued too; it reports that.
func (r *Reconciler) memberClusterEvents() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			r.enqueueSelecting(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			r.enqueueSelecting(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			r.enqueueSelecting(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			r.enqueueSelecting(ctx, q, e.Object)
		},
	}
}

func (r *Reconciler) enqueueSelecting(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], mcs ...client.Object) {
	var list fleetv1alpha1.PlacementList
	if err := r.Client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Placements", "change", "a MemberCluster", "cluster", mcs[0].GetName())
		return
	}
	for i := range list.Items {
		pl := &list.Items[i]
		sel, err := fleet.ClusterSelector(pl)
		if err == nil && !slices.ContainsFunc(mcs, func(mc client.Object) bool { return sel.Matches(labels.Set(mc.GetLabels())) }) {
			continue
		}
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pl)})
	}
}

// placementsBinding maps a MemberClusterSet change to the Placements of the
// namespaces that bind it.
func (r *Reconciler) placementsBinding(ctx context.Context, set client.Object) []reconcile.Request {
	var bindings fleetv1alpha1.MemberClusterSetBindingList
	if err := r.Client.List(ctx, &bindings); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing MemberClusterSetBindings", "change", "a MemberClusterSet", "set", set.GetName())
		return nil
	}
	var out []reconcile.Request
	for _, b := range bindings.Items {
		if b.Spec.ClusterSet == set.GetName() {
			out = append(out, r.placementsInNamespace(ctx, &b)...)
		}
	}
	return out
}

// placementsInNamespace maps a binding change to the Placements of its
// namespace.
func (r *Reconciler) placementsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return enqueue.Listed(ctx, r.Client, &fleetv1alpha1.PlacementList{}, "a MemberClusterSetBinding", client.InNamespace(o.GetNamespace()))
}

// Reconcile reads the selected clusters and the slices, plans, records the plan
// in status, and applies its writes.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var pl fleetv1alpha1.Placement
	if err := r.Client.Get(ctx, req.NamespacedName, &pl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pl.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	sel, err := r.selection(ctx, &pl)
	if err != nil {
		return requeue.OnConflict(ctrl.Result{}, err)
	}
	selected := sel.Clusters
	desired, err := fleet.DesiredLayout(pl.Name, selected, pl.Spec.DecisionStrategy.GroupStrategy)
	if err != nil {
		r.Recorder.Eventf(&pl, nil, corev1.EventTypeWarning, string(fleetv1alpha1.PlacementReasonInvalidGroupStrategy), "Plan", "Cannot group the selected clusters: %v", err)
		if werr := r.writeStalled(ctx, &pl, fleetv1alpha1.PlacementReasonInvalidGroupStrategy, "cannot group the selected clusters: "+err.Error()); werr != nil {
			return requeue.OnConflict(ctrl.Result{}, werr)
		}
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("laying out placement %s: %w", req, err))
	}
	observed, err := r.observedSlices(ctx, &pl)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := fleet.PlanDecisions(observed.slices, desired, pl.Spec.DecisionStrategy.UpdateStrategy.Type)
	log.V(1).Info("planned decisions", "phase", plan.Phase, "writes", len(plan.Writes),
		"selected", len(selected), "groups", len(desired.Groups), "slices", len(desired.Slices))

	if err := r.writeStatus(ctx, &pl, sel, desired, plan); err != nil {
		return requeue.OnConflict(ctrl.Result{}, err)
	}
	if plan.Phase == fleet.PhaseSettled {
		return ctrl.Result{}, nil
	}
	r.announce(ctx, &pl, plan, len(selected))
	a := applier{client: r.Client, scheme: r.Scheme, placement: &pl, observed: observed.objects}
	for i, w := range plan.Writes {
		log.V(1).Info("writing decision", "phase", plan.Phase, "write", i+1, "op", w.Op, "slice", w.Slice.Name, "clusters", len(w.Slice.Clusters))
		if err := a.apply(ctx, w); err != nil {
			log.Info("stopped the plan at a failed write; planning again", "phase", plan.Phase,
				"write", i+1, "of", len(plan.Writes), "op", w.Op, "slice", w.Slice.Name, "error", err.Error())
			return requeue.OnConflict(ctrl.Result{}, fmt.Errorf("%s phase of placement %s: %w", plan.Phase, req, err))
		}
	}
	return ctrl.Result{RequeueAfter: replanDelay}, nil
}

// selection reads the sets, the namespace's bindings and the members, and lets
// fleet.Select choose.
func (r *Reconciler) selection(ctx context.Context, pl *fleetv1alpha1.Placement) (fleet.Selection, error) {
	var sets fleetv1alpha1.MemberClusterSetList
	if err := r.Client.List(ctx, &sets); err != nil {
		return fleet.Selection{}, fmt.Errorf("listing MemberClusterSets: %w", err)
	}
	var bindings fleetv1alpha1.MemberClusterSetBindingList
	if err := r.Client.List(ctx, &bindings, client.InNamespace(pl.Namespace)); err != nil {
		return fleet.Selection{}, fmt.Errorf("listing the MemberClusterSetBindings of namespace %s: %w", pl.Namespace, err)
	}
	var members fleetv1alpha1.MemberClusterList
	if err := r.Client.List(ctx, &members); err != nil {
		return fleet.Selection{}, fmt.Errorf("listing MemberClusters: %w", err)
	}
	sel, err := fleet.Select(fleet.SelectionInput{Placement: pl, Sets: sets.Items, Bindings: bindings.Items, Members: members.Items})
	if err != nil {
		if werr := r.writeStalled(ctx, pl, fleetv1alpha1.PlacementReasonInvalidClusterSelector, err.Error()); werr != nil {
			return sel, werr
		}
		return sel, reconcile.TerminalError(fmt.Errorf("selecting the clusters of placement %s/%s: %w", pl.Namespace, pl.Name, err))
	}
	return sel, nil
}

// observation is the placement's slices as read live, and the objects behind
// them (for their resourceVersions).
type observation struct {
	slices  []fleet.Slice
	objects map[string]*fleetv1alpha1.PlacementDecision
}

// observedSlices lists the placement's PlacementDecisions from the apiserver,
// not the cache.
func (r *Reconciler) observedSlices(ctx context.Context, pl *fleetv1alpha1.Placement) (observation, error) {
	var list fleetv1alpha1.PlacementDecisionList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(pl.Namespace),
		client.MatchingLabels{fleetv1alpha1.LabelPlacement: pl.Name}); err != nil {
		return observation{}, fmt.Errorf("reading PlacementDecisions of %s/%s: %w", pl.Namespace, pl.Name, err)
	}
	o := observation{objects: make(map[string]*fleetv1alpha1.PlacementDecision, len(list.Items))}
	for i := range list.Items {
		pd := &list.Items[i]
		// A slice left by an earlier Placement of the same name is the garbage
		// collector's; it is not this placement's.
		if ref := metav1.GetControllerOf(pd); ref != nil && ref.UID != pl.UID {
			continue
		}
		o.objects[pd.Name] = pd
		o.slices = append(o.slices, sliceOf(pd))
	}
	return o, nil
}

func sliceOf(pd *fleetv1alpha1.PlacementDecision) fleet.Slice {
	s := fleet.Slice{Name: pd.Name, Labels: pd.Labels}
	for _, d := range pd.Status.Decisions {
		s.Clusters = append(s.Clusters, d.ClusterName)
	}
	return s
}

// writeStatus records the final layout the slices are moving to, whether they
// hold it, and whether the placement's cluster sets are bound.
func (r *Reconciler) writeStatus(ctx context.Context, pl *fleetv1alpha1.Placement, sel fleet.Selection, desired fleet.Layout, plan fleet.Plan) error {
	selected := len(sel.Clusters)
	wasSettled := meta.IsStatusConditionTrue(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
	setsBound := fleet.ClusterSetsCondition(sel, pl.Namespace, pl.Generation)
	var before *metav1.Condition
	if c := meta.FindStatusCondition(pl.Status.Conditions, setsBound.Type); c != nil {
		before = c.DeepCopy() // the status write below changes it in place
	}
	err := write.Status(ctx, r.Client, pl, func(pl *fleetv1alpha1.Placement) {
		pl.Status.ObservedGeneration = pl.Generation
		pl.Status.NumberOfSelectedClusters = int32(selected)
		pl.Status.DecisionGroups = desired.GroupStatus()
		pl.Status.NumberOfDecisionGroups = int32(len(pl.Status.DecisionGroups))
		settled := fleet.SettledCondition(plan, pl.Generation)
		for _, c := range append([]metav1.Condition{setsBound, settled}, fleet.KstatusConditions(setsBound, settled)...) {
			meta.SetStatusCondition(&pl.Status.Conditions, c)
		}
	})
	if err != nil {
		return err
	}
	// One event per change of what is missing, not one per round.
	if before == nil || before.Status != setsBound.Status || before.Message != setsBound.Message {
		switch {
		case setsBound.Status == metav1.ConditionFalse:
			r.Recorder.Eventf(pl, nil, corev1.EventTypeWarning, setsBound.Reason, "Select", "%s", setsBound.Message)
		case before != nil:
			r.Recorder.Eventf(pl, nil, corev1.EventTypeNormal, setsBound.Reason, "Select", "%s", setsBound.Message)
		}
	}
	if plan.Phase == fleet.PhaseSettled && !wasSettled {
		ctrl.LoggerFrom(ctx).Info("decisions settled", "selected", selected, "groups", len(desired.Groups), "slices", len(desired.Slices))
		r.Recorder.Eventf(pl, nil, corev1.EventTypeNormal, "DecisionsSettled", "Settle",
			"%d cluster(s) in %d decision group(s), published in %d PlacementDecision(s)", selected, len(desired.Groups), len(desired.Slices))
	}
	return nil
}

// writeStalled records a spec that cannot be planned: Stalled True with why,
// at the placement's generation (kstatus reads a lagging observedGeneration as
// InProgress, not Failed). The rest of the status stays as it was.
func (r *Reconciler) writeStalled(ctx context.Context, pl *fleetv1alpha1.Placement, reason fleetv1alpha1.PlacementReason, why string) error {
	return write.Status(ctx, r.Client, pl, func(pl *fleetv1alpha1.Placement) {
		pl.Status.ObservedGeneration = pl.Generation
		for _, c := range fleet.InvalidSpecConditions(reason, why, pl.Generation) {
			meta.SetStatusCondition(&pl.Status.Conditions, c)
		}
	})
}

// announce says, in the log and an event, what the plan is about to do and
// what a consumer may see meanwhile.
func (r *Reconciler) announce(ctx context.Context, pl *fleetv1alpha1.Placement, plan fleet.Plan, selected int) {
	counts := map[fleet.Op]int{}
	for _, w := range plan.Writes {
		counts[w.Op]++
	}
	ctrl.LoggerFrom(ctx).Info("applying decision writes", "phase", plan.Phase, "selected", selected,
		"create", counts[fleet.Create], "update", counts[fleet.Update], "delete", counts[fleet.Delete])
	switch plan.Phase {
	case fleet.PhaseSurge:
		r.Recorder.Eventf(pl, nil, corev1.EventTypeNormal, "SurgingDecisions", "Surge",
			"Adding clusters to their final PlacementDecisions before any leaves its old one (%d create, %d update); until the update is finalized a cluster may be listed twice, so read the union of the placement's PlacementDecisions",
			counts[fleet.Create], counts[fleet.Update])
	case fleet.PhaseFinalize:
		r.Recorder.Eventf(pl, nil, corev1.EventTypeNormal, "FinalizingDecisions", "Finalize",
			"Every selected cluster is in its final PlacementDecision; trimming %d and deleting %d PlacementDecision(s)",
			counts[fleet.Update], counts[fleet.Delete])
	case fleet.PhaseWriteAll:
		r.Recorder.Eventf(pl, nil, corev1.EventTypeWarning, "WritingDecisionsAll", "Update",
			"updateStrategy All: writing %d PlacementDecision(s) straight to their final sets and deleting %d; a cluster that moves may be missing from all of them for a moment (use RollingUpdate to avoid this)",
			counts[fleet.Create]+counts[fleet.Update], counts[fleet.Delete])
	}
}
