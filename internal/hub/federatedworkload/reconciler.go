// Package federatedworkload splits each FederatedWorkload over the clusters of
// its Placement and rolls it out under one global budget. Every round it reads
// the placement (the union of its PlacementDecisions), the MemberClusters and
// each member object, asks the fleet planner (internal/fleet/align) for the
// grants, and writes each member object by server-side apply. Everything a
// round needs is read from objects: the grant a member holds is read back from
// its own spec, so a restarted hub resumes where the last one stopped.
//
// The hub writes and deletes only member objects labelled
// fleet.lockstep.dev/federatedworkload=<namespace>.<name> of the workload
// (ownership.go). It creates a member object with a plain create, which fails
// when the name is taken; it applies to and deletes only the object it read
// as the workload's, by UID. Another object under the name is a conflict:
// left alone, reported, and planned as a member with none of the units.
package federatedworkload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/enqueue"
	"github.com/lockstep-dev/lockstep/internal/controller/requeue"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/division"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
)

// FieldManager is the server-side apply field manager of every member object
// the hub writes.
const FieldManager = "lockstep-fleet"

// Finalizer holds a FederatedWorkload until its member objects are deleted.
const Finalizer = "fleet.lockstep.dev/member-objects"

// Defaults of the Reconciler's intervals.
const (
	// DefaultRolloutPoll is how often members are read while something moves:
	// member statuses are polled, not watched.
	DefaultRolloutPoll = 2 * time.Second
	// DefaultResync is how often a settled workload's members are read and
	// their hub-owned fields re-asserted.
	DefaultResync = 30 * time.Second
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
	// Now is the clock for the member lost timeout; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("federatedworkload").
		For(&fleetv1alpha1.FederatedWorkload{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, deleting{}))).
		Watches(&fleetv1alpha1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.workloadsOfDecision)).
		Watches(&fleetv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.allWorkloads)).
		Complete(r)
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

// Reconcile runs one round: observe the members, plan the grants, apply them,
// report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var fw fleetv1alpha1.FederatedWorkload
	if err := r.Client.Get(ctx, req.NamespacedName, &fw); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !fw.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteMemberObjects(ctx, &fw)
	}
	if controllerutil.AddFinalizer(&fw, Finalizer) {
		if err := r.Client.Update(ctx, &fw); err != nil {
			return requeue.OnConflict(ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err))
		}
	}
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		return ctrl.Result{}, r.stuck(ctx, &fw, fleetv1alpha1.ReasonInvalidTemplate, err.Error())
	}
	round, err := r.observe(ctx, &fw, tmpl)
	if err != nil {
		return ctrl.Result{}, err
	}
	if round.stuck != "" {
		return ctrl.Result{RequeueAfter: r.resync()}, r.stuck(ctx, &fw, round.stuckReason, round.stuck)
	}
	plan, err := align.Align(member.StrategyOf(&fw), round.alignMembers())
	if err != nil {
		return ctrl.Result{}, r.stuck(ctx, &fw, fleetv1alpha1.ReasonAlignFailed, err.Error())
	}
	round.recordStillActing(plan)
	logRound(ctx, round, plan)
	applyErr := r.apply(ctx, &fw, tmpl, round, plan)
	if err := r.report(ctx, &fw, tmpl, round, plan); err != nil {
		return requeue.OnConflict(ctrl.Result{}, err)
	}
	if applyErr != nil {
		return ctrl.Result{}, applyErr
	}
	if plan.Done && !round.moving() {
		return ctrl.Result{RequeueAfter: r.resync()}, nil
	}
	return ctrl.Result{RequeueAfter: r.rolloutPoll()}, nil
}

// observed is one member as read this round.
type observed struct {
	memberView
	kind member.Kind
	// conn is the member's connection, nil when it is not reachable now.
	conn cluster.Cluster
	// held is the member object as read, nil when it does not exist, is not
	// the workload's (memberView.Conflict) or the member is not reachable.
	held *unstructured.Unstructured
	// last is the grant the member object carries; seen what the member may
	// still act on when it has not observed last.
	last, seen *align.Grant
	// gone: a member that left the placement and whose object is deleted (or
	// can never be); it is no longer reported.
	gone bool
	// holdFrom is another member's object whose pod template a member object
	// about to be created takes while it is not started.
	holdFrom *unstructured.Unstructured
}

