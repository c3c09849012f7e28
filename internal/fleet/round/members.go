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
	"github.com/lockstep-dev/lockstep/api/limit"
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
	// Unknown: the member was not read and nothing says what it was last
	// given (the status was lost): it is taken to hold the most it could,
	// under the widest grant it could have been given (takeUnknownAtMost).
	Unknown bool
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
	// memory is what the round knows of the hub's last decision for it.
	memory memory
	// actingUnknown: a stale member whose object carries no record while the
	// status was lost: what it may still act on is unknown.
	actingUnknown bool
}

// memory is what a round knows of the hub's last decision for a member: read
// back from the record its object carries (member.Record), else from its
// entry in status.clusters (an object written by an older hub, or a member
// not read this round), else, for an object of the workload's, its
// spec.replicas. The record comes first: it is what the member object holds,
// written in the same request as the grant, while the status is written
// just before the members (it may hold a grant whose write then failed) and
// may be lost or edited.
type memory struct {
	// share is the replicas last given, when hasShare.
	share    int32
	hasShare bool
	// recorded is the grant last written and acting what the member could
	// still act on besides it then, both for the template revision planned
	// now (nil when decided for another).
	recorded, acting *align.Grant
}

// rememberedIn is what a status entry remembers; sameRevision: the status
// was written for the template planned now.
func rememberedIn(entry *fleetv1alpha1.FederatedClusterStatus, sameRevision bool) memory {
	if entry == nil {
		return memory{}
	}
	mem := memory{share: entry.DesiredReplicas, hasShare: true}
	if sameRevision {
		g := alignGrant(entry.Grant)
		mem.recorded = &g
		if entry.StillActing != nil {
			a := alignGrant(*entry.StillActing)
			mem.acting = &a
		}
	}
	return mem
}

