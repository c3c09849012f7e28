package round

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/division"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// MemberView is one member as a round saw it.
type MemberView struct {
	Name string
	// Desired is what the member object holds (spec.replicas), Target its
	// share under the division now; shares move within the rollout budgets.
	// After the round Desired is what the round wrote.
	Desired, Target int32
	Status          align.Status
	Reach           align.Reach
	// Leaving: the cluster left the placement; its units move to the others.
	Leaving bool
	// Last is the grant the member object holds; Observed what the member may
	// still act on when it has not observed Last.
	Last, Observed *align.Grant
	// StillActing is what the member may act on besides the grant this round
	// wrote (align.StillActing).
	StillActing *align.Grant
	// Conflict says why the object under the workload's name in the member is
	// not the workload's (conflictOf); "" when it is, or there is none.
	Conflict string
}

// observed is one member as read this round.
type observed struct {
	MemberView
	kind member.Kind
	// reached: the member answered the read of its object this round.
	reached bool
	// held is the member object as read, nil when it does not exist, is not
	// the workload's (Conflict) or the member was not reached.
	held *unstructured.Unstructured
	// gone: a member that left the placement and whose object is deleted (or
	// can never be); it is no longer reported.
	gone bool
	// holdFrom is another member's object whose pod template a member object
	// about to be created takes while it is not started.
	holdFrom *unstructured.Unstructured
}

func (m *observed) alignMember() align.Member {
	return align.Member{
		Name: m.Name, Kind: m.kind.Align(), Desired: m.Desired, Target: m.Target, Status: m.Status,
		Reach: m.Reach, Last: m.Last, Observed: m.Observed,
	}
}

func alignMembers(ms []*observed) []align.Member {
	out := make([]align.Member, 0, len(ms))
	for _, m := range ms {
		if !m.gone {
			out = append(out, m.alignMember())
		}
	}
	return out
}

// recordStillActing keeps, for each member the plan grants, what it may act
// on besides that grant until it observes it: the next rounds charge it.
func recordStillActing(ms []*observed, plan align.Plan) {
	grants := make(map[string]align.Grant, len(plan.Members))
	for _, mp := range plan.Members {
		grants[mp.Name] = mp.Grant
	}
	for _, m := range ms {
		if g, ok := grants[m.Name]; ok && !m.gone && m.Conflict == "" {
			am := m.alignMember()
			m.StillActing = align.StillActing(&am, g)
		}
	}
}

// scope is which clusters a round divides the replicas over, or why it
// cannot be planned.
type scope struct {
	stuck fleetv1alpha1.FederatedWorkloadReason
	why   string
	mcs   map[string]*fleetv1alpha1.MemberCluster
	// entries are the members of the status, by name.
	entries map[string]*fleetv1alpha1.FederatedClusterStatus
	// divided are the clusters the replicas are divided over, sorted, and
	// shares their shares; leaving the clusters of the status that left.
	divided []string
	shares  []int32
	leaving []string
}

// clusters are all the clusters a round looks at.
func (sc scope) clusters() []string {
	return append(slices.Clone(sc.divided), sc.leaving...)
}

