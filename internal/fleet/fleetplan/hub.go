package fleetplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// epoch is the simulated clock's start; a round is one start-up time later
// than the one before.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// hub is the hub as the simulation plays it: the FederatedWorkload (its
// status is what the last round wrote), what places it, and the members.
type hub struct {
	in Input
	// placed are the clusters the placement's decisions hold now.
	placed    []string
	fw        *fleetv1alpha1.FederatedWorkload
	placement *fleetv1alpha1.Placement
	sets      []fleetv1alpha1.MemberClusterSet
	bindings  []fleetv1alpha1.MemberClusterSetBinding
	clusters  []fleetv1alpha1.MemberCluster
	members   []*fleetsim.Member
	byName    map[string]*fleetsim.Member
	rounds    int
	// wave counts the rounds on the changed workload (0 before the change),
	// as Input.Lose counts them.
	wave    int
	changed bool
	// unreachable are the clusters the hub cannot reach (Input.Lose), and
	// failed the writes to them a round made (none: it writes only to the
	// members it read).
	unreachable map[string]bool
	failed      []round.Write
	// changedAt is the clock of the first round on the changed workload;
	// recheck: the last round's stages change by themselves later (a soak,
	// a deadline, a gate's soak).
	changedAt time.Time
	recheck   bool
	// analyses are the scripted results not yet measured
	analyses []gate.Scripted
}

func newHub(in Input) *hub {
	h := &hub{in: in, byName: map[string]*fleetsim.Member{}, unreachable: map[string]bool{}, analyses: slices.Clone(in.Analyses)}
	h.placement, h.sets, h.bindings = in.Placement, in.Sets, in.Bindings
	if h.placement == nil {
		h.placement, h.sets, h.bindings = defaultPlacement(workload(in.Workload, 0))
	}
	all := slices.Clone(in.Clusters)
	for _, c := range in.Before {
		if !slices.ContainsFunc(all, func(x Cluster) bool { return x.Name == c.Name }) {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range all {
		h.clusters = append(h.clusters, fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: c.Labels},
			Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
				Type: string(fleetv1alpha1.MemberClusterReady), Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.MemberClusterReasonReachable),
			}}},
		})
		m := fleetsim.NewMember(c.Name)
		m.Late = in.Late[c.Name]
		h.members = append(h.members, m)
		h.byName[c.Name] = m
	}
	return h
}

// workload is fw as the hub would read it: in a namespace, at a generation.
func workload(fw *fleetv1alpha1.FederatedWorkload, generation int64) *fleetv1alpha1.FederatedWorkload {
	w := fw.DeepCopy()
	if w.Namespace == "" {
		w.Namespace = metav1.NamespaceDefault
	}
	w.Generation = generation
	return w
}

// rest brings the members to rest on from: rounds of the hub on a new
// workload, each followed by the members acting on it, until its planner says
// done and the round moved nothing.
func (h *hub) rest(from *fleetv1alpha1.FederatedWorkload) error {
	h.fw = workload(from, 1)
	h.place(h.in.Before)
	// Each report a late member makes reaches the hub that many rounds on.
	most := maxSetupRounds
	for _, n := range h.in.Late {
		most = max(most, maxSetupRounds*(n+1))
	}
	for range most {
		before := h.state()
		out, err := h.round()
		if err != nil {
			return err
		}
		if out.Stuck != "" {
			return fmt.Errorf("the hub cannot plan a round: %s", progressingMessage(out.Status))
		}
		if err := h.act(); err != nil {
			return err
		}
		h.settle()
		if out.Plan.Done && h.state() == before && !h.pending() {
			return nil
		}
	}
	return fmt.Errorf("the members did not come to rest on the current FederatedWorkload in %d rounds", most)
}

// change is the user's edit: the workload after it, with the status the hub
// wrote last and the next generation.
func (h *hub) change(to *fleetv1alpha1.FederatedWorkload) {
	var st fleetv1alpha1.FederatedWorkloadStatus
	gen := int64(1)
	if h.fw != nil {
		st, gen = h.fw.Status, h.fw.Generation+1
	}
	h.fw = workload(to, gen)
	h.fw.Status = st
	h.place(nil)
	h.changed = true
}

