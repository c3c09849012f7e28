package monitor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Invariant names one rule of DESIGN.md principle 4.
type Invariant string

// The invariants the monitor checks on every event.
const (
	// UnitsWithinSurge: never more than replicas + maxSurge units at a level
	// (pods of a PodClique, replicas of a scaling group, PCS replicas), counting
	// terminating units as the planner does.
	UnitsWithinSurge Invariant = "units-within-surge"
	// AvailabilityFloor: the operator never deletes an available unit when that
	// leaves fewer than replicas − maxUnavailable available at its level.
	AvailabilityFloor Invariant = "availability-floor"
	// OnDeleteNoUpdate: under OnDelete the operator deletes pods only to scale in.
	OnDeleteNoUpdate Invariant = "ondelete-no-update-deletes"
	// OneRevisionPerReplica: under ReplicaRecreate no PCS replica runs pods of two
	// PodCliqueSet revisions at once.
	OneRevisionPerReplica Invariant = "one-revision-per-replica"
	// RoleStepOrder: a role gets its n-th updated unit only after every step
	// before the first step allowing n is satisfied.
	RoleStepOrder Invariant = "role-step-order"
	// PartitionHolds: PCS replicas below the partition do not move to the target.
	PartitionHolds Invariant = "partition-holds"
	// PauseHolds: while paused, nothing moves to the target.
	PauseHolds Invariant = "pause-holds"
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

func violation(inv Invariant, format string, args ...any) []Violation {
	return []Violation{{Invariant: inv, Detail: fmt.Sprintf(format, args...)}}
}

// checkUnitsWithinSurge runs on every creation, at every level the new object
// counts in. Deletions and scale-ins never add units, so they need no check.
func checkUnitsWithinSurge(t *target, _ *history, _, after *snapshot, ev Event) []Violation {
	var out []Violation
	switch ev.Kind {
	case PodCreated:
		p, ok := after.pods[ev.Name]
		if !ok {
			return nil
		}
		out = append(out, cliqueWithinSurge(t, after, p.cliqueKey)...)
		if p.Group != "" {
			out = append(out, groupWithinSurge(t, after, p.Replica, p.Group)...)
		}
	case PodCliqueCreated:
		if c, ok := after.cliques[ev.Name]; ok && c.Group != "" {
			out = append(out, groupWithinSurge(t, after, c.Replica, c.Group)...)
		}
	case ScalingGroupCreated:
	default:
		return nil
	}
	return append(out, setWithinSurge(t, after)...)
}

func cliqueWithinSurge(t *target, s *snapshot, k cliqueKey) []Violation {
	c := t.clique(k.Clique)
	if c == nil {
		return nil
	}
	most := mostUnits(replicaCounts(c.Replicas, s.cliqueObjectReplicas(k)), func(r int32) (rollout.Fenceposts, error) {
		return t.cliqueLimits(k.Clique, r)
	})
	if n := int32(len(s.podsIn(k))); n > most {
		return violation(UnitsWithinSurge, "%s has %d pods (terminating included), more than replicas + maxSurge = %d", k, n, most)
	}
	return nil
}

func groupWithinSurge(t *target, s *snapshot, replica int32, group string) []Violation {
	g := t.group(group)
	if g == nil {
		return nil
	}
	most := mostUnits(replicaCounts(g.Replicas, s.groupObjectReplicas(replica, group)), func(r int32) (rollout.Fenceposts, error) {
		return t.groupLimits(group, r)
	})
	if idx := s.groupReplicaIndices(replica, group); int32(len(idx)) > most {
		return violation(UnitsWithinSurge, "replica %d group %s has %d group replicas %v (terminating included), more than replicas + maxSurge = %d",
			replica, group, len(idx), sortedKeys(idx), most)
	}
	return nil
}

func setWithinSurge(t *target, s *snapshot) []Violation {
	most := mostUnits([]int32{t.replicas()}, t.setLimits)
	if idx := s.replicaIndices(); int32(len(idx)) > most {
		return violation(UnitsWithinSurge, "the PodCliqueSet has %d replicas %v (terminating included), more than replicas + maxSurge = %d",
			len(idx), sortedKeys(idx), most)
	}
	return nil
}

// checkAvailabilityFloor runs on every deletion the test did not announce. A
// deletion that costs nothing (the unit was not available) is always allowed:
// replacing broken units must not need budget.
func checkAvailabilityFloor(t *target, _ *history, before, after *snapshot, ev Event) []Violation {
	d, ok := operatorDeletion(before, after, ev)
	if !ok {
		return nil
	}
	if t.strategy() == v1alpha1.ReplicaRecreateStrategyType {
		// whole PCS replicas are the unit; their cliques go down together
		return setFloor(t, before, after, d)
	}
	if d.pod.Replica >= t.replicas() {
		return nil // the whole PCS replica is being scaled in
	}
	if d.pod.Group != "" {
		return groupFloor(t, before, after, d)
	}
	return cliqueFloor(t, after, d)
}

func cliqueFloor(t *target, after *snapshot, d deletion) []Violation {
	p := d.pod
	c := t.clique(p.Clique)
	if c == nil || !p.available(t.spec.MinReadySeconds, d.requested) {
		return nil
	}
	floor := leastAvailable(replicaCounts(c.Replicas, after.cliqueObjectReplicas(p.cliqueKey)), func(r int32) (rollout.Fenceposts, error) {
		return t.cliqueLimits(p.Clique, r)
	})
	n := int32(0)
	for _, q := range after.podsIn(p.cliqueKey) {
		if q.available(t.spec.MinReadySeconds, d.settled) {
			n++
		}
	}
	if n < floor {
		return violation(AvailabilityFloor, "deleting available pod %s leaves %s with %d available pods, below replicas − maxUnavailable = %d",
			p.Name, p.cliqueKey, n, floor)
	}
	return nil
}

func groupFloor(t *target, before, after *snapshot, d deletion) []Violation {
	p := d.pod
	g := t.group(p.Group)
	if g == nil || !groupReplicaAvailable(t, before, p.Replica, p.Group, p.GroupReplica, d.requested) ||
		groupReplicaAvailable(t, after, p.Replica, p.Group, p.GroupReplica, d.settled) {
		return nil
	}
	floor := leastAvailable(replicaCounts(g.Replicas, after.groupObjectReplicas(p.Replica, p.Group)), func(r int32) (rollout.Fenceposts, error) {
		return t.groupLimits(p.Group, r)
	})
	if n := availableGroupReplicas(t, after, p.Replica, p.Group, d.settled); n < floor {
		return violation(AvailabilityFloor, "deleting pod %s takes group replica %s-%d of replica %d down, leaving %d available group replicas, below replicas − maxUnavailable = %d",
			p.Name, p.Group, p.GroupReplica, p.Replica, n, floor)
	}
	return nil
}

func setFloor(t *target, before, after *snapshot, d deletion) []Violation {
	p := d.pod
	if !replicaAvailable(t, before, p.Replica, d.requested) || replicaAvailable(t, after, p.Replica, d.settled) {
		return nil
	}
	floor := leastAvailable([]int32{t.replicas()}, t.setLimits)
	if n := availableReplicas(t, after, d.settled); n < floor {
		return violation(AvailabilityFloor, "deleting pod %s takes PCS replica %d down, leaving %d available PCS replicas, below replicas − maxUnavailable = %d",
			p.Name, p.Replica, n, floor)
	}
	return nil
}

// checkOnDeleteNoUpdate: under OnDelete the only reason for the operator to
// delete a pod is a scale-in.
func checkOnDeleteNoUpdate(t *target, _ *history, before, after *snapshot, ev Event) []Violation {
	if t.strategy() != v1alpha1.OnDeleteStrategyType {
		return nil
	}
	d, ok := operatorDeletion(before, after, ev)
	if !ok || scaledIn(t, before, d.pod) {
		return nil
	}
	p := d.pod
	state := "already on the target template"
	if !t.updated(p) {
		state = fmt.Sprintf("outdated (hash %s, target %s)", p.TemplateHash, t.hashes[p.Clique])
	}
	return violation(OnDeleteNoUpdate, "the operator deleted pod %s of %s, %s, and no scale-in asked for it", p.Name, p.cliqueKey, state)
}

// scaledIn reports whether a scale-in explains a pod's deletion: its PCS
// replica, group replica or index is at or above the replicas wanted, or its
// clique or group has more live units than wanted.
func scaledIn(t *target, before *snapshot, p podState) bool {
	c := t.clique(p.Clique)
	if p.Replica >= t.replicas() || c == nil {
		return true
	}
	if p.Group != "" {
		g := t.group(p.Group)
		if g == nil {
			return true
		}
		want := fewest(replicaCounts(g.Replicas, before.groupObjectReplicas(p.Replica, p.Group)))
		return p.GroupReplica >= want || before.liveGroupReplicas(p.Replica, p.Group) > want || p.Index >= c.Replicas
	}
	want := fewest(replicaCounts(c.Replicas, before.cliqueObjectReplicas(p.cliqueKey)))
	live := int32(0)
	for _, q := range before.podsIn(p.cliqueKey) {
		if !q.Terminating {
			live++
		}
	}
	return p.Index >= want || live > want
}

// checkOneRevisionPerReplica runs on creations: a mix of revisions can only
// start with a pod created next to live pods of another revision.
func checkOneRevisionPerReplica(t *target, _ *history, _, after *snapshot, ev Event) []Violation {
	if t.strategy() != v1alpha1.ReplicaRecreateStrategyType || ev.Kind != PodCreated {
		return nil
	}
	p, ok := after.pods[ev.Name]
	if !ok || p.SetRevision == "" {
		return nil
	}
	revs := map[string]bool{}
	for _, q := range after.pods {
		if q.Replica == p.Replica && !q.Terminating && q.SetRevision != "" {
			revs[q.SetRevision] = true
		}
	}
	if len(revs) > 1 {
		return violation(OneRevisionPerReplica, "PCS replica %d runs revisions %v at once: pod %s was created at %s",
			p.Replica, sortedKeys(revs), p.Name, p.SetRevision)
	}
	return nil
}

// checkRoleStepOrder runs on creations of pods on the target inside a PCS
// replica being rolled.
func checkRoleStepOrder(t *target, h *history, before, after *snapshot, ev Event) []Violation {
	steps := t.steps()
	if len(steps) == 0 || ev.Kind != PodCreated {
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
	first := firstStepAllowing(t, steps, role, n)
	done := h.stepsDone[k]
	if done >= first {
		return nil
	}
	st := steps[done]
	return violation(RoleStepOrder, "pod %s brings role %s of PCS replica %d to %d updated units, first allowed at step %d, but step %d (%s updateTo %s) is not satisfied",
		p.Name, role, p.Replica, n, first, done, st.Role, st.UpdateTo.String())
}

// firstStepAllowing is the first step that lets role reach n updated units;
// len(steps) when none does (roles not named in a step update after the last).
func firstStepAllowing(t *target, steps []v1alpha1.RoleUpgradeStep, role string, n int32) int {
	for j, st := range steps {
		if st.Role != role {
			continue
		}
		if to, err := rollout.ResolveUpdateTo(st.UpdateTo, t.roleReplicas(role)); err == nil && to >= n {
			return j
		}
	}
	return len(steps)
}

// surgeUnit: the pod belongs to a unit above its role's replicas.
func surgeUnit(t *target, p podState) bool {
	if g := t.group(p.Group); g != nil {
		return p.GroupReplica >= g.Replicas
	}
	return p.Index >= t.roleReplicas(p.Clique)
}

// checkHeld: below the partition and while paused a role must not move to the
// target. A pod may be created on the target only where its role (in that PCS
// replica) runs nothing else, or never ran anything (a brand-new role).
func checkHeld(t *target, h *history, before, after *snapshot, ev Event) []Violation {
	if ev.Kind != PodCreated {
		return nil
	}
	p, ok := after.pods[ev.Name]
	if !ok || !t.updated(p) {
		return nil
	}
	inv, why := PauseHolds, "while paused"
	switch {
	case p.Replica < t.partition():
		inv, why = PartitionHolds, fmt.Sprintf("below partition %d", t.partition())
	case t.spec.Paused:
	default:
		return nil
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
	return violation(inv, "pod %s was created on the target template (hash %s) in PCS replica %d %s, where role %s still runs %v",
		p.Name, p.TemplateHash, p.Replica, why, p.role(), sortedKeys(off))
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

// mostUnits is the largest replicas + maxSurge over counts; unbounded when no
// limit resolves (newTarget has already refused specs whose limits do not).
func mostUnits(counts []int32, limits func(int32) (rollout.Fenceposts, error)) int32 {
	most := int32(-1)
	for _, r := range counts {
		if fp, err := limits(r); err == nil {
			most = max(most, r+fp.MaxSurge)
		}
	}
	if most < 0 {
		return math.MaxInt32
	}
	return most
}

// leastAvailable is the smallest replicas − maxUnavailable over counts.
func leastAvailable(counts []int32, limits func(int32) (rollout.Fenceposts, error)) int32 {
	least := int32(-1)
	for _, r := range counts {
		fp, err := limits(r)
		if err != nil {
			continue
		}
		if f := r - fp.MaxUnavailable; least < 0 || f < least {
			least = f
		}
	}
	return max(least, 0)
}

func fewest(counts []int32) int32 {
	return slices.Min(counts)
}

func sortedKeys[K int32 | string](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