// round is what one reconcile observed.
type round struct {
	members []*observed
	// stuck says why nothing can be planned (with its reason), "" normally.
	stuck, stuckReason string
}

func (rd *round) alignMembers() []align.Member {
	out := make([]align.Member, 0, len(rd.members))
	for _, m := range rd.members {
		if m.gone {
			continue
		}
		out = append(out, m.alignMember())
	}
	return out
}

func (m *observed) alignMember() align.Member {
	return align.Member{
		Name: m.Name, Kind: m.kind.Align(), Desired: m.Desired, Target: m.Target, Status: m.Status,
		Reach: m.Reach, Last: m.last, Observed: m.seen,
	}
}

// recordStillActing keeps, for each member the plan grants, what it may act
// on besides that grant until it observes it: the next rounds charge it.
func (rd *round) recordStillActing(plan align.Plan) {
	grants := make(map[string]align.Grant, len(plan.Members))
	for _, mp := range plan.Members {
		grants[mp.Name] = mp.Grant
	}
	for _, m := range rd.members {
		if g, ok := grants[m.Name]; ok && !m.gone && m.Conflict == "" {
			am := m.alignMember()
			m.StillActing = align.StillActing(&am, g)
		}
	}
}

// moving: a cluster is on its way out.
func (rd *round) moving() bool {
	return slices.ContainsFunc(rd.members, func(m *observed) bool { return m.Leaving })
}

// observe reads the placement, the MemberClusters and every member object.
func (r *Reconciler) observe(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template) (*round, error) {
	pl, placed, err := r.placedClusters(ctx, fw)
	if err != nil {
		return nil, err
	}
	if pl == nil {
		return &round{stuck: fmt.Sprintf("Placement %s not found", fw.Spec.PlacementRef.Name), stuckReason: fleetv1alpha1.ReasonPlacementNotFound}, nil
	}
	if len(placed) == 0 {
		// An empty union is more often a placement being recreated than a wish to
		// remove the workload everywhere: keep what runs.
		return &round{stuck: "the placement holds no cluster; member objects are kept as they are until it places some", stuckReason: fleetv1alpha1.ReasonNoClustersSelected}, nil
	}
	if len(placed) > fleetv1alpha1.MaxFederatedClusters {
		return &round{stuck: fmt.Sprintf("the placement holds %d clusters; at most %d are supported", len(placed), fleetv1alpha1.MaxFederatedClusters), stuckReason: fleetv1alpha1.ReasonTooManyClusters}, nil
	}
	var mcList fleetv1alpha1.MemberClusterList
	if err := r.Client.List(ctx, &mcList); err != nil {
		return nil, fmt.Errorf("listing MemberClusters: %w", err)
	}
	mcs := make(map[string]*fleetv1alpha1.MemberCluster, len(mcList.Items))
	clusterLabels := make(map[string]map[string]string, len(mcList.Items))
	for i := range mcList.Items {
		mcs[mcList.Items[i].Name] = &mcList.Items[i]
		clusterLabels[mcList.Items[i].Name] = mcList.Items[i].Labels
	}
	entries := make(map[string]*fleetv1alpha1.FederatedClusterStatus, len(fw.Status.Clusters))
	for i := range fw.Status.Clusters {
		entries[fw.Status.Clusters[i].Name] = &fw.Status.Clusters[i]
	}
	eligible, err := r.eligibleClusters(ctx, pl, mcList.Items)
	if err != nil {
		return nil, err
	}
	divided := r.dividedClusters(fw, placed, eligible, entries, mcs)
	weights, err := division.Weights(fw.Spec.Division.Weights, clusterLabels, divided)
	if err != nil {
		return &round{stuck: err.Error(), stuckReason: fleetv1alpha1.ReasonInvalidDivision}, nil
	}
	shares := division.Shares(fw.Spec.Replicas, divided, weights)

	sameRevision := fw.Status.UpdateRevision == tmpl.Revision
	// A workload that has written no member object yet is created at its
	// shares at once; after that, shares move within the rollout budgets.
	fresh := len(fw.Status.Clusters) == 0
	rd := &round{}
	for i, name := range divided {
		m := r.observeMember(ctx, fw, tmpl, name, mcs[name], entries[name], sameRevision)
		m.Target = shares[i]
		m.Desired = heldReplicas(m, entries[name])
		if fresh {
			m.Desired = m.Target
		}
		rd.members = append(rd.members, m)
	}
	holdBackFreshMembers(tmpl, rd.members)
	var staying []memberView
	for _, m := range rd.members {
		staying = append(staying, m.memberView)
	}
	grown := othersGrown(staying)
	for name, e := range entries {
		if slices.Contains(divided, name) {
			continue
		}
		m := r.observeMember(ctx, fw, tmpl, name, mcs[name], e, sameRevision)
		m.Leaving = true
		m.Desired, m.Target = heldReplicas(m, e), 0
		switch {
		case m.conn != nil && m.held == nil:
			// nothing of the workload's left in the member (an object that is
			// not the workload's stays where it is)
			m.gone = true
		case m.conn == nil && m.Reach == align.Lost:
			// Written off (its units count as down and as gone) until the
			// others have taken its share over; then forgotten, as it cannot be
			// reached to clean up (see docs/fleet.md).
			m.gone = grown
		}
		rd.members = append(rd.members, m)
	}
	slices.SortFunc(rd.members, func(a, b *observed) int { return strings.Compare(a.Name, b.Name) })
	return rd, nil
}