func scopeOf(in Input) scope {
	fw := in.Workload
	switch {
	case in.Placement == nil:
		return scope{stuck: fleetv1alpha1.FederatedWorkloadReasonPlacementNotFound, why: fmt.Sprintf("Placement %s not found", fw.Spec.PlacementRef.Name)}
	case len(in.Placed) == 0:
		// An empty union is more often a placement being recreated than a wish
		// to remove the workload everywhere: keep what runs.
		return scope{stuck: fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced,
			why: "the placement holds no cluster; member objects are kept as they are until it places some"}
	case len(in.Placed) > fleetv1alpha1.MaxFederatedClusters:
		return scope{stuck: fleetv1alpha1.FederatedWorkloadReasonTooManyClusters,
			why: fmt.Sprintf("the placement holds %d clusters; at most %d are supported", len(in.Placed), fleetv1alpha1.MaxFederatedClusters)}
	}
	sc := scope{
		mcs:     make(map[string]*fleetv1alpha1.MemberCluster, len(in.MemberClusters)),
		entries: make(map[string]*fleetv1alpha1.FederatedClusterStatus, len(fw.Status.Clusters)),
	}
	clusterLabels := make(map[string]map[string]string, len(in.MemberClusters))
	for i := range in.MemberClusters {
		mc := &in.MemberClusters[i]
		sc.mcs[mc.Name], clusterLabels[mc.Name] = mc, mc.Labels
	}
	for i := range fw.Status.Clusters {
		sc.entries[fw.Status.Clusters[i].Name] = &fw.Status.Clusters[i]
	}
	sc.divided = dividedClusters(fw, in.Placed, eligibleClusters(in), sc.entries, sc.mcs, in.Now)
	weights, err := division.Weights(fw.Spec.Division.Weights, clusterLabels, sc.divided)
	if err != nil {
		return scope{stuck: fleetv1alpha1.FederatedWorkloadReasonInvalidDivision, why: err.Error()}
	}
	sc.shares = division.Shares(fw.Spec.Replicas, sc.divided, weights)
	for name := range sc.entries {
		if !slices.Contains(sc.divided, name) {
			sc.leaving = append(sc.leaving, name)
		}
	}
	slices.Sort(sc.leaving)
	return sc
}

// eligibleClusters are the clusters the placement may reach, Ready or not:
// members of the cluster sets bound to its namespace that match its selector.
// Only these may keep a share while briefly out of the placement, so a
// namespace whose binding is removed reaches no cluster through it.
func eligibleClusters(in Input) []string {
	sel, err := fleet.Select(fleet.SelectionInput{Placement: in.Placement, Sets: in.Sets, Bindings: in.Bindings, Members: in.MemberClusters})
	if err != nil {
		return nil // the placement selects nothing either
	}
	return sel.Eligible
}

