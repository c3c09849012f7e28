// Package invariant holds the rollout invariants as pure rules over snapshots of
// a PodCliqueSet. The offline simulator and the live e2e monitor each translate
// what they observe into the model below (levels of units, roles of PCS
// replicas, resolved role steps) and call the same rules, so that a rule is
// written once and both observers judge by it.
package invariant

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Name names one invariant.
type Name string

// The invariants.
const (
	// UnitsWithinSurge: never more than replicas + maxSurge units at a level
	// (pods of a PodClique, replicas of a scaling group, PCS replicas), counting
	// terminating units as the planner does: always, except at a level that
	// replaces while terminating (TerminationStarted).
	UnitsWithinSurge Name = "units-within-surge"
	// OneUnitPerIndex: an index holds one unit; at a level that replaces while
	// terminating, one live unit (its terminating predecessors aside); at one
	// that also starts a surge unit at the index it replaces, two live units
	// of different revisions at most (the outdated one and its successor).
	OneUnitPerIndex Name = "one-unit-per-index"
	// AvailabilityFloor: the operator never deletes an available unit when that
	// leaves fewer than replicas − maxUnavailable available at its level; units
	// already unavailable are free to delete.
	AvailabilityFloor Name = "availability-floor"
	// OnDeleteNoUpdate: under OnDelete the operator deletes units only to scale in.
	OnDeleteNoUpdate Name = "ondelete-no-update-deletes"
	// OneRevisionPerReplica: under ReplicaRecreate no PCS replica runs units of
	// two PodCliqueSet revisions at once.
	OneRevisionPerReplica Name = "one-revision-per-replica"
	// RoleStepOrder: a role gets its n-th updated unit only after every step
	// before the first step allowing n is satisfied.
	RoleStepOrder Name = "role-step-order"
	// PartitionHolds: PCS replicas below the partition do not move to the target.
	PartitionHolds Name = "partition-holds"
	// GatesHold: no PodCliqueSet replica starts its update past a closed gate.
	GatesHold Name = "gates-hold"
	// PauseHolds: while paused, nothing moves to the target.
	PauseHolds Name = "pause-holds"
	// ReplicaBoundary: a PCS replica starts updating (and a role step starts)
	// only when the one before has no surge unit left with a live pod, nor a
	// terminating one where the policy waits for termination
	// (podReplacementPolicy TerminationComplete for a clique's surge pod,
	// replicaReplacementPolicy PostTermination for a surge group replica).
	ReplicaBoundary Name = "replica-boundary"
)

// Violation is one invariant broken, with what broke it.
type Violation struct {
	Rule   Name
	Detail string
}

func (v Violation) String() string { return fmt.Sprintf("%s: %s", v.Rule, v.Detail) }

func violation(rule Name, format string, args ...any) []Violation {
	return []Violation{{Rule: rule, Detail: fmt.Sprintf(format, args...)}}
}

// Size is a replica count a level may be running to, with its limits resolved
// against it by rollout.ResolveFenceposts.
type Size struct {
	Replicas int32
	rollout.Fenceposts
}

// Unit is one unit of a level as the rules see it.
type Unit struct {
	Index                  int32
	Available, Terminating bool
	// Revision is the unit's template revision; Key names it where an index
	// can hold two live units (see rollout.Unit).
	Revision, Key string
}

// Level is the units one controller counts against one replicas, maxSurge and
// maxUnavailable, at one moment.
type Level struct {
	// Name says where the level is, for the violation's detail.
	Name     string
	Strategy v1alpha1.UpdateStrategyType
	// Sizes are the replica counts the level may be running to (a child object
	// scaled through /scale runs to its own): a level rule breaks only when it
	// breaks under every size. A level without sizes is not judged.
	Sizes []Size
	// Units are every unit, terminating ones included.
	Units []Unit
	// ReplaceWhileTerminating: the level's policy starts a replacement while
	// its predecessor terminates (TerminationStarted); terminating units then
	// count toward neither limit nor index.
	ReplaceWhileTerminating bool
	// SurgeAtReplacedIndex: with ReplaceWhileTerminating, a surge unit starts
	// beside the outdated unit it replaces (surgePlacement ReplacedIndex).
	SurgeAtReplacedIndex bool
}