// eligibleClusters are the clusters the placement may reach, Ready or not:
// members of the cluster sets bound to its namespace that match its selector.
// Only these may keep a share while briefly out of the placement, so a
// namespace whose binding is removed reaches no cluster through it.
func (r *Reconciler) eligibleClusters(ctx context.Context, pl *fleetv1alpha1.Placement, members []fleetv1alpha1.MemberCluster) ([]string, error) {
	var sets fleetv1alpha1.MemberClusterSetList
	if err := r.Client.List(ctx, &sets); err != nil {
		return nil, fmt.Errorf("listing MemberClusterSets: %w", err)
	}
	var bindings fleetv1alpha1.MemberClusterSetBindingList
	if err := r.Client.List(ctx, &bindings, client.InNamespace(pl.Namespace)); err != nil {
		return nil, fmt.Errorf("listing MemberClusterSetBindings: %w", err)
	}
	sel, err := fleet.Select(fleet.SelectionInput{Placement: pl, Sets: sets.Items, Bindings: bindings.Items, Members: members})
	if err != nil {
		return nil, nil // the placement selects nothing either
	}
	return sel.Eligible, nil
}

// dividedClusters are the clusters the replicas are divided over: the
// placement's, and those it dropped only because they stopped answering (still
// in the status, still eligible for the placement, not Ready for less than
// memberLostTimeoutSeconds). Placements select Ready members only, so
// without the second kind a member that blinks would hand its share to the
// others at once; it keeps it, and its charge, until it is lost. A member that
// is Ready again but not yet placed again is kept for the same reason.
func (r *Reconciler) dividedClusters(fw *fleetv1alpha1.FederatedWorkload, placed, eligible []string,
	entries map[string]*fleetv1alpha1.FederatedClusterStatus, mcs map[string]*fleetv1alpha1.MemberCluster) []string {
	out := slices.Clone(placed)
	timeout := time.Duration(lostTimeout(fw)) * time.Second
	for name := range entries {
		mc := mcs[name]
		if slices.Contains(placed, name) || mc == nil || !mc.DeletionTimestamp.IsZero() || !slices.Contains(eligible, name) {
			continue
		}
		if lostFor(mc, r.now()) < timeout {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// holdBackFreshMembers: a Deployment member object created while another
// member still holds the template the rollout holds back starts on that
// template, not started, so it costs the partition nothing until the planner
// starts it. With no such member the rollout holds nothing back, and a fresh
// member starts on the current template.
func holdBackFreshMembers(tmpl *member.Template, ms []*observed) {
	if tmpl.Kind != member.Deployment {
		return
	}
	var old *unstructured.Unstructured
	for _, m := range ms {
		if m.held != nil && m.held.GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision] != tmpl.Revision {
			old = m.held
			break
		}
	}
	if old == nil {
		return
	}
	for _, m := range ms {
		if m.conn != nil && m.held == nil && m.Conflict == "" {
			m.last = &align.Grant{}
			m.holdFrom = old
		}
	}
}

// othersGrown: every placed member reports its whole share available and is
// current, so the units of a leaving cluster may go.
func othersGrown(views []memberView) bool {
	for _, v := range views {
		if v.Reach != align.Current || v.Desired < v.Target || v.Status.Available < v.Target {
			return false
		}
	}
	return true
}

// heldReplicas is the share the member object holds: what the hub last
// wrote to it (its status entry; an edit by someone else is overwritten, not
// taken as a share), else its spec.replicas as read, else 0 for an object
// not created yet.
func heldReplicas(m *observed, entry *fleetv1alpha1.FederatedClusterStatus) int32 {
	switch {
	case entry != nil:
		return entry.DesiredReplicas
	case m.held != nil:
		return int32(max(0, nestedInt(m.held, "spec", "replicas")))
	}
	return 0
}

// observeMember reads one member: its reachability, its object and status.
func (r *Reconciler) observeMember(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template, name string,
	mc *fleetv1alpha1.MemberCluster, entry *fleetv1alpha1.FederatedClusterStatus, sameRevision bool) *observed {
	m := &observed{memberView: memberView{Name: name}, kind: tmpl.Kind}
	// recorded is the grant the last round wrote, stillActing what the member
	// could still act on besides it then.
	var recorded, stillActing *align.Grant
	if entry != nil {
		m.Status = align.Status{Replicas: entry.Replicas, Updated: entry.UpdatedReplicas, Available: entry.AvailableReplicas}
		m.Status.UpdatedAvailable = min(m.Status.Updated, max(0, m.Status.Available-(m.Status.Replicas-m.Status.Updated)))
		if sameRevision {
			g := alignGrant(entry.Grant)
			recorded = &g
			if entry.StillActing != nil {
				a := alignGrant(*entry.StillActing)
				stillActing = &a
			}
		}
	}
	ready := mc != nil && meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
	conn, connected := r.Members.Get(name)
	if ready && connected {
		obj, err := readMemberObject(ctx, conn, tmpl, fw.Namespace, fw.Name)
		switch {
		case apierrors.IsNotFound(err):
			m.conn = conn
			// A new member object is no rollout: it starts on the current template.
			m.last = &align.Grant{Started: true}
			m.Status = align.Status{}
			return m
		case err == nil:
			if conflict := conflictOf(string(tmpl.Kind), obj, fw); conflict != "" {
				m.conflicted(conn, conflict)
				return m
			}
			m.conn, m.held = conn, obj
			st := member.StatusOf(obj, tmpl.Revision)
			if tmpl.Kind == member.Deployment {
				st = withReplicaSets(ctx, conn, obj, st, tmpl.Revision)
			}
			m.Status = st.Status
			m.last = member.HeldGrant(tmpl.Kind, obj, tmpl.Revision)
			if st.Stale {
				// Not yet at its object's grant: it may act on what it held
				// before, and on the recorded grant when the object does not
				// hold it (the write failed, or another writer changed it).
				m.Reach = align.Stale
				m.seen = stillActing
				if recorded != nil && (m.last == nil || *recorded != *m.last) {
					m.seen = align.Widest(m.seen, recorded)
				}
			}
			return m
		default:
			ctrl.LoggerFrom(ctx).Info("cannot read member object; charging its last grant", "member", name, "error", err.Error())
		}
	}
	// Not reachable: it keeps the grant it was last given, and its last
	// reported counts.
	m.Reach = align.Stale
	m.last, m.seen = recorded, stillActing
	if m.last == nil && tmpl.Kind == member.Deployment {
		m.last = &align.Grant{}
	}
	if lostFor(mc, r.now()) >= time.Duration(lostTimeout(fw))*time.Second {
		m.Reach = align.Lost
	}
	return m
}

// conflicted marks a member whose object under the workload's name is not
// the workload's. It is planned as a member whose object cannot be written:
// stale, so the planner hands it no budget, with none of the workload's units
// (the other object's pods are not the workload's to count) and the initial
// grant (nothing of the workload's runs there to act on an older one). So its
// whole held share is charged as unavailable, none of it as surge or updated:
// the other members get only the budget the missing units leave, and the
// fleet never goes below replicas − maxUnavailable by the hub's doing. Its
// share stays with it rather than moving to the others, as for a member that
// cannot be reached: a conflict is often put right within minutes (the object
// deleted, or labelled to hand it over), and moving the share away and back
// would spend the others' budget twice; until then the rollout cannot finish.
func (m *observed) conflicted(conn cluster.Cluster, conflict string) {
	m.conn, m.held, m.holdFrom = conn, nil, nil
	m.Conflict = conflict
	m.Reach = align.Stale
	m.Status = align.Status{}
	m.last, m.seen = nil, nil
	if m.kind == member.Deployment {
		m.last = &align.Grant{}
	}
}

// lostFor is how long the member has been not Ready (forever when its
// MemberCluster is gone, 0 while Ready or never probed).
func lostFor(mc *fleetv1alpha1.MemberCluster, now time.Time) time.Duration {
	if mc == nil {
		return time.Duration(1<<62 - 1)
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
	if c == nil || c.Status == metav1.ConditionTrue {
		return 0
	}
	return now.Sub(c.LastTransitionTime.Time)
}

func lostTimeout(fw *fleetv1alpha1.FederatedWorkload) int32 {
	if t := fw.Spec.MemberLostTimeoutSeconds; t != nil {
		return *t
	}
	return fleetv1alpha1.DefaultMemberLostTimeoutSeconds
}

// withReplicaSets folds in what a Deployment member's ReplicaSets ask for
// (see member.WithReplicaSets). When they cannot be read the status is taken
// as settling: its grant is kept, not cut down to counts that may trail.
func withReplicaSets(ctx context.Context, conn cluster.Cluster, dep *unstructured.Unstructured, st member.ObservedStatus, rev string) member.ObservedStatus {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSetList"})
	if err := conn.GetAPIReader().List(ctx, list, client.InNamespace(dep.GetNamespace()), client.MatchingLabels(sel)); err != nil {
		ctrl.LoggerFrom(ctx).Info("cannot read the member's ReplicaSets; keeping its grant", "error", err.Error())
		st.Settling = true
		return st
	}
	return member.WithReplicaSets(st, dep, list.Items, rev)
}

func readMemberObject(ctx context.Context, conn cluster.Cluster, tmpl *member.Template, ns, name string) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(tmpl.Object.GroupVersionKind())
	if err := conn.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// placedClusters is the Placement and the sorted union of its
// PlacementDecisions; a nil Placement when it does not exist.
func (r *Reconciler) placedClusters(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) (*fleetv1alpha1.Placement, []string, error) {
	var pl fleetv1alpha1.Placement
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: fw.Namespace, Name: fw.Spec.PlacementRef.Name}, &pl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading Placement %s: %w", fw.Spec.PlacementRef.Name, err)
	}
	var list fleetv1alpha1.PlacementDecisionList
	if err := r.Client.List(ctx, &list, client.InNamespace(fw.Namespace),
		client.MatchingLabels{fleetv1alpha1.LabelPlacement: fw.Spec.PlacementRef.Name}); err != nil {
		return nil, nil, fmt.Errorf("listing PlacementDecisions of %s: %w", fw.Spec.PlacementRef.Name, err)
	}
	out := []string{}
	for i := range list.Items {
		for _, d := range list.Items[i].Status.Decisions {
			if !slices.Contains(out, d.ClusterName) {
				out = append(out, d.ClusterName)
			}
		}
	}
	slices.Sort(out)
	return &pl, out, nil
}

// apply writes every reachable member's object with its grant, and deletes
// the objects of clusters that left once their units have moved.
func (r *Reconciler) apply(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template, rd *round, plan align.Plan) error {
	plans := make(map[string]align.MemberPlan, len(plan.Members))
	for _, mp := range plan.Members {
		plans[mp.Name] = mp
	}
	var errs []string
	for _, m := range rd.members {
		mp, planned := plans[m.Name]
		if planned {
			m.Desired = mp.Replicas // what the member object holds from now on
		}
		if m.conn == nil || m.gone || m.Conflict != "" {
			continue
		}
		var err error
		if m.Leaving && m.Desired == 0 && m.Reach == align.Current && m.Status.Replicas+m.Status.Terminating == 0 {
			err = r.deleteMemberObject(ctx, m.conn, tmpl, m.held)
			m.gone = err == nil
		} else {
			err = r.applyMember(ctx, fw, tmpl, m, mp.Grant)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("cluster %s: %v", m.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("writing member objects: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (r *Reconciler) applyMember(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template, m *observed, g align.Grant) error {
	held := m.held
	if held == nil {
		held = m.holdFrom
	}
	obj, err := member.Build(member.Object{Template: tmpl, Namespace: fw.Namespace, Name: fw.Name, Replicas: m.Desired, Grant: g, Held: held})
	if err != nil {
		return err
	}
	if m.held == nil {
		return r.createMember(ctx, fw, tmpl, m, obj)
	}
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	// The object read as the workload's, by its UID: the apiserver refuses an
	// apply whose UID differs from the object's (metadata.uid is immutable)
	// or that finds no object (it would create one), so an object deleted and
	// made again by someone else since the read is neither taken over nor
	// created anew; the next round reads what is there. Forcing ownership then
	// takes back the hub's fields within the workload's own object only. One
	// window is left: the same object relabelled between the read and this
	// apply gets the label back (the next read sees it as the workload's).
	obj.SetUID(m.held.GetUID())
	if err := m.conn.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s/%s (uid %s): %w", tmpl.Kind, fw.Namespace, fw.Name, m.held.GetUID(), err)
	}
	return nil
}

// createMember makes the member object the member lacked when it was read.
// A create, not an apply: it fails when the name is taken, so an object
// someone made since the read is never taken over. The hub's fields are
// applied from the next round on, to the object created here.
func (r *Reconciler) createMember(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template, m *observed, obj *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	c := m.conn.GetClient()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fw.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", fw.Namespace, err)
	}
	err := c.Create(ctx, obj, client.FieldOwner(FieldManager))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", tmpl.Kind, fw.Namespace, fw.Name, err)
		}
		return nil
	}
	// Made since the read: the workload's only when labelled so (a create of
	// an earlier round whose answer was lost); the next round takes it up.
	held, err := readMemberObject(ctx, m.conn, tmpl, fw.Namespace, fw.Name)
	if err != nil {
		return fmt.Errorf("reading %s %s/%s, created by someone else since it was read: %w", tmpl.Kind, fw.Namespace, fw.Name, err)
	}
	if conflict := conflictOf(string(tmpl.Kind), held, fw); conflict != "" {
		m.conflicted(m.conn, conflict)
	}
	return nil
}

// deleteMemberObject deletes held, a member object read as the workload's,
// only if it is still that object unchanged: the preconditions on its UID
// and resourceVersion keep a delete from reaching an object made under the
// same name since the read, or the same one relabelled as someone else's.
// A precondition that fails is an error; the next round reads again.
func (r *Reconciler) deleteMemberObject(ctx context.Context, conn cluster.Cluster, tmpl *member.Template, held *unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(tmpl.Object.GroupVersionKind())
	obj.SetNamespace(held.GetNamespace())
	obj.SetName(held.GetName())
	uid, rv := held.GetUID(), held.GetResourceVersion()
	err := conn.GetClient().Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s (uid %s, resourceVersion %s): %w", tmpl.Kind, held.GetNamespace(), held.GetName(), uid, rv, err)
	}
	return nil
}

