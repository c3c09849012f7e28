package monitor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/invariant"
)

// Invariant names one rollout invariant; the rules themselves live in package
// invariant, shared with the simulator.
type Invariant = invariant.Name

// The invariants the monitor checks on every event.
const (
	UnitsWithinSurge      = invariant.UnitsWithinSurge
	OneUnitPerIndex       = invariant.OneUnitPerIndex
	AvailabilityFloor     = invariant.AvailabilityFloor
	OnDeleteNoUpdate      = invariant.OnDeleteNoUpdate
	OneRevisionPerReplica = invariant.OneRevisionPerReplica
	RoleStepOrder         = invariant.RoleStepOrder
	PartitionHolds        = invariant.PartitionHolds
	PauseHolds            = invariant.PauseHolds
	ReplicaBoundary       = invariant.ReplicaBoundary
)

// Violation is an invariant broken at one moment.
type Violation struct {
	Time      time.Time
	Invariant Invariant
	Detail    string
	// Timeline is the end of the timeline, up to the event that broke the invariant.
	Timeline []Event

	start time.Time // of the monitor, for relative times in Report
}

func (v *Violation) Error() string {
	return fmt.Sprintf("invariant %s broken: %s", v.Invariant, v.Detail)
}

// Report is the violation followed by the timeline that led to it.
func (v *Violation) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\ntimeline up to the violation (seconds since the monitor started):\n", v.Error())
	_ = writeEvents(&b, v.start, 0, v.Timeline)
	return b.String()
}

// check decides one invariant for one event under one spec. Checks are pure:
// everything they know arrives as arguments.
type check func(t *target, h *history, before, after *snapshot, ev Event) []Violation

var checks = []check{
	checkUnitsWithinSurge,
	checkAvailabilityFloor,
	checkOnDeleteNoUpdate,
	checkOneRevisionPerReplica,
	checkRoleStepOrder,
	checkHeld,
	checkReplicaBoundary,
}

// checkEvent returns the invariants ev breaks, going from before to after. A
// check fails only when it fails under every spec in targets (newest last): the
// operator may act on any of them (see specTracker).
func checkEvent(targets []*target, h *history, before, after *snapshot, ev Event) []Violation {
	if len(targets) == 0 {
		return nil
	}
	var out []Violation
	for _, c := range checks {
		out = append(out, underEverySpec(c, targets, h, before, after, ev)...)
	}
	for i := range out {
		out[i].Time = ev.Time
	}
	return out
}

func underEverySpec(c check, targets []*target, h *history, before, after *snapshot, ev Event) []Violation {
	newest := c(targets[len(targets)-1], h, before, after, ev)
	if len(newest) == 0 {
		return nil
	}
	for _, t := range targets[:len(targets)-1] {
		if len(c(t, h, before, after, ev)) == 0 {
			return nil
		}
	}
	return newest
}

// about turns the rules' violations into the monitor's, naming the object that
// broke them.
func about(vs []invariant.Violation, format string, args ...any) []Violation {
	out := make([]Violation, 0, len(vs))
	for _, v := range vs {
		detail := v.Detail
		if format != "" {
			detail = fmt.Sprintf(format, args...) + ": " + detail
		}
		out = append(out, Violation{Invariant: v.Rule, Detail: detail})
	}
	return out
}

