// Package federatedworkload splits each FederatedWorkload over the clusters of
// its Placement and rolls it out under one global budget. It is the thin
// controller around internal/fleet/round: every round it observes (the
// placement, the cluster sets, the MemberClusters and each member object,
// read live), asks round.Plan what to do, and applies that: the member writes,
// the Events (each also a log line) and the status.
package federatedworkload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/controlloop/enqueue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/requeue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	lockstepmetrics "github.com/lockstep-dev/lockstep/internal/metrics"
)

// FieldManager is the server-side apply field manager of every member object
// the hub writes.
const FieldManager = "lockstep-fleet"

// Finalizer holds a FederatedWorkload until its member objects are deleted.
const Finalizer = "fleet.lockstep.dev/member-objects"

// Defaults of the Reconciler's intervals.
const (
	// DefaultRolloutPoll is how often members are read while something moves
	// and a member object is not watched (MemberEvents.Watching); while all
	// are, their changes run the rounds and the resync is the safety net.
	DefaultRolloutPoll = 10 * time.Second
	// DefaultResync is how often a settled workload's members are read and
	// their hub-owned fields re-asserted.
	DefaultResync = 30 * time.Second
	// DefaultMemberConcurrency is how many member calls one round makes at
	// once.
	DefaultMemberConcurrency = 16
	// DefaultMaxConcurrentRounds is how many workloads' rounds run at once:
	// a round waiting on an unreachable member holds no other workload.
	DefaultMaxConcurrentRounds = 8
	// memberCallTimeout bounds each call to a member's apiserver.
	memberCallTimeout = 5 * time.Second
)

// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=federatedworkloads,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=federatedworkloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=federatedworkloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=placementdecisions,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclustersets;memberclustersetbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps every FederatedWorkload's member objects.
type Reconciler struct {
	Client   client.Client
	Members  members.Clusters
	Recorder events.EventRecorder
	// RolloutPoll and Resync: DefaultRolloutPoll and DefaultResync when zero.
	RolloutPoll, Resync time.Duration
	// Now is the clock of the rounds (the member lost timeout, condition
	// times); time.Now when nil.
	Now func() time.Time
	// MemberConcurrency bounds the member calls (reads, writes) one round
	// makes at once; MaxConcurrentRounds the rounds of different workloads
	// run at once. DefaultMemberConcurrency and DefaultMaxConcurrentRounds
	// when zero.
	MemberConcurrency, MaxConcurrentRounds int
	// MemberEvents, when set, runs a workload's round as soon as one of its
	// member objects changes (register it with the members registry too);
	// without it member statuses are only polled (RolloutPoll).
	MemberEvents *MemberEvents
	// Analysis measures stage gates' analyses; nil measures none (such a
	// gate stays AnalysisRunning).
	Analysis *analysis.Measurer
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("federatedworkload").
		// an approval is an annotation
		For(&fleetv1alpha1.FederatedWorkload{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}))).
		Watches(&fleetv1alpha1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.workloadsOfDecision)).
		// A round reads of a MemberCluster its labels, its Ready condition
		// and its deletion; a probe that rewrites only a message wakes no
		// round.
		Watches(&fleetv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.allWorkloads),
			builder.WithPredicates(membercluster.DecisionInputsChanged{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.maxConcurrentRounds()})
	if r.MemberEvents != nil {
		b = b.WatchesRawSource(r.MemberEvents.source())
	}
	return b.Complete(r)
}

// deleting passes the update that marks an object for deletion.
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectNew != nil && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