// deleteMemberObjects removes the member objects of a workload being deleted
// from every reachable member, then lets the workload go. Objects in members
// that cannot be reached stay behind (the Event names them), and so do
// objects under the workload's name that are not the workload's.
func (r *Reconciler) deleteMemberObjects(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload) error {
	if !controllerutil.ContainsFinalizer(fw, Finalizer) {
		return nil
	}
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err == nil {
		var left, kept []string
		for _, e := range fw.Status.Clusters {
			conn, ok := r.Members.Get(e.Name)
			if !ok {
				left = append(left, e.Name)
				continue
			}
			held, err := readMemberObject(ctx, conn, tmpl, fw.Namespace, fw.Name)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return fmt.Errorf("reading the member object in cluster %s: %w", e.Name, err)
			}
			if conflict := conflictOf(string(tmpl.Kind), held, fw); conflict != "" {
				ctrl.LoggerFrom(ctx).Info("not deleting a member object that is not this workload's", "cluster", e.Name, "conflict", conflict)
				kept = append(kept, e.Name)
				continue
			}
			if err := r.deleteMemberObject(ctx, conn, tmpl, held); err != nil {
				return fmt.Errorf("cluster %s: %w", e.Name, err)
			}
		}
		if len(left) > 0 {
			r.Recorder.Eventf(fw, nil, corev1.EventTypeWarning, "MemberObjectsLeft", "Delete",
				"no connection to %s: their member objects were not deleted", strings.Join(left, ", "))
		}
		if len(kept) > 0 {
			r.Recorder.Eventf(fw, nil, corev1.EventTypeNormal, "ForeignMemberObjectsKept", "Delete",
				"%s %s/%s in %s is not this workload's (label %s): left in place", tmpl.Kind, fw.Namespace, fw.Name,
				strings.Join(kept, ", "), fleetv1alpha1.LabelFederatedWorkload)
		}
	}
	controllerutil.RemoveFinalizer(fw, Finalizer)
	return client.IgnoreNotFound(r.Client.Update(ctx, fw))
}