// checkUnitsWithinSurge runs on every creation, at every level the new object
// counts in. Deletions and scale-ins never add units, so they need no check.
func checkUnitsWithinSurge(t *target, _ *history, before, after *snapshot, ev Event) []Violation {
	var vs []invariant.Violation
	switch ev.Kind {
	case PodCreated:
		p, ok := after.pods[ev.Name]
		if !ok {
			return nil
		}
		vs = invariant.CheckUnitsWithinSurge(cliqueLevel(t, before, p.cliqueKey, ev.Time), cliqueLevel(t, after, p.cliqueKey, ev.Time))
		vs = append(vs, invariant.CheckOneUnitPerIndex(cliqueLevel(t, after, p.cliqueKey, ev.Time), p.Index)...)
		if p.Group != "" {
			vs = append(vs, invariant.CheckUnitsWithinSurge(groupLevel(t, before, p.Replica, p.Group, ev.Time), groupLevel(t, after, p.Replica, p.Group, ev.Time))...)
		}
	case PodCliqueCreated:
		if c, ok := after.cliques[ev.Name]; ok && c.Group != "" {
			vs = invariant.CheckUnitsWithinSurge(groupLevel(t, before, c.Replica, c.Group, ev.Time), groupLevel(t, after, c.Replica, c.Group, ev.Time))
		}
	case ScalingGroupCreated:
	default:
		return nil
	}
	vs = append(vs, invariant.CheckUnitsWithinSurge(setLevel(t, before, ev.Time), setLevel(t, after, ev.Time))...)
	return about(vs, "%s %s", ev.Kind, ev.Name)
}

// checkAvailabilityFloor runs on every deletion the test did not announce, at
// the level whose unit the deleted pod belongs to.
func checkAvailabilityFloor(t *target, _ *history, before, after *snapshot, ev Event) []Violation {
	d, ok := operatorDeletion(before, after, ev)
	if !ok {
		return nil
	}
	vs := floorAfterDeletion(t, before, after, d)
	if len(vs) > 0 {
		for _, seen := range before.recentChanges(d.requested, unseenChange) {
			if len(floorAfterDeletion(t, before.at(seen), after.at(seen), d)) == 0 {
				return nil // the pods as the operator may still have seen them
			}
		}
	}
	return about(vs, "the operator deleted pod %s", d.pod.Name)
}

func floorAfterDeletion(t *target, before, after *snapshot, d deletion) []invariant.Violation {
	p := d.pod
	var vs []invariant.Violation
	switch {
	case t.strategy() == v1alpha1.ReplicaRecreateStrategyType:
		// whole PCS replicas are the unit; their cliques go down together
		vs = invariant.CheckAvailabilityFloor(setLevel(t, before, d.requested), setLevel(t, after, d.settled), []int32{p.Replica})
	case p.Replica >= t.spec.DesiredReplicas():
		return nil // the whole PCS replica is being scaled in
	case p.Group != "":
		vs = invariant.CheckAvailabilityFloor(groupLevel(t, before, p.Replica, p.Group, d.requested), groupLevel(t, after, p.Replica, p.Group, d.settled), []int32{p.GroupReplica})
	default:
		vs = invariant.CheckAvailabilityFloor(cliqueLevel(t, before, p.cliqueKey, d.requested), cliqueLevel(t, after, p.cliqueKey, d.settled), []int32{p.Index})
	}
	return vs
}

// checkOnDeleteNoUpdate: under OnDelete the only reason for the operator to
// delete a pod is a scale-in of its PCS replica, its group replica or its clique.
func checkOnDeleteNoUpdate(t *target, _ *history, before, after *snapshot, ev Event) []Violation {
	if t.strategy() != v1alpha1.OnDeleteStrategyType {
		return nil
	}
	d, ok := operatorDeletion(before, after, ev)
	if !ok {
		return nil
	}
	p := d.pod
	if p.Replica >= t.spec.DesiredReplicas() || t.clique(p.Clique) == nil {
		return nil
	}
	var at []invariant.Placement
	if p.Group != "" {
		if t.spec.Template.ScalingGroup(p.Group) == nil {
			return nil
		}
		g := groupLevel(t, before, p.Replica, p.Group, d.requested)
		at = append(at, invariant.Placement{Level: &g, Index: p.GroupReplica})
	}
	c := cliqueLevel(t, before, p.cliqueKey, d.requested)
	at = append(at, invariant.Placement{Level: &c, Index: p.Index})
	state := "already on the target template"
	if !t.updated(p) {
		state = fmt.Sprintf("outdated (hash %s, target %s)", p.TemplateHash, t.hashes[p.Clique])
	}
	return about(invariant.CheckOnDeleteNoUpdate(t.strategy(), invariant.Deletion{Index: p.Index}, at...), "the operator deleted pod %s, %s", p.Name, state)
}