func (r *Reconciler) workloadsOfDecision(ctx context.Context, o client.Object) []reconcile.Request {
	placement := o.GetLabels()[fleetv1alpha1.LabelPlacement]
	var list fleetv1alpha1.FederatedWorkloadList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing FederatedWorkloads for a PlacementDecision change")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.PlacementRef.Name == placement {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

func (r *Reconciler) allWorkloads(ctx context.Context, _ client.Object) []reconcile.Request {
	return enqueue.Listed(ctx, r.Client, &fleetv1alpha1.FederatedWorkloadList{}, "a MemberCluster")
}

// Reconcile runs one round: observe, plan (round.Plan), write the members,
// record the Events, write the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var fw fleetv1alpha1.FederatedWorkload
	if err := r.Client.Get(ctx, req.NamespacedName, &fw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !fw.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &fw)
	}
	if controllerutil.AddFinalizer(&fw, Finalizer) {
		if err := r.Client.Update(ctx, &fw); err != nil {
			return requeue.OnConflict(ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err))
		}
	}
	seen, changed := r.MemberEvents.take(req.NamespacedName)
	in, conns, err := r.observe(ctx, &fw)
	if err != nil {
		return ctrl.Result{}, err
	}
	in.Workload = r.measured(ctx, &fw)
	out := round.Plan(in)
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		log.Info("round planned", out.LogValues()...)
	}
	// The status first, then the members. The status is the hub's memory of
	// what it granted (a member it cannot read next round is charged from
	// it), so it holds a grant before the grant is sent, with what the member
	// may still act on besides (stillActing): charged for both, a member is
	// charged enough whether its write lands or not. And a round planned from
	// a workload older than the last status written (a cache that trails
	// the hub's own writes: an older status charges a member less than it
	// may use) fails here on its resourceVersion, before it sends anything.
	stagesBefore := fw.Status.Stages
	if fw.Status.UpdateRevision != out.Status.UpdateRevision {
		stagesBefore = nil // another rollout's
	}
	setStatus := func(fw *fleetv1alpha1.FederatedWorkload) { fw.Status = out.Status }
	writeStatus := write.Status[fleetv1alpha1.FederatedWorkload]
	if len(out.Writes) > 0 {
		writeStatus = write.StatusFirst[fleetv1alpha1.FederatedWorkload]
	}
	if statusErr := writeStatus(ctx, r.Client, &fw, setStatus); statusErr != nil {
		if apierrors.IsConflict(statusErr) && len(out.Writes) > 0 {
			staleRounds.Inc()
			ctrl.LoggerFrom(ctx).V(1).Info("round planned from a stale workload: sent nothing, looking again",
				"resourceVersion", fw.ResourceVersion, "writesHeld", len(out.Writes))
		}
		return requeue.OnConflict(ctrl.Result{}, statusErr)
	}
	// A failed member write is retried by the next round, which reads what
	// is there.
	writeErr := r.writeMembers(ctx, conns, out.Writes)
	recordStages(stagesBefore, out.Status.Stages)
	r.record(ctx, &fw, out.Events)
	lockstepmetrics.RecordFleetRound(&fw, &out)
	if len(out.Unwritable) > 0 {
		writeErr = errors.Join(writeErr, fmt.Errorf("building member objects: %s", strings.Join(out.Unwritable, "; ")))
	}
	if changed && granted(out.Events) {
		statusToGrant.Observe(time.Since(seen).Seconds())
	}
	if writeErr != nil {
		return ctrl.Result{}, writeErr
	}
	return ctrl.Result{RequeueAfter: out.Requeue}, nil
}

// finalize removes the member objects of a workload being deleted from every
// member that can be reached (round.Finalize), then lets the workload go.
func (r *Reconciler) finalize(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) error {
	if !controllerutil.ContainsFinalizer(fw, Finalizer) {
		return nil
	}
	seen, conns, err := r.observeForDeletion(ctx, fw)
	if err != nil {
		return err
	}
	writes, evs := round.Finalize(fw, seen)
	if err := r.writeMembers(ctx, conns, writes); err != nil {
		return err
	}
	r.record(ctx, fw, evs)
	controllerutil.RemoveFinalizer(fw, Finalizer)
	return client.IgnoreNotFound(r.Client.Update(ctx, fw))
}

// granted says whether a round changed grants.
func granted(evs []round.Event) bool {
	for _, e := range evs {
		if e.Reason == round.EventGranted {
			return true
		}
	}
	return false
}

func (r *Reconciler) memberConcurrency() int {
	if r.MemberConcurrency > 0 {
		return r.MemberConcurrency
	}
	return DefaultMemberConcurrency
}

func (r *Reconciler) maxConcurrentRounds() int {
	if r.MaxConcurrentRounds > 0 {
		return r.MaxConcurrentRounds
	}
	return DefaultMaxConcurrentRounds
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) rolloutPoll() time.Duration {
	if r.RolloutPoll > 0 {
		return r.RolloutPoll
	}
	return DefaultRolloutPoll
}

func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return DefaultResync
}