// rememberedBy is what a member object's record remembers, for template
// revision rev.
func rememberedBy(rec member.Record, rev string) memory {
	mem := memory{share: rec.Share, hasShare: true}
	if rec.Revision == rev {
		g := rec.Grant
		mem.recorded, mem.acting = &g, rec.StillActing
	}
	return mem
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
	// statusLost: the status lists no member, yet an object of the
	// workload's was read in a member (or no placed cluster answered): the
	// status was lost (replaced by a status update, or not restored with the
	// workload), not never written. The round then rebuilds what it held
	// from the member objects, and takes the clusters it could not read at
	// the most they could hold.
	statusLost bool
	// divided are the clusters the replicas are divided over, sorted, and
	// shares their shares; leaving the clusters that left and may still hold
	// some: those of the status, and those an object of the workload's was
	// read in.
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
	// The clusters that may hold a share: those of the status, and those
	// where an object of the workload's was read (with the status, these are
	// the same; without it, ReadsOf read every Ready member to find them).
	holding := make(map[string]bool, len(sc.entries))
	for name := range sc.entries {
		holding[name] = true
	}
	answered := func(name string) bool { return ready(sc.mcs[name]) && in.Members[name].Read }
	found := false
	for name, obs := range in.Members {
		if answered(name) && obs.Object != nil && ownedBy(obs.Object, fw, name) {
			holding[name], found = true, true
		}
	}
	// With no member listed the workload is new when no object of its own
	// is found and a placed cluster answered without one; else its status
	// was lost (a new workload none of whose clusters answered is taken as
	// such too: nothing can be written to it anyway).
	sc.statusLost = len(sc.entries) == 0 && (found || !slices.ContainsFunc(in.Placed, answered))
	if sc.statusLost {
		// Without the status nothing says whether a cluster the round could
		// not read (Ready but not answering, or not Ready since a probe) holds
		// an object of the workload's: it is taken to, until a read says
		// otherwise or it is lost (see takeUnknownAtMost).
		bound := boundClusters(in)
		for name, mc := range sc.mcs {
			if !answered(name) && bound[name] && mc.DeletionTimestamp.IsZero() && (ready(mc) || probedNotReady(mc)) {
				holding[name] = true
			}
		}
	}
	sc.divided = dividedClusters(fw, in.Placed, eligibleClusters(in), holding, sc.mcs, in.Now)
	weights, err := division.Weights(fw.Spec.Division.Weights, clusterLabels, sc.divided)
	if err != nil {
		return scope{stuck: fleetv1alpha1.FederatedWorkloadReasonInvalidDivision, why: err.Error()}
	}
	sc.shares = division.Shares(fw.Spec.Replicas, sc.divided, weights)
	for name := range holding {
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

// boundClusters are the members, Ready or not, of the cluster sets bound to
// the workload's namespace: whatever the placement's selector said then, the
// hub can have written the workload's objects to no other cluster. (A
// binding removed since leaves its objects where they are, unread.)
func boundClusters(in Input) map[string]bool {
	pl := in.Placement.DeepCopy()
	pl.Spec.ClusterSelector, pl.Spec.ClusterSets = nil, nil
	sel, err := fleet.Select(fleet.SelectionInput{Placement: pl, Sets: in.Sets, Bindings: in.Bindings, Members: in.MemberClusters})
	if err != nil {
		return nil
	}
	out := make(map[string]bool, len(sel.Eligible))
	for _, name := range sel.Eligible {
		out[name] = true
	}
	return out
}

// dividedClusters are the clusters the replicas are divided over: the
// placement's, and those it dropped only because they stopped answering
// (holding a share, still eligible for the placement, not Ready for less than
// memberLostTimeoutSeconds). Placements select Ready members only, so
// without the second kind a member that blinks would hand its share to the
// others at once; it keeps it, and its charge, until it is lost. A member that
// is Ready again but not yet placed again is kept for the same reason.
// holding are the clusters that may hold a share (see scopeOf).
func dividedClusters(fw *fleetv1alpha1.FederatedWorkload, placed, eligible []string,
	holding map[string]bool, mcs map[string]*fleetv1alpha1.MemberCluster, now time.Time) []string {
	out := slices.Clone(placed)
	timeout := time.Duration(lostTimeout(fw)) * time.Second
	for name := range holding {
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
	// A workload that has written no member object yet is created at its
	// shares at once; after that, shares move within the rollout budgets. A
	// status that lists no member is a new workload only when no object of
	// its own was found either (else the status was lost).
	fresh := len(sc.entries) == 0 && !sc.statusLost
	var staying, leaving []*observed
	for i, name := range sc.divided {
		m := observeMember(in, tmpl, sc, name)
		m.Target = sc.shares[i]
		switch {
		case fresh:
			m.Desired = m.Target
		case m.memory.hasShare:
			m.Desired = m.memory.share
		}
		staying = append(staying, m)
	}
	for _, name := range sc.leaving {
		m := observeMember(in, tmpl, sc, name)
		m.Leaving = true
		m.Desired, m.Target = m.memory.share, 0
		leaving = append(leaving, m)
	}
	ms := slices.Concat(staying, leaving)
	takeUnknownAtMost(ms, budgetOf(fw), fw.Spec.Replicas)
	holdBackFreshMembers(tmpl, staying)
	var views []MemberView
	for _, m := range staying {
		views = append(views, m.MemberView)
	}
	grown := othersGrown(views)
	for _, m := range leaving {
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
	}
	slices.SortFunc(ms, func(a, b *observed) int { return strings.Compare(a.Name, b.Name) })
	return ms
}

// takeUnknownAtMost takes what nothing remembers at the most it could be. A
// member Unknown (not read while the status is lost) is taken to hold as
// many units as the fleet may, replicas + maxSurge less what the members
// known hold, and at least its share now: overstated, its units leave the
// others less room to grow, and are charged, all unavailable, against the
// budget; understated, the others could grow into units it still runs. Its
// grant, and what a stale member whose object carries no record may still
// act on, are taken at their widest (widestGrant).
func takeUnknownAtMost(ms []*observed, b limit.Budget, replicas int32) {
	known := int32(0)
	for _, m := range ms {
		if !m.Unknown {
			known += m.Desired
		}
	}
	for _, m := range ms {
		if m.Unknown {
			m.Desired = max(m.Target, replicas+b.MaxSurge-known)
			w := widestGrant(m.kind, m.Desired, b)
			m.Last = &w
		}
		if m.actingUnknown {
			w := widestGrant(m.kind, m.Desired, b)
			m.Observed = align.Widest(m.Observed, &w)
		}
	}
}

// widestGrant is the widest grant a member of kind k holding desired units
// could have been given: every one of its units allowed to update and to be
// down at once, and, for a Deployment, all of the fleet's surge. Charged for
// it, the member leaves no budget to the others that it might be using.
func widestGrant(k member.Kind, desired int32, b limit.Budget) align.Grant {
	if k == member.Deployment {
		return align.Grant{Started: true, MaxUnavailable: desired, MaxSurge: b.MaxSurge}
	}
	return align.Grant{Started: true}
}

// budgetOf is the workload's global budget in units; zero when the strategy
// does not resolve (the planner then refuses the round).
func budgetOf(fw *fleetv1alpha1.FederatedWorkload) limit.Budget {
	s := member.StrategyOf(fw)
	b, err := limit.ResolveBudget(&s.MaxUnavailable, &s.MaxSurge, s.Replicas)
	if err != nil {
		return limit.Budget{}
	}
	return b
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

// observeMember reads one member: its reachability, its object and status,
// and what the round knows of the hub's last decision for it (memory).
func observeMember(in Input, tmpl *member.Template, sc scope, name string) *observed {
	mc, entry := sc.mcs[name], sc.entries[name]
	m := &observed{MemberView: MemberView{Name: name}, kind: tmpl.Kind}
	// What the status remembers: all there is of a member not read, and the
	// fallback for an object without a record.
	fallback := rememberedIn(entry, in.Workload.Status.UpdateRevision == tmpl.Revision)
	if obs := in.Members[name]; ready(mc) && obs.Read {
		obj := obs.Object
		if obj == nil {
			m.reached = true
			// A new member object is no rollout: it starts on the current
			// template. It holds nothing, whatever the status says of it, so
			// its share grows from 0 within the budgets (a new workload's
			// members start at their shares, see observeMembers).
			m.Last = &align.Grant{Started: true}
			return m
		}
		if conflict := conflictOf(string(tmpl.Kind), obj, in.Workload, name); conflict != "" {
			m.conflicted(conflict)
			m.memory = memory{share: fallback.share, hasShare: fallback.hasShare}
			return m
		}
		m.reached, m.held = true, obj
		rec, recorded := member.RecordOf(obj)
		if recorded {
			m.memory = rememberedBy(rec, tmpl.Revision)
		} else {
			m.memory = fallback
			if !m.memory.hasShare {
				// An edit by someone else is overwritten, not taken as a share;
				// with nothing else to go by, the object's replicas are its share.
				v, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
				m.memory.share, m.memory.hasShare = int32(max(0, v)), true
			}
		}
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
			// Its status may also predate the template the object holds: the
			// units it counts as updated may run the one before, and be taken
			// down to update. None is taken as updated and available, so they
			// are charged as units that may yet go down.
			m.Status.UpdatedAvailable = 0
			m.Observed = m.memory.acting
			if r := m.memory.recorded; r != nil && (m.Last == nil || *r != *m.Last) {
				m.Observed = align.Widest(m.Observed, r)
			}
			// Neither a record nor the status says what it held before.
			m.actingUnknown = sc.statusLost && entry == nil && !recorded
		}
		return m
	}
	// Not reachable: it keeps the grant it was last given, and its last
	// reported counts.
	m.memory = fallback
	m.Reach = align.Stale
	if entry != nil {
		m.Status = align.Status{Replicas: entry.Replicas, Updated: entry.UpdatedReplicas, Available: entry.AvailableReplicas}
		m.Status.UpdatedAvailable = min(m.Status.Updated, max(0, m.Status.Available-(m.Status.Replicas-m.Status.Updated)))
	}
	m.Last, m.Observed = fallback.recorded, fallback.acting
	if m.Last == nil && tmpl.Kind == member.Deployment {
		m.Last = &align.Grant{}
	}
	// Without the status nothing says what it holds (chargeUnknown).
	m.Unknown = sc.statusLost && entry == nil
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

// probedNotReady: the MemberCluster has been probed and is not Ready now.
func probedNotReady(mc *fleetv1alpha1.MemberCluster) bool {
	c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
	return c != nil && c.Status != metav1.ConditionTrue
}

// ready: the MemberCluster's Ready condition is True.
func ready(mc *fleetv1alpha1.MemberCluster) bool {
	return mc != nil && meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
}

// nextLoss is how soon the first of clusters that is not Ready reaches the
// lost timeout (memberLostTimeoutSeconds), 0 when none is on its way there.
func nextLoss(fw *fleetv1alpha1.FederatedWorkload, clusters []string, mcs map[string]*fleetv1alpha1.MemberCluster, now time.Time) time.Duration {
	timeout := time.Duration(lostTimeout(fw)) * time.Second
	var next time.Duration
	for _, name := range clusters {
		mc := mcs[name]
		if mc == nil || !probedNotReady(mc) {
			continue
		}
		if left := timeout - lostFor(mc, now); left > 0 && (next == 0 || left < next) {
			next = left
		}
	}
	return next
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