// checkOneRevisionPerReplica runs on creations: a mix of revisions can only
// start with a pod created next to live pods of another revision.
func checkOneRevisionPerReplica(t *target, _ *history, _, after *snapshot, ev Event) []Violation {
	if ev.Kind != PodCreated {
		return nil
	}
	p, ok := after.pods[ev.Name]
	if !ok || p.SetRevision == "" {
		return nil
	}
	var revs []string
	for _, q := range after.pods {
		if q.Replica == p.Replica && !q.Terminating && q.SetRevision != "" {
			revs = append(revs, q.SetRevision)
		}
	}
	return about(invariant.CheckOneRevisionPerReplica(t.strategy(), p.Replica, revs, fmt.Sprintf("pod %s was created at %s", p.Name, p.SetRevision)), "")
}

// checkRoleStepOrder runs on creations of pods on the target inside a PCS
// replica being rolled.
func checkRoleStepOrder(t *target, h *history, before, after *snapshot, ev Event) []Violation {
	if len(t.steps) == 0 || ev.Kind != PodCreated {
		return nil
	}
	p, ok := after.pods[ev.Name]
	if !ok || !t.updated(p) {
		return nil
	}
	k := replicaTarget{t.key, p.Replica}
	if !h.updating[k] && !hasOutdated(t, before, p.Replica) {
		return nil // a brand-new replica starts on the target
	}
	role := p.role()
	n := updatedUnits(t, after, p.Replica, role)
	if surgeUnit(t, p) {
		n++ // the planner surges only while the role may take one more updated unit
	}
	vs := invariant.CheckRoleStepOrder(t.steps, h.stepsDone[k], p.Replica, role, n)
	vs = append(vs, invariant.CheckRoleStepBoundary(t.steps, p.Replica, role, n, "pod "+p.Name+" created on the target", surgeLeft(t, after))...)
	return about(vs, "pod %s", p.Name)
}

// checkReplicaBoundary runs on creations of pods on the target in a PCS
// replica that still runs other templates (one being rolled): no other PCS
// replica may then have a surge unit with a live pod, nor, where its policy
// waits for termination, a terminating one. A pod whose PodClique is being
// deleted but which is not terminating yet (doomed) is live: its capacity is
// still taken.
func checkReplicaBoundary(t *target, _ *history, before, after *snapshot, ev Event) []Violation {
	if ev.Kind != PodCreated || !t.strategy().IsRollingUpdate() {
		return nil
	}
	p, ok := after.pods[ev.Name]
	if !ok || !t.updated(p) || !hasOutdated(t, before, p.Replica) {
		return nil
	}
	return about(invariant.CheckReplicaBoundary(p.Replica, "pod "+p.Name+" created on the target", surgeLeft(t, after)), "")
}

// surgeLeft is every surge unit of the snapshot with the pods it has: surge
// pods of standalone cliques (by their label) and scaling-group replicas at or
// above the group's replicas.
func surgeLeft(t *target, s *snapshot) []invariant.SurgeLeft {
	byUnit := map[string]*invariant.SurgeLeft{}
	var order []string
	for _, name := range sortedKeys(podNames(s)) {
		p := s.pods[name]
		if p.Finished {
			continue
		}
		var unit string
		var wait bool
		switch g := t.spec.Template.ScalingGroup(p.Group); {
		case g != nil && p.GroupReplica >= g.Replicas:
			unit, wait = fmt.Sprintf("surge replica %d of %s", p.GroupReplica, p.Group), t.spec.ReplicaReplacementPolicy.WaitsForTermination()
		case p.Group == "" && p.Labels[v1alpha1.LabelSurge] == "true":
			unit, wait = fmt.Sprintf("surge pod %d of %s", p.Index, p.Clique), t.spec.PodReplacementPolicy == v1alpha1.TerminationComplete
		default:
			continue
		}
		key := fmt.Sprintf("%d/%s", p.Replica, unit)
		u := byUnit[key]
		if u == nil {
			u = &invariant.SurgeLeft{Replica: p.Replica, Role: p.role(), Unit: unit, WaitsForTermination: wait}
			byUnit[key] = u
			order = append(order, key)
		}
		if p.Terminating {
			u.Terminating++
		} else {
			u.Live++
		}
	}
	out := make([]invariant.SurgeLeft, 0, len(order))
	for _, k := range order {
		out = append(out, *byUnit[k])
	}
	return out
}