// place makes the placement's decisions hold clusters (nil: Input.Clusters);
// the others no longer match it.
func (h *hub) place(clusters []Cluster) {
	if clusters == nil {
		clusters = h.in.Clusters
	}
	h.placed = nil
	for _, c := range clusters {
		h.placed = append(h.placed, c.Name)
	}
	slices.Sort(h.placed)
	for i := range h.clusters {
		mc := &h.clusters[i]
		if slices.Contains(h.placed, mc.Name) {
			delete(mc.Labels, leftLabel)
		} else if h.in.Before != nil {
			mc.Labels = merged(mc.Labels, map[string]string{leftLabel: "true"})
		}
	}
}

func merged(into, from map[string]string) map[string]string {
	out := make(map[string]string, len(into)+len(from))
	maps.Copy(out, into)
	maps.Copy(out, from)
	return out
}

// round runs one round of the hub, reading every member it can reach, and
// delivers its writes: the status it computes is the workload's from now on.
// A round that cannot be planned (Output.Stuck) writes nothing.
func (h *hub) round() (round.Output, error) {
	now := epoch.Add(time.Duration(h.rounds) * h.in.Startup)
	h.rounds++
	if h.changed {
		h.wave++
		h.cutOff(now)
	}
	// The MemberClusters as they are now: a round kept by OnRound keeps them
	// so (cutOff replaces a condition list, never changes one).
	in := round.Input{
		Workload: h.fw, Placement: h.placement, Sets: h.sets, Bindings: h.bindings, MemberClusters: slices.Clone(h.clusters),
		Now: now, RolloutPoll: h.in.Startup, Resync: h.in.Startup,
	}
	in.Placed = h.placedNow()
	groups, err := h.groups(in.Placed)
	if err != nil {
		return round.Output{}, err
	}
	in.Groups = groups
	if h.wave > 0 {
		if h.wave == 1 {
			h.changedAt = now
		}
		h.approve(now)
		h.measure(now)
		for name, w := range h.in.Fail {
			if w == h.wave {
				h.byName[name].Frozen = true
			}
		}
	}
	reads := round.ReadsOf(in)
	in.Members = make(map[string]round.Observed, len(reads.Clusters))
	for _, name := range reads.Clusters {
		if h.unreachable[name] {
			// A read that fails: the controller leaves the member out of
			// Members, as it does any member it could not read (observe).
			continue
		}
		m := h.byName[name]
		obs := round.Observed{Read: true, Object: m.Get()}
		if reads.ReplicaSets && obs.Object != nil {
			obs.ReplicaSets, obs.ReplicaSetsRead = m.ReplicaSets(), true
		}
		in.Members[name] = obs
	}
	out := round.Plan(in)
	for _, m := range h.members {
		m.Received = nil
	}
	h.failed = nil
	if out.Stuck == "" && len(out.Unwritable) > 0 {
		return out, fmt.Errorf("the hub cannot build member objects: %s", strings.Join(out.Unwritable, "; "))
	}
	for _, w := range out.Writes {
		if err := h.deliver(w); err != nil {
			return out, err
		}
	}
	h.report(in, out)
	h.fw.Status = out.Status
	// an analysis is measured only by a scripted result, at its own time
	h.recheck = out.Stages != nil && out.Stages.RecheckIn > 0 && !analysisRunning(out.Status.Gate)
	return out, nil
}

func analysisRunning(g *v1alpha1.GateStatus) bool {
	return g != nil && g.Reason == v1alpha1.ReasonAnalysisRunning
}

// measure gives the analysis of the stage gate the workload waits at the
// result Input.Analyses scripts for it, once due, as the hub's controller
// puts its measurement into the status the round reads.
func (h *hub) measure(now time.Time) {
	if g := h.fw.Status.Gate; analysisRunning(g) {
		var m *v1alpha1.AnalysisStatus
		if m, h.analyses = gate.TakeScripted(h.analyses, g.Name, now.Sub(h.changedAt), now); m != nil {
			g.Analysis = m
		}
	}
}