// counted are the units that count toward replicas + maxSurge and hold their
// index.
func (l *Level) counted() []Unit {
	if !l.ReplaceWhileTerminating {
		return l.Units
	}
	out := make([]Unit, 0, len(l.Units))
	for _, u := range l.Units {
		if !u.Terminating {
			out = append(out, u)
		}
	}
	return out
}

// mostUnits is the largest replicas + maxSurge over the sizes.
func (l *Level) mostUnits() int32 {
	if len(l.Sizes) == 0 {
		return math.MaxInt32
	}
	most := int32(math.MinInt32)
	for _, s := range l.Sizes {
		most = max(most, s.Replicas+s.MaxSurge)
	}
	return most
}

// leastAvailable is the smallest replicas − maxUnavailable over the sizes.
func (l *Level) leastAvailable() int32 {
	if len(l.Sizes) == 0 {
		return 0
	}
	least := int32(math.MaxInt32)
	for _, s := range l.Sizes {
		least = min(least, s.Replicas-s.MaxUnavailable)
	}
	return max(least, 0)
}

// fewestReplicas is the smallest replica count over the sizes.
func (l *Level) fewestReplicas() int32 {
	least := int32(math.MaxInt32)
	for _, s := range l.Sizes {
		least = min(least, s.Replicas)
	}
	return least
}

func (l *Level) available() int32 {
	n := int32(0)
	for _, u := range l.Units {
		if u.Available && !u.Terminating {
			n++
		}
	}
	return n
}

func (l *Level) live() int32 {
	n := int32(0)
	for _, u := range l.Units {
		if !u.Terminating {
			n++
		}
	}
	return n
}

// availableAt counts the live available units at index.
func (l *Level) availableAt(index int32) int {
	n := 0
	for _, u := range l.Units {
		if u.Index == index && u.Available && !u.Terminating {
			n++
		}
	}
	return n
}

func (l *Level) indices() []int32 {
	out := make([]int32, 0, len(l.Units))
	for _, u := range l.Units {
		out = append(out, u.Index)
	}
	slices.Sort(out)
	return out
}

// ScaledIn reports whether a scale-in explains deleting the unit at index: it is
// at or above the replicas wanted, the level has more live units than wanted,
// or the index holds another live unit besides.
func (l *Level) ScaledIn(index int32) bool {
	want := l.fewestReplicas()
	live := 0
	for _, u := range l.Units {
		if u.Index == index && !u.Terminating {
			live++
		}
	}
	return index >= want || l.live() > want || live > 1
}

// CheckUnitsWithinSurge: a step that adds units to a level never takes it past
// replicas + maxSurge. Steps that add none (deletions, scale-ins, a spec change
// lowering the limits) leave whatever excess there was to the planner.
func CheckUnitsWithinSurge(before, after Level) []Violation {
	n := int32(len(after.counted()))
	if n <= int32(len(before.counted())) {
		return nil
	}
	if most := after.mostUnits(); n > most {
		which := "terminating included"
		if after.ReplaceWhileTerminating {
			which = "live"
		}
		return violation(UnitsWithinSurge, "%s has %d units %v (%s), more than replicas + maxSurge = %d",
			after.Name, n, after.indices(), which, most)
	}
	return nil
}

// CheckOneUnitPerIndex: a step that adds a unit at index leaves that index with
// one unit, or, at a level that replaces while terminating, one live unit; at
// a level that starts its surge at the replaced index, two live units of
// different revisions at most.
func CheckOneUnitPerIndex(after Level, index int32) []Violation {
	var revs []string
	for _, u := range after.counted() {
		if u.Index == index {
			revs = append(revs, u.Revision)
		}
	}
	switch {
	case len(revs) <= 1:
		return nil
	case after.ReplaceWhileTerminating && after.SurgeAtReplacedIndex && len(revs) == 2 && revs[0] != revs[1]:
		return nil
	case after.ReplaceWhileTerminating && after.SurgeAtReplacedIndex:
		return violation(OneUnitPerIndex, "%s has %d live units at index %d at revisions %v: a surge unit runs beside one outdated unit only",
			after.Name, len(revs), index, revs)
	}
	return violation(OneUnitPerIndex, "%s has %d units at index %d (terminating ones count under TerminationComplete)", after.Name, len(revs), index)
}