// report writes status and, when grants changed, an Event.
func (r *Reconciler) report(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, tmpl *member.Template, rd *round, plan align.Plan) error {
	var views []memberView
	for _, m := range rd.members {
		if !m.gone {
			views = append(views, m.memberView)
		}
	}
	s := summarize(tmpl.Kind.Unit(), fw.Spec.Replicas, fw.Spec.RolloutStrategy.Paused, views, plan)
	r.recordConflicts(ctx, fw, rd)
	if changed := changedGrants(fw.Status.Clusters, s.Clusters); len(changed) > 0 {
		r.Recorder.Eventf(fw, nil, corev1.EventTypeNormal, "Granted", "Align", "%s", truncate(strings.Join(changed, "; "), 1024))
	}
	before := fw.Status.DeepCopy()
	fw.Status.ObservedGeneration = fw.Generation
	fw.Status.UpdateRevision = tmpl.Revision
	fw.Status.Replicas, fw.Status.UpdatedReplicas, fw.Status.AvailableReplicas = s.Replicas, s.Updated, s.Available
	fw.Status.Clusters = s.Clusters
	for _, c := range s.Conditions {
		c.ObservedGeneration = fw.Generation
		meta.SetStatusCondition(&fw.Status.Conditions, c)
	}
	if equalStatus(before, &fw.Status) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, fw); err != nil {
		return fmt.Errorf("writing status of FederatedWorkload %s/%s: %w", fw.Namespace, fw.Name, err)
	}
	return nil
}