// dividedClusters are the clusters the replicas are divided over: the
// placement's, and those it dropped only because they stopped answering (still
// in the status, still eligible for the placement, not Ready for less than
// memberLostTimeoutSeconds). Placements select Ready members only, so
// without the second kind a member that blinks would hand its share to the
// others at once; it keeps it, and its charge, until it is lost. A member that
// is Ready again but not yet placed again is kept for the same reason.
func dividedClusters(fw *fleetv1alpha1.FederatedWorkload, placed, eligible []string,
	entries map[string]*fleetv1alpha1.FederatedClusterStatus, mcs map[string]*fleetv1alpha1.MemberCluster, now time.Time) []string {
	out := slices.Clone(placed)
	timeout := time.Duration(lostTimeout(fw)) * time.Second
	for name := range entries {
		mc := mcs[name]
		if slices.Contains(placed, name) || mc == nil || !mc.DeletionTimestamp.IsZero() || !slices.Contains(eligible, name) {
			continue
		}
		if lostFor(mc, now) < timeout {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// observeMembers turns what was read of every member into the planner's view.
func observeMembers(in Input, tmpl *member.Template, sc scope) []*observed {
	fw := in.Workload
	sameRevision := fw.Status.UpdateRevision == tmpl.Revision
	// A workload that has written no member object yet is created at its
	// shares at once; after that, shares move within the rollout budgets.
	fresh := len(fw.Status.Clusters) == 0
	var ms []*observed
	for i, name := range sc.divided {
		m := observeMember(in, tmpl, name, sc.mcs[name], sc.entries[name], sameRevision)
		m.Target = sc.shares[i]
		m.Desired = heldReplicas(m, sc.entries[name])
		if fresh {
			m.Desired = m.Target
		}
		ms = append(ms, m)
	}
	holdBackFreshMembers(tmpl, ms)
	var staying []MemberView
	for _, m := range ms {
		staying = append(staying, m.MemberView)
	}
	grown := othersGrown(staying)
	for _, name := range sc.leaving {
		e := sc.entries[name]
		m := observeMember(in, tmpl, name, sc.mcs[name], e, sameRevision)
		m.Leaving = true
		m.Desired, m.Target = heldReplicas(m, e), 0
		switch {
		case m.reached && m.held == nil:
			// nothing of the workload's left in the member (an object that is
			// not the workload's stays where it is)
			m.gone = true
		case !m.reached && m.Reach == align.Lost:
			// Written off (its units count as down and as gone) until the
			// others have taken its share over; then forgotten, as it cannot be
			// reached to clean up (see docs/fleet.md).
			m.gone = grown
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *observed) int { return strings.Compare(a.Name, b.Name) })
	return ms
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
		if m.reached && m.held == nil && m.Conflict == "" {
			m.Last = &align.Grant{}
			m.holdFrom = old
		}
	}
}

// othersGrown: every placed member reports its whole share available and is
// current, so the units of a leaving cluster may go.
func othersGrown(views []MemberView) bool {
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
		v, _, _ := unstructured.NestedInt64(m.held.Object, "spec", "replicas")
		return int32(max(0, v))
	}
	return 0
}

// observeMember reads one member: its reachability, its object and status.
func observeMember(in Input, tmpl *member.Template, name string, mc *fleetv1alpha1.MemberCluster,
	entry *fleetv1alpha1.FederatedClusterStatus, sameRevision bool) *observed {
	m := &observed{MemberView: MemberView{Name: name}, kind: tmpl.Kind}
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
	if obs := in.Members[name]; ready(mc) && obs.Read {
		obj := obs.Object
		if obj == nil {
			m.reached = true
			// A new member object is no rollout: it starts on the current template.
			m.Last = &align.Grant{Started: true}
			m.Status = align.Status{}
			return m
		}
		if conflict := conflictOf(string(tmpl.Kind), obj, in.Workload); conflict != "" {
			m.conflicted(conflict)
			return m
		}
		m.reached, m.held = true, obj
		st := member.StatusOf(obj, tmpl.Revision)
		if tmpl.Kind == member.Deployment {
			st = withReplicaSets(obs, obj, st, tmpl.Revision)
		}
		m.Status = st.Status
		m.Last = member.HeldGrant(tmpl.Kind, obj, tmpl.Revision)
		if st.Stale {
			// Not yet at its object's grant: it may act on what it held
			// before, and on the recorded grant when the object does not
			// hold it (the write failed, or another writer changed it).
			m.Reach = align.Stale
			m.Observed = stillActing
			if recorded != nil && (m.Last == nil || *recorded != *m.Last) {
				m.Observed = align.Widest(m.Observed, recorded)
			}
		}
		return m
	}
	// Not reachable: it keeps the grant it was last given, and its last
	// reported counts.
	m.Reach = align.Stale
	m.Last, m.Observed = recorded, stillActing
	if m.Last == nil && tmpl.Kind == member.Deployment {
		m.Last = &align.Grant{}
	}
	if lostFor(mc, in.Now) >= time.Duration(lostTimeout(in.Workload))*time.Second {
		m.Reach = align.Lost
	}
	return m
}

// withReplicaSets folds in what a Deployment member's ReplicaSets ask for
// (see member.WithReplicaSets). When they could not be read the status is
// taken as settling: its grant is kept, not cut down to counts that may trail.
func withReplicaSets(obs Observed, dep *unstructured.Unstructured, st member.ObservedStatus, rev string) member.ObservedStatus {
	if !obs.ReplicaSetsRead {
		st.Settling = true
		return st
	}
	return member.WithReplicaSets(st, dep, obs.ReplicaSets, rev)
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
func (m *observed) conflicted(conflict string) {
	m.reached, m.held, m.holdFrom = true, nil, nil
	m.Conflict = conflict
	m.Reach = align.Stale
	m.Status = align.Status{}
	m.Last, m.Observed = nil, nil
	if m.kind == member.Deployment {
		m.Last = &align.Grant{}
	}
}

// ready: the MemberCluster's Ready condition is True.
func ready(mc *fleetv1alpha1.MemberCluster) bool {
	return mc != nil && meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
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

func alignGrant(g fleetv1alpha1.MemberGrant) align.Grant {
	return align.Grant{Started: g.Started, Partition: g.Partition, MaxUnavailable: g.MaxUnavailable, MaxSurge: g.MaxSurge, Paused: g.Paused}
}