// CheckAvailabilityFloor: deleting the units at the deleted indices, if it costs
// any available unit, leaves at least replicas − maxUnavailable available.
// Units unavailable before the deletion are free: replacing broken units must
// not need budget.
func CheckAvailabilityFloor(before, after Level, deleted []int32) []Violation {
	lost := 0
	for k, i := range deleted {
		if !slices.Contains(deleted[:k], i) {
			lost += max(0, before.availableAt(i)-after.availableAt(i))
		}
	}
	if lost == 0 {
		return nil
	}
	if n, floor := after.available(), after.leastAvailable(); n < floor {
		return violation(AvailabilityFloor, "deleting %d available units %v of %s leaves %d available, below replicas − maxUnavailable = %d",
			lost, deleted, after.Name, n, floor)
	}
	return nil
}

// Deletion is a unit the operator deleted.
type Deletion struct {
	Index int32
	// Reason is the planner's when the observer knows it; an observer outside
	// the operator leaves it empty and the rule asks the levels instead.
	Reason rollout.DeleteReason
}

// ForUpdate reports whether the reason is an update: the unit was outdated.
func (d Deletion) ForUpdate() bool {
	return d.Reason == rollout.ReasonUpdate || d.Reason == rollout.ReasonReplaceFailed
}

// Placement is a unit's index in one level it counts in.
type Placement struct {
	Level *Level
	Index int32
}

// CheckOnDeleteNoUpdate: under OnDelete a unit is never deleted for an update,
// only to scale in. A unit counts in several levels (a pod in its clique, its
// group replica, its PCS replica): a scale-in at any of them explains it.
func CheckOnDeleteNoUpdate(strategy v1alpha1.UpdateStrategyType, d Deletion, at ...Placement) []Violation {
	if strategy != v1alpha1.OnDeleteStrategyType || len(at) == 0 {
		return nil
	}
	inner := at[len(at)-1]
	if d.ForUpdate() {
		return violation(OnDeleteNoUpdate, "%s: unit %d deleted for an update (%s)", inner.Level.Name, inner.Index, d.Reason)
	}
	for _, p := range at {
		if p.Level.ScaledIn(p.Index) {
			return nil
		}
	}
	return violation(OnDeleteNoUpdate, "%s: unit %d deleted, and no scale-in asked for it", inner.Level.Name, inner.Index)
}

// CheckOneRevisionPerReplica: under ReplicaRecreate a PCS replica's live units
// all come from one PodCliqueSet revision. setRevisions are the revisions its
// live units were made from; cause says what brought the mix, if known.
func CheckOneRevisionPerReplica(strategy v1alpha1.UpdateStrategyType, replica int32, setRevisions []string, cause string) []Violation {
	if strategy != v1alpha1.ReplicaRecreateStrategyType {
		return nil
	}
	revs := slices.Clone(setRevisions)
	slices.Sort(revs)
	if revs = slices.Compact(revs); len(revs) <= 1 {
		return nil
	}
	if cause != "" {
		cause = ": " + cause
	}
	return violation(OneRevisionPerReplica, "PCS replica %d runs revisions %v at once%s", replica, revs, cause)
}

// Hold is what keeps PCS replicas from moving to the target: the partition and
// the pause.
type Hold struct {
	Partition int32
	Paused    bool
}

// HoldOf reads the hold from a spec.
func HoldOf(spec *v1alpha1.PodCliqueSetSpec) Hold {
	h := Hold{Paused: spec.Paused}
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		h.Partition = *ru.Partition
	}
	return h
}