// recordConflicts logs and records an Event for each member whose conflict
// appeared, changed or went away since the status last written: once per
// change, not every round. A member that could not be read this round
// (status stale) has not shown that its conflict went away.
func (r *Reconciler) recordConflicts(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, rd *round) {
	before := make(map[string]string)
	for _, c := range fw.Status.Clusters {
		if strings.HasPrefix(c.Waiting, conflictPrefix) {
			before[c.Name] = c.Waiting
		}
	}
	log := ctrl.LoggerFrom(ctx)
	for _, v := range rd.members {
		if v.gone {
			continue
		}
		was, had := before[v.Name]
		switch {
		case v.Conflict != "" && truncate(v.Conflict, maxWaiting) != was:
			log.Info("member object is not this workload's: left alone", "cluster", v.Name, "conflict", v.Conflict)
			r.Recorder.Eventf(fw, nil, corev1.EventTypeWarning, fleetv1alpha1.ReasonMemberObjectConflict, "Apply", "cluster %s: %s", v.Name, v.Conflict)
		case v.Conflict == "" && had && v.conn != nil:
			log.Info("member object conflict cleared", "cluster", v.Name)
			r.Recorder.Eventf(fw, nil, corev1.EventTypeNormal, "MemberObjectConflictCleared", "Apply",
				"cluster %s: no object of another owner holds the workload's name any more", v.Name)
		}
	}
}