func podNames(s *snapshot) map[string]bool {
	out := make(map[string]bool, len(s.pods))
	for name := range s.pods {
		out[name] = true
	}
	return out
}

// surgeUnit: the pod belongs to a unit above its role's replicas.
func surgeUnit(t *target, p podState) bool {
	if g := t.spec.Template.ScalingGroup(p.Group); g != nil {
		return p.GroupReplica >= g.Replicas
	}
	return p.Index >= invariant.RoleReplicas(&t.spec, p.Clique)
}

// checkHeld: below the partition and while paused a role must not move to the
// target. A pod may be created on the target only where its role (in that PCS
// replica) runs nothing else, or never ran anything (a brand-new role). While
// paused, an index also comes back on the target when its last pod ran the
// target (nothing moves backward), or when the operator emptied it before it saw
// the pause (a replacement under way finishes).
func checkHeld(t *target, h *history, before, after *snapshot, ev Event) []Violation {
	if ev.Kind != PodCreated {
		return nil
	}
	p, ok := after.pods[ev.Name]
	if !ok || !t.updated(p) {
		return nil
	}
	if t.hold.Paused && p.Replica >= t.hold.Partition {
		s := h.slots[slotOf(ev)]
		underWay := s.byOperator && (t.observedAt.IsZero() || !s.emptiedAt.After(t.observedAt))
		if s.everCreated && (s.hash == p.TemplateHash || underWay) {
			return nil
		}
	}
	off := map[string]bool{}
	for _, r := range h.ran(before, p.Replica, p.role()) {
		if r.hash != t.hashes[r.clique] {
			off[r.clique+"="+r.hash] = true
		}
	}
	if len(off) == 0 {
		return nil
	}
	moved := fmt.Sprintf("pod %s was created on the target template (hash %s), where role %s still runs %v", p.Name, p.TemplateHash, p.role(), sortedKeys(off))
	return about(invariant.CheckHeld(t.hold, p.Replica, moved), "")
}

// deletion is a pod the operator deleted, with the times to judge it at.
type deletion struct {
	pod podState // as it was before the deletion
	// requested is when the delete was issued (second precision); settled is a
	// moment later, for counting what remains available, so that rounding never
	// makes a pod that had become available look unavailable.
	requested, settled time.Time
}

// operatorDeletion returns the pod ev deletes unless the test announced it or
// it was already going or finished.
func operatorDeletion(before, after *snapshot, ev Event) (deletion, bool) {
	if ev.Announced || (ev.Kind != PodDeleting && ev.Kind != PodDeleted) {
		return deletion{}, false
	}
	p, ok := before.pods[ev.Name]
	if !ok || p.Terminating || p.Finished {
		return deletion{}, false
	}
	d := deletion{pod: p, requested: ev.Time, settled: ev.Time}
	if q, ok := after.pods[ev.Name]; ok && !q.DeleteRequested.IsZero() && q.DeleteRequested.Before(ev.Time) {
		d.requested = q.DeleteRequested
		if s := q.DeleteRequested.Add(time.Second); s.Before(ev.Time) {
			d.settled = s
		}
	}
	return d, true
}

// replicaCounts are the replicas a level may be running to: the PodCliqueSet
// spec's, and its child object's own when that is known and differs (a child
// can be scaled through /scale).
func replicaCounts(spec int32, object []int32) []int32 {
	out := []int32{spec}
	for _, r := range object {
		if r != spec {
			out = append(out, r)
		}
	}
	return out
}

func sortedKeys[K int32 | string](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