// CheckHeld: below the partition and while paused nothing moves to the target.
// moved says what moved in PCS replica replica, "" when nothing did.
func CheckHeld(h Hold, replica int32, moved string) []Violation {
	switch {
	case moved == "":
		return nil
	case replica < h.Partition:
		return violation(PartitionHolds, "PCS replica %d below partition %d: %s", replica, h.Partition, moved)
	case h.Paused:
		return violation(PauseHolds, "PCS replica %d while paused: %s", replica, moved)
	}
	return nil
}

// Step is one role step with updateTo resolved against the role's replicas.
type Step struct {
	Role     string
	UpdateTo int32
}

// Steps resolves a spec's role steps; only RollingUpdate honours them.
func Steps(spec *v1alpha1.PodCliqueSetSpec) ([]Step, error) {
	ru := spec.UpdateStrategy.RoleUpgrade
	if ru == nil || !spec.UpdateStrategy.Type.IsRollingUpdate() {
		return nil, nil
	}
	out := make([]Step, 0, len(ru.Steps))
	for _, st := range ru.Steps {
		n, err := rollout.ResolveUpdateTo(st.UpdateTo, RoleReplicas(spec, st.Role))
		if err != nil {
			return nil, fmt.Errorf("role step %s: %w", st.Role, err)
		}
		out = append(out, Step{Role: st.Role, UpdateTo: n})
	}
	return out, nil
}

// RoleReplicas is the unit count of a role: pods of a standalone clique,
// replicas of a scaling group.
func RoleReplicas(spec *v1alpha1.PodCliqueSetSpec, role string) int32 {
	if g := spec.Template.ScalingGroup(role); g != nil {
		return g.Replicas
	}
	if c := spec.Template.Clique(role); c != nil {
		return c.Replicas
	}
	return 0
}

// Role is one role of a PCS replica counted against the target.
type Role struct {
	Name string
	// UpdatedReady counts the role's live units in [0, replicas) on the target
	// that are ready: what a step waits for.
	UpdatedReady int32
}

// StepsDone moves a PCS replica's count of satisfied steps forward over roles:
// a step is satisfied once its role has updateTo updated ready units, and a step
// once passed stays passed.
func StepsDone(steps []Step, done int, roles []Role) int {
	for done < len(steps) {
		st := steps[done]
		ready := int32(0)
		if i := slices.IndexFunc(roles, func(r Role) bool { return r.Name == st.Role }); i >= 0 {
			ready = roles[i].UpdatedReady
		}
		if ready < st.UpdateTo {
			break
		}
		done++
	}
	return done
}

// FirstStepAllowing is the first step that lets role reach n updated units;
// len(steps) when none does (roles not named in a step update after the last).
func FirstStepAllowing(steps []Step, role string, n int32) int {
	for j, st := range steps {
		if st.Role == role && st.UpdateTo >= n {
			return j
		}
	}
	return len(steps)
}

// CheckRoleStepOrder: in a PCS replica being rolled, with done steps satisfied,
// role reaching updated units on the target is allowed only from the first step
// allowing that many.
func CheckRoleStepOrder(steps []Step, done int, replica int32, role string, updated int32) []Violation {
	first := FirstStepAllowing(steps, role, updated)
	if len(steps) == 0 || done >= first {
		return nil
	}
	st := steps[done]
	return violation(RoleStepOrder, "role %s of PCS replica %d reaches %d updated units, first allowed at step %d, but step %d (%s updateTo %d) is not satisfied",
		role, replica, updated, first, done, st.Role, st.UpdateTo)
}

// CheckLevelPlan judges a planner's creates and deletes for one level against
// the level before them: after them the creates exist (not yet available) and
// the deletes are terminating.
func CheckLevelPlan(before Level, creates []rollout.Create, deletes []rollout.Delete) []Violation {
	after := before
	after.Units = slices.Clone(before.Units)
	deleted := make([]int32, 0, len(deletes))
	for _, d := range deletes {
		deleted = append(deleted, d.Index)
		for i, u := range after.Units {
			if u.Index == d.Index && u.Key == d.Key && !u.Terminating {
				after.Units[i] = Unit{Index: d.Index, Terminating: true, Revision: u.Revision, Key: u.Key}
			}
		}
	}
	for _, c := range creates {
		after.Units = append(after.Units, Unit{Index: c.Index, Revision: c.Revision})
	}
	vs := CheckUnitsWithinSurge(before, after)
	for _, c := range creates {
		vs = append(vs, CheckOneUnitPerIndex(after, c.Index)...)
	}
	vs = append(vs, CheckAvailabilityFloor(before, after, deleted)...)
	for _, d := range deletes {
		vs = append(vs, CheckOnDeleteNoUpdate(before.Strategy, Deletion{Index: d.Index, Reason: d.Reason}, Placement{Level: &before, Index: d.Index})...)
	}
	return vs
}