func equalStatus(a, b *fleetv1alpha1.FederatedWorkloadStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// changedGrants lists the members whose grant differs from the last status.
func changedGrants(before, after []fleetv1alpha1.FederatedClusterStatus) []string {
	old := make(map[string]fleetv1alpha1.MemberGrant, len(before))
	for _, c := range before {
		old[c.Name] = c.Grant
	}
	var out []string
	for _, c := range after {
		if g, ok := old[c.Name]; !ok || g != c.Grant {
			out = append(out, fmt.Sprintf("%s: started=%t maxUnavailable=%d maxSurge=%d partition=%d paused=%t share=%d",
				c.Name, c.Grant.Started, c.Grant.MaxUnavailable, c.Grant.MaxSurge, c.Grant.Partition, c.Grant.Paused, c.DesiredReplicas))
		}
	}
	return out
}

// stuck reports that no round can be planned, and why.
func (r *Reconciler) stuck(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, reason, msg string) error {
	before := fw.Status.DeepCopy()
	fw.Status.ObservedGeneration = fw.Generation
	meta.SetStatusCondition(&fw.Status.Conditions, metav1.Condition{
		Type: string(fleetv1alpha1.FederatedWorkloadProgressing), Status: metav1.ConditionFalse,
		Reason: reason, Message: truncate(msg, 1024), ObservedGeneration: fw.Generation,
	})
	if equalStatus(before, &fw.Status) {
		return nil
	}
	_, err := requeue.OnConflict(ctrl.Result{}, r.Client.Status().Update(ctx, fw))
	return err
}

func nestedInt(u *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, path...)
	return v
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

// logRound writes, at debug level, what one round saw of each member and what
// it granted and charged: the record a budget question is answered from.
func logRound(ctx context.Context, rd *round, plan align.Plan) {
	log := ctrl.LoggerFrom(ctx).V(1)
	if !log.Enabled() {
		return
	}
	plans := make(map[string]align.MemberPlan, len(plan.Members))
	for _, mp := range plan.Members {
		plans[mp.Name] = mp
	}
	var ms []string
	for _, m := range rd.members {
		mp := plans[m.Name]
		st := m.Status
		ms = append(ms, fmt.Sprintf("%s[reach=%d share=%d/%d status=%d+%dt/%du/%dua/%da settling=%t last=%s seen=%s grant=%s charged=%du/%ds wait=%q]",
			m.Name, m.Reach, m.Desired, m.Target, st.Replicas, st.Terminating, st.Updated, st.UpdatedAvailable, st.Available, st.Settling,
			grantString(m.last), grantString(m.seen), grantString(&mp.Grant), mp.Unavailable, mp.Surge, mp.Waiting))
	}
	log.Info("round planned", "members", strings.Join(ms, " "),
		"charged", fmt.Sprintf("%du/%ds of %du/%ds", plan.Unavailable, plan.Surge, plan.MaxUnavailable, plan.MaxSurge),
		"granted", fmt.Sprintf("%d of %d", plan.Granted, plan.AllowedUpdated), "done", plan.Done)
}

func grantString(g *align.Grant) string {
	if g == nil {
		return "-"
	}
	return fmt.Sprintf("{started=%t mu=%d ms=%d partition=%d paused=%t}", g.Started, g.MaxUnavailable, g.MaxSurge, g.Partition, g.Paused)
}