// groups are the decision groups of the placement's decisions over the
// placed clusters, as its controller cuts them (fleet.DesiredLayout).
func (h *hub) groups(placed []string) ([]stages.Group, error) {
	var cs []fleet.Cluster
	for _, name := range placed {
		cs = append(cs, fleet.Cluster{Name: name, Labels: h.memberCluster(name).Labels})
	}
	l, err := fleet.DesiredLayout(h.placement.Name, cs, h.placement.Spec.DecisionStrategy.GroupStrategy)
	if err != nil {
		return nil, fmt.Errorf("the placement's decision groups: %w", err)
	}
	decisions := make([]fleetv1alpha1.PlacementDecision, 0, len(l.Slices))
	for _, sl := range l.Slices {
		d := fleetv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: sl.Name, Labels: sl.Labels}}
		for _, c := range sl.Clusters {
			d.Status.Decisions = append(d.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: c})
		}
		decisions = append(decisions, d)
	}
	return round.DecisionGroups(decisions), nil
}

// approve approves the stage gate the workload waits at once Input.Approve
// says so, as kubectl lockstep approve would: the annotation names the
// revision and the gate.
func (h *hub) approve(now time.Time) {
	g := h.fw.Status.Gate
	if g == nil {
		return
	}
	if at, ok := h.in.Approve[g.Name]; ok && !now.Before(h.changedAt.Add(at)) {
		h.fw.Annotations = merged(h.fw.Annotations, map[string]string{
			v1alpha1.AnnotationApprovedRevision: v1alpha1.ApprovalOf(h.fw.Status.UpdateRevision, g.Name)})
	}
}

// report shows the round to Input.OnRound.
func (h *hub) report(in round.Input, out round.Output) {
	if h.in.OnRound == nil {
		return
	}
	rd := Round{In: in, Out: out, Wave: h.wave, Received: map[string][]fleetsim.Request{}, Failed: h.failed}
	for _, m := range h.members {
		if len(m.Received) > 0 {
			rd.Received[m.Name] = m.Received
		}
		if h.unreachable[m.Name] {
			rd.Unreachable = append(rd.Unreachable, m.Name)
		}
	}
	h.in.OnRound(rd)
}

// cutOff makes the clusters Input.Lose loses at this wave unreachable from
// now on: their MemberCluster turns Ready=False, reason Unreachable, since
// now, as the hub's probe (the MemberCluster controller) leaves a member that
// stops answering. The round reads that as the real hub's does.
func (h *hub) cutOff(now time.Time) {
	for i := range h.clusters {
		mc := &h.clusters[i]
		if w, ok := h.in.Lose[mc.Name]; !ok || w != h.wave {
			continue
		}
		h.unreachable[mc.Name] = true
		conds := slices.Clone(mc.Status.Conditions)
		meta.SetStatusCondition(&conds, metav1.Condition{
			Type: string(fleetv1alpha1.MemberClusterReady), Status: metav1.ConditionFalse,
			Reason:             string(fleetv1alpha1.MemberClusterReasonUnreachable),
			Message:            fmt.Sprintf("cannot reach %s: lost at wave %d (lockstep plan --lose)", mc.Name, h.wave),
			LastTransitionTime: metav1.NewTime(now),
		})
		mc.Status.Conditions = conds
	}
}

// placedNow are the clusters the placement's decisions hold this round: the
// placed ones its controller still selects. It drops a MemberCluster that is
// not Ready (fleet.Selectable, the test fleet.Select makes), here at once.
func (h *hub) placedNow() []string {
	out := []string{}
	for _, name := range h.placed {
		if mc := h.memberCluster(name); mc != nil && fleet.Selectable(mc) {
			out = append(out, name)
		}
	}
	return out
}