// SurgeLeft is a surge unit (a surge pod of a standalone clique, a surge
// scaling-group replica) and the pods it still has.
type SurgeLeft struct {
	// Replica is the PCS replica it belongs to, Role its clique or scaling
	// group; Unit names it.
	Replica int32
	Role    string
	Unit    string
	// Live counts its pods not terminating (a pod whose owner is being deleted
	// but which is not terminating yet is live); Terminating the others.
	Live, Terminating int
	// WaitsForTermination: its policy holds the next replica back until its
	// terminating pods are gone too.
	WaitsForTermination bool
}

// Holds reports whether the unit still holds the next replica or step back.
func (s SurgeLeft) Holds() bool {
	return s.Live > 0 || (s.WaitsForTermination && s.Terminating > 0)
}

// CheckReplicaBoundary: PCS replica replica moved a unit to the target
// (started says how) while left, the surge units of the other PCS replicas,
// had one that still held it back. Replicas update one at a time, and one's
// update ends when its pods say so: two surge units' worth of capacity (two
// GPU gangs) is never asked for at once.
func CheckReplicaBoundary(replica int32, started string, left []SurgeLeft) []Violation {
	for _, s := range left {
		if s.Replica == replica || !s.Holds() {
			continue
		}
		return violation(ReplicaBoundary, "PCS replica %d moved (%s) while PCS replica %d still has %s with %d live and %d terminating pods",
			replica, started, s.Replica, s.Unit, s.Live, s.Terminating)
	}
	return nil
}

// CheckRoleStepBoundary: in PCS replica replica, role reached updated units
// on the target (started says how), which only a later step allows, while the
// role of the step before it, another role, still had a surge unit in that
// replica that holds it back. A role step ends when its pods say so, as a
// replica's update does.
func CheckRoleStepBoundary(steps []Step, replica int32, role string, updated int32, started string, left []SurgeLeft) []Violation {
	first := FirstStepAllowing(steps, role, updated)
	if first == 0 || first >= len(steps) || steps[first-1].Role == role {
		return nil
	}
	prev := steps[first-1]
	for _, s := range left {
		if s.Replica != replica || s.Role != prev.Role || !s.Holds() {
			continue
		}
		return violation(ReplicaBoundary, "role %s of PCS replica %d started step %d (%s) while step %d's role %s still has %s with %d live and %d terminating pods",
			role, replica, first, started, first-1, prev.Role, s.Unit, s.Live, s.Terminating)
	}
	return nil
}

// CheckReplicaGates: with a gate after each PodCliqueSet replica, the replicas
// that have started the update are at most one wave (the replicas the
// strategy may update at once) per checkpoint opened: the first wave needs
// none, each later one an approved checkpoint.
func CheckReplicaGates(started []int32, wave int32, approved int) []Violation {
	if limit := wave * int32(1+approved); int32(len(started)) > limit {
		return violation(GatesHold, "replicas %v started the update: at most %d with waves of %d and %d checkpoints approved",
			started, limit, wave, approved)
	}
	return nil
}

// CheckSoak: with a soak after each PodCliqueSet replica updated one at a
// time, replicas start at least soak apart (a replica starts after the one
// before it is done, and then the soak runs). starts are in time order.
func CheckSoak(starts []time.Duration, soak time.Duration) []Violation {
	for i := 1; i < len(starts); i++ {
		if gap := starts[i] - starts[i-1]; gap < soak {
			return violation(GatesHold, "replica updates started %s apart (at %s and %s), under the soak of %s", gap, starts[i-1], starts[i], soak)
		}
	}
	return nil
}