func (h *hub) memberCluster(name string) *fleetv1alpha1.MemberCluster {
	for i := range h.clusters {
		if h.clusters[i].Name == name {
			return &h.clusters[i]
		}
	}
	return nil
}

// pending: a later round may decide otherwise though nothing moved: an
// unreachable cluster was not yet lost at the last round (its
// memberLostTimeoutSeconds still runs), or a late member's reports have yet
// to reach the hub.
func (h *hub) pending() bool {
	last := epoch.Add(time.Duration(h.rounds-1) * h.in.Startup)
	timeout := lostTimeout(h.fw)
	for name := range h.unreachable {
		c := meta.FindStatusCondition(h.memberCluster(name).Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
		if last.Sub(c.LastTransitionTime.Time) < timeout {
			return true
		}
	}
	if h.recheck {
		return true
	}
	if g := h.fw.Status.Gate; analysisRunning(g) && slices.ContainsFunc(h.analyses, func(a gate.Scripted) bool { return a.Gate == g.Name }) {
		return true // to be measured
	}
	if g := h.fw.Status.Gate; g != nil {
		if _, ok := h.in.Approve[g.Name]; ok && h.fw.Annotations[v1alpha1.AnnotationApprovedRevision] != v1alpha1.ApprovalOf(h.fw.Status.UpdateRevision, g.Name) {
			return true // to be approved
		}
	}
	return slices.ContainsFunc(h.members, func(m *fleetsim.Member) bool { return m.ReportsInFlight() })
}

// unreached is what the round out saw of each cluster it could not reach.
func (h *hub) unreached(out round.Output) []Unreached {
	var us []Unreached
	for _, name := range slices.Sorted(maps.Keys(h.unreachable)) {
		u := Unreached{Cluster: name, Reach: align.Lost, Forgotten: true}
		i := slices.IndexFunc(out.Plan.Members, func(mp align.MemberPlan) bool { return mp.Name == name })
		planned := i >= 0
		var mp align.MemberPlan
		if planned {
			mp = out.Plan.Members[i]
		}
		if i := slices.IndexFunc(out.Members, func(v round.MemberView) bool { return v.Name == name }); i >= 0 && planned {
			v := out.Members[i]
			u.Reach, u.Share, u.Forgotten = v.Reach, v.Desired, false
			u.Unavailable, u.Surge = mp.Unavailable, mp.Surge
			u.WrittenOff = v.Reach == align.Lost && v.Target == 0
		}
		us = append(us, u)
	}
	return us
}

// deliver makes one write of the hub to its member, as the hub's controller
// does. A write to a member the hub cannot reach fails (and is recorded).
func (h *hub) deliver(w round.Write) error {
	m := h.byName[w.Cluster]
	if m == nil {
		return fmt.Errorf("a write to %s, which is no member", w.Cluster)
	}
	if h.unreachable[w.Cluster] {
		h.failed = append(h.failed, w)
		return nil
	}
	switch w.Op {
	case round.Create:
		return m.Create(w.Object)
	case round.Apply:
		return m.Apply(w.Object)
	case round.Delete:
		return m.Delete(w.Object, w.UID, w.ResourceVersion)
	}
	return fmt.Errorf("cluster %s: unknown write %q", w.Cluster, w.Op)
}

// act runs each member's controller once.
func (h *hub) act() error {
	for _, m := range h.members {
		if err := m.Act(); err != nil {
			return err
		}
	}
	return nil
}

// settle lets a start-up time pass: units start and go, and every member
// reports its status.
func (h *hub) settle() {
	for _, m := range h.members {
		m.Settle()
		m.Report()
	}
}

// state is every member's units and spec, to tell whether a wave moved.
func (h *hub) state() string {
	var b strings.Builder
	for _, m := range h.members {
		b.WriteString(m.State())
	}
	return b.String()
}

func progressingMessage(st fleetv1alpha1.FederatedWorkloadStatus) string {
	for _, c := range st.Conditions {
		if c.Type == string(fleetv1alpha1.FederatedWorkloadProgressing) {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}
