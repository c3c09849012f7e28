package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// UpdateOrder is the order in which outdated units are picked for an update.
type UpdateOrder int

const (
	// OldestFirst picks the unit created earliest, then the lowest index. Pods of a
	// standalone PodClique use it.
	OldestFirst UpdateOrder = iota
	// LowestIndexFirst picks the lowest index. Scaling-group and PCS replicas use it.
	LowestIndexFirst
)

// ScaleInOrder is the order in which units above the desired count are removed.
type ScaleInOrder int

const (
	// OutdatedFirst removes units on an outdated revision first, then unavailable
	// ones, then the highest index. Standalone PodCliques use it.
	OutdatedFirst ScaleInOrder = iota
	// HighestIndexFirst removes the highest index first so that no hole opens below
	// the desired count. Scaling groups and PCS replicas use it.
	HighestIndexFirst
)

// DeleteReason says why the planner deletes a unit.
type DeleteReason string

const (
	// ReasonUpdate deletes an available outdated unit, spending the unavailability budget.
	ReasonUpdate DeleteReason = "update"
	// ReasonReplaceFailed deletes an outdated unit that is already unavailable; it
	// spends no budget, which keeps broken old units from deadlocking a rollout.
	ReasonReplaceFailed DeleteReason = "replace-failed"
	// ReasonScaleIn deletes a unit above the desired count.
	ReasonScaleIn DeleteReason = "scale-in"
	// ReasonSurgeCleanup deletes a surge unit that is no longer needed.
	ReasonSurgeCleanup DeleteReason = "surge-cleanup"
	// ReasonSuperseded deletes an outdated unit beside its successor at the
	// same index (surgePlacement ReplacedIndex): the successor, available or
	// the only one of the two that could be, has taken the index over. It is
	// no update of its own: the successor's creation was.
	ReasonSuperseded DeleteReason = "superseded"
)

// Unit is one observed unit of a level.
type Unit struct {
	// Index is the unit's stable ordinal (pod index, replica index).
	Index int32
	// Revision is the template revision the unit was created from.
	Revision string
	// Surge is true when the unit was created as a surge unit (kept as a label).
	Surge bool
	// Scheduled, Ready and Available describe its health; Available already
	// includes minReadySeconds (see PodAvailable).
	Scheduled, Ready, Available bool
	// Terminating units still count toward the unit total and occupy their index.
	Terminating bool
	CreatedAt   time.Time
	ReadySince  time.Time
	// Key names the unit where an index can hold two live units (a pod's
	// name); a Delete carries it back. Empty at levels that never do.
	Key string
}

// Policy is everything one level needs to decide its next actions.
type Policy struct {
	// Type is RollingUpdate (outdated units are replaced within maxSurge and
	// maxUnavailable) or OnDelete (never deleted for an update; units created for
	// any other reason use the update revision).
	Type     v1alpha1.UpdateStrategyType
	Replicas int32
	// MaxUnavailable and MaxSurge are resolved against Replicas by ResolveFenceposts.
	// Their zero values mean maxUnavailable=1, maxSurge=0, the default strategy.
	MaxUnavailable, MaxSurge intstr.IntOrString
	// UpdateRevision is the revision the level is moving to.
	UpdateRevision string
	// CurrentRevision is the revision a unit is recreated at while it may not
	// update (below Partition or with MaxUpdated reached). Empty means UpdateRevision.
	CurrentRevision string
	// MaxUpdated caps how many units in [0, Replicas) may be at UpdateRevision now;
	// nil means no cap. The parent sets it for role steps and freezes it on pause.
	MaxUpdated *int32
	// Partition keeps units with Index < Partition on their revision.
	Partition   int32
	UpdateOrder UpdateOrder
	ScaleIn     ScaleInOrder
	// ReplaceWhileTerminating (a clique's TerminationStarted): a terminating unit
	// neither counts toward Replicas+maxSurge nor holds its index, so its
	// replacement starts at once. Otherwise it does both until it is gone.
	ReplaceWhileTerminating bool
	// SurgeAtReplacedIndex (a clique's surgePlacement ReplacedIndex, with
	// ReplaceWhileTerminating): a surge unit starts at the index of an
	// outdated unit, beside it, instead of at an index >= Replicas.
	SurgeAtReplacedIndex bool
}

// Create asks for a unit to be created.
type Create struct {
	Index    int32
	Revision string
	Surge    bool
}

// Delete asks for a unit to be deleted: the unit with Key at Index (the
// index's one live unit when the level's units carry no keys).
type Delete struct {
	Index  int32
	Reason DeleteReason
	Key    string
}

// LevelStatus is the status of one level, computed from the units observed.
type LevelStatus struct {
	// Replicas counts live (not terminating) units, surge units included.
	Replicas          int32
	ScheduledReplicas int32
	ReadyReplicas     int32
	AvailableReplicas int32
	// UpdatedReplicas and UpdatedReadyReplicas count live units at the update
	// revision with Index < Replicas: the units that stay when the update ends.
	// Surge units are left out so that role steps measure real progress. Under
	// OnDelete, units above Replicas (left by an outdated-first scale-in) count.
	UpdatedReplicas      int32
	UpdatedReadyReplicas int32
	// SurgeReplicas counts live units with Index >= Replicas.
	SurgeReplicas int32
	// SelectedToUpdate are the indices this plan deletes to update them.
	SelectedToUpdate []int32
	// Complete is true when exactly [0, Replicas) is live, all at the update
	// revision. Terminating units do not hold it back: the operator has nothing
	// left to do for them, and a Deployment's rollout completes the same way.
	Complete bool
}

// LevelPlan is the answer of PlanLevel. Creates and Deletes are sorted by index.
type LevelPlan struct {
	Creates []Create
	Deletes []Delete
	Status  LevelStatus
}

// unbounded stands for "no cap" in room arithmetic.
const unbounded = int64(1) << 40

// PlanLevel decides the next creates and deletes of one level.
//
// The rules, in the order they are applied:
//   - Holes in [0, Replicas) are filled lowest index first while the unit total
//     (terminating units included) stays within Replicas+maxSurge.
//   - While outdated units remain that may update, up to maxSurge surge units are
//     created at the lowest free indices >= Replicas, at the update revision.
//   - Outdated units that are already unavailable are deleted without spending the
//     unavailability budget (replace-failed).
//   - Units at indices >= Replicas beyond the surge still wanted are removed
//     (surge-cleanup or scale-in), then available outdated units are deleted in
//     update order (update); both only while available units stay >= Replicas-maxUnavailable.
//
// Partition and MaxUpdated decide which outdated units may update at all and at
// which revision a hole is refilled; a refill never takes the level past the cap.
// Terminating units count toward the total and keep their index until they go,
// unless ReplaceWhileTerminating: then they are left out altogether.
//
// With the seed's replicas=3, maxSurge=1, maxUnavailable=0 this yields: create surge
// 3; when it is available delete 0; when 0 is gone refill it (a hole below Replicas
// beats a new surge index); ...; when 2 is available again delete surge 3.
func PlanLevel(p Policy, units []Unit) (LevelPlan, error) {
	fp, err := ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
	if err != nil {
		return LevelPlan{}, err
	}
	if p.Type == v1alpha1.OnDeleteStrategyType {
		fp.MaxSurge = 0
	}
	if p.CurrentRevision == "" {
		p.CurrentRevision = p.UpdateRevision
	}
	v := observeLevel(p, fp, units, true)
	var plan LevelPlan
	// deletes first: a successor goes beside an outdated unit this plan keeps,
	// and what they free may be refilled at once (release)
	plan.Deletes = v.deletes()
	v.release()
	plan.Creates = v.creates()
	plan.Status = v.status(plan.Deletes)
	return plan, nil
}

// levelView holds what PlanLevel derives from the units in one pass: counts and
// the positions of the units each rule may pick from.
type levelView struct {
	p     Policy
	fp    Fenceposts
	units []Unit
	// occupied[i] says whether index i holds a unit, terminating or not. Indices
	// beyond its length cannot influence a lowest-free-index search.
	occupied []bool
	// leaving[i]: index i < Replicas holds only terminating units. A refill will
	// take it, so it keeps its claim on the cap ahead of higher empty indices.
	leaving []bool
	// keeper[i] is the position of the live unit index i < Replicas keeps when
	// it holds more than one (see keepers); nil when no index does.
	keeper []int32

	total, live, scheduled, ready, available int32
	updatedRegular, updatedReadyRegular      int32
	// vacancies counts updatable indices in [Partition, Replicas) that are empty or
	// terminating: each will be refilled and may use the cap.
	vacancies int32

	// positions in units of: live outdated units that may update, unavailable ones
	// (failed) and available ones (healthy); live units at indices >= Replicas;
	// live units beside the unit their index keeps (extra).
	failed, healthy, misplaced, extra []int32
	// successors counts extras that are outdated units beside their successor:
	// surge under way.
	successors int32
	// crowded counts the live units of each index that holds an extra: none
	// takes a successor.
	crowded map[int32]int32

	// set by deletes for creates: how many updatable units it deletes (each
	// refill will take the cap) and the positions of every unit it deletes.
	updateDeletes int64
	removed       []int32
	// supersededRemoved counts the outdated units beside their successors it
	// deletes: their surge is free again once they go
	supersededRemoved int32
}

func observeLevel(p Policy, fp Fenceposts, units []Unit, withOccupancy bool) levelView {
	v := levelView{p: p, fp: fp, units: units}
	if withOccupancy {
		// Surge creates never outnumber the outdated units, so the search never
		// looks past replicas + 2×units: a huge maxSurge allocates nothing more.
		v.occupied = make([]bool, int(max(p.Replicas, 0))+min(int(fp.MaxSurge), len(units))+len(units)+1)
	}
	v.keeper = v.keepers()
	liveEligible := int32(0)
	// healthy fills a shared buffer from the front, failed from the back
	buf := make([]int32, len(units))
	nHealthy, nFailed := 0, 0
	for i := range units {
		u := &units[i]
		if u.Terminating && p.ReplaceWhileTerminating {
			continue // gone as far as the plan is concerned
		}
		if withOccupancy && u.Index >= 0 && int(u.Index) < len(v.occupied) {
			v.occupied[u.Index] = true
		}
		if withOccupancy && u.Terminating && u.Index >= 0 && u.Index < p.Replicas {
			if v.leaving == nil {
				v.leaving = make([]bool, p.Replicas)
			}
			v.leaving[u.Index] = true
		}
		v.total++
		if u.Terminating {
			continue
		}
		v.live++
		if u.Scheduled {
			v.scheduled++
		}
		if u.Ready {
			v.ready++
		}
		if u.Available {
			v.available++
		}
		if u.Index < 0 || u.Index >= p.Replicas {
			if p.Type == v1alpha1.OnDeleteStrategyType && u.Index >= 0 {
				// OnDelete scales in outdated units first, so the units that stay
				// may sit above Replicas: they are members, not surge.
				v.countUpdated(u)
				continue
			}
			v.misplaced = append(v.misplaced, int32(i))
			continue
		}
		if v.keeper != nil && v.keeper[u.Index] != int32(i) {
			v.extra = append(v.extra, int32(i))
			if v.crowded == nil {
				v.crowded = map[int32]int32{}
			}
			v.crowded[u.Index] = max(v.crowded[u.Index], 1) + 1
			if v.supersededBy(u, &units[v.keeper[u.Index]]) {
				v.successors++
			}
			continue
		}
		v.countUpdated(u)
		if u.Index < p.Partition {
			continue
		}
		liveEligible++
		if u.Revision == p.UpdateRevision {
			continue
		}
		if u.Available {
			buf[nHealthy] = int32(i)
			nHealthy++
		} else {
			nFailed++
			buf[len(buf)-nFailed] = int32(i)
		}
	}
	if v.leaving != nil {
		for i := range units {
			if u := &units[i]; !u.Terminating && u.Index >= 0 && u.Index < p.Replicas {
				v.leaving[u.Index] = false
			}
		}
	}
	v.healthy, v.failed = buf[:nHealthy:nHealthy], buf[len(buf)-nFailed:]
	v.vacancies = max(0, p.Replicas-max(p.Partition, 0)) - liveEligible
	return v
}

// keepers picks the unit each index in [0, Replicas) keeps when it holds more
// than one live unit: a successor beside the outdated unit it replaces, or a
// duplicate. It returns nil when no index does, which is the common case.
func (v *levelView) keepers() []int32 {
	if v.p.Replicas <= 0 || len(v.units) < 2 {
		return nil
	}
	// a first look with one bit an index: most levels share no index
	seen, shared := make([]uint64, (v.p.Replicas+63)/64), false
	for i := range v.units {
		u := &v.units[i]
		if u.Terminating || u.Index < 0 || u.Index >= v.p.Replicas {
			continue
		}
		w, bit := u.Index/64, uint64(1)<<(u.Index%64)
		if seen[w]&bit != 0 {
			shared = true
			break
		}
		seen[w] |= bit
	}
	if !shared {
		return nil
	}
	keep := make([]int32, v.p.Replicas)
	for i := range keep {
		keep[i] = -1
	}
	for i := range v.units {
		u := &v.units[i]
		if u.Terminating || u.Index < 0 || u.Index >= v.p.Replicas {
			continue
		}
		if k := keep[u.Index]; k < 0 || v.keepsBefore(u, &v.units[k]) {
			keep[u.Index] = int32(i)
		}
	}
	return keep
}

// keepsBefore reports whether an index keeps a rather than b: the unit at the
// update revision, then the available one, then the older, then by key.
func (v *levelView) keepsBefore(a, b *Unit) bool {
	if x, y := a.Revision == v.p.UpdateRevision, b.Revision == v.p.UpdateRevision; x != y {
		return x
	}
	if a.Available != b.Available {
		return a.Available
	}
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.Key < b.Key
}

// supersededBy reports whether extra u is an outdated unit whose index now
// keeps its successor at the update revision: deleting it finishes its update.
func (v *levelView) supersededBy(u, keeper *Unit) bool {
	return u.Revision != v.p.UpdateRevision && keeper.Revision == v.p.UpdateRevision && u.Index >= v.p.Partition
}

func (v *levelView) countUpdated(u *Unit) {
	if u.Revision == v.p.UpdateRevision {
		v.updatedRegular++
		if u.Ready {
			v.updatedReadyRegular++
		}
	}
}

func (v *levelView) liveMisplaced() int32    { return int32(len(v.misplaced)) }
func (v *levelView) outdatedEligible() int32 { return int32(len(v.failed) + len(v.healthy)) }

// capRoom is how many more units in [0, Replicas) may move to the update revision.
func (v *levelView) capRoom() int64 {
	if v.p.MaxUpdated == nil {
		return unbounded
	}
	return int64(*v.p.MaxUpdated) - int64(v.updatedRegular)
}

// updateRoom is how many live outdated units may be deleted for an update now:
// the cap minus what the vacancies will take when they are refilled.
func (v *levelView) updateRoom() int64 {
	return max(0, v.capRoom()-int64(v.vacancies))
}

// surgeWanted is how many surge units the rollout can use: one per outdated unit
// still allowed to update, at most maxSurge. Successors already beside their
// outdated units are not counted: they are surge in use.
func (v *levelView) surgeWanted() int32 {
	if v.p.Type == v1alpha1.OnDeleteStrategyType {
		return 0
	}
	return int32(min(int64(v.fp.MaxSurge)-int64(v.successors), int64(v.outdatedEligible()), v.updateRoom()))
}

func (v *levelView) maxTotal() int32 { return max(v.p.Replicas, 0) + v.fp.MaxSurge }

func (v *levelView) minAvailable() int32 { return v.p.Replicas - v.fp.MaxUnavailable }

func (v *levelView) creates() []Create {
	total := v.total
	out := make([]Create, 0, min(max(0, v.maxTotal()-total), max(v.p.Replicas, 0)+int32(len(v.units))))
	fillRoom := v.capRoom()
	for i := int32(0); i < v.p.Replicas && total < v.maxTotal(); i++ {
		if v.occupied[i] {
			if v.leaving != nil && v.leaving[i] && i >= v.p.Partition && fillRoom > 0 {
				fillRoom-- // its refill comes later and goes first
			}
			continue
		}
		rev := v.p.CurrentRevision
		if i >= v.p.Partition && fillRoom > 0 {
			rev = v.p.UpdateRevision
			fillRoom--
		}
		out = append(out, Create{Index: i, Revision: rev})
		v.occupied[i] = true
		total++
	}
	need := v.surgeWanted() - v.liveMisplaced()
	if v.p.ReplaceWhileTerminating && v.p.SurgeAtReplacedIndex {
		return v.successorCreates(out, min(int64(need), int64(v.maxTotal()-total)))
	}
	for i := max(v.p.Replicas, 0); need > 0 && total < v.maxTotal() && int(i) < len(v.occupied); i++ {
		if v.occupied[i] {
			continue
		}
		out = append(out, Create{Index: i, Revision: v.p.UpdateRevision, Surge: true})
		v.occupied[i] = true
		total++
		need--
	}
	return out
}

// successorCreates spends the surge, at a level that places it at the
// replaced index (SurgeAtReplacedIndex), on successors: a unit at the update revision beside an
// available outdated unit, at its index, in update order, skipping those this
// plan deletes. When the successor is available the outdated unit is deleted
// (see deletes), so the surge unit is never one to remove at the end, as a
// Deployment's new pods are not. Each successor takes the cap as a refill does.
func (v *levelView) successorCreates(out []Create, n int64) []Create {
	n = min(n, v.updateRoom()-v.updateDeletes)
	if n <= 0 {
		return out
	}
	candidates := v.healthy
	if len(v.removed) > 0 || len(v.crowded) > 0 {
		deleting := make(map[int32]bool, len(v.removed))
		for _, i := range v.removed {
			deleting[i] = true
		}
		candidates = make([]int32, 0, len(v.healthy))
		for _, i := range v.healthy {
			if _, crowded := v.crowded[v.units[i].Index]; !deleting[i] && !crowded {
				candidates = append(candidates, i)
			}
		}
	}
	for _, i := range v.firstInOrder(candidates, byUpdateOrder, int(min(n, int64(len(candidates))))) {
		out = append(out, Create{Index: v.units[i].Index, Revision: v.p.UpdateRevision})
	}
	slices.SortFunc(out, func(a, b Create) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

// budget tracks the unavailability budget while deletes are chosen.
type budget struct {
	available, floor int32
}

// spend reports whether u may be deleted; deleting an unavailable unit is free.
func (b *budget) spend(u *Unit) bool {
	if !u.Available {
		return true
	}
	if b.available-1 < b.floor {
		return false
	}
	b.available--
	return true
}

func (v *levelView) deletes() []Delete {
	b := &budget{available: v.available, floor: v.minAvailable()}
	var out []Delete
	// at most: the failed within the cap, the healthy within the budget, the misplaced, the extras
	room, slack := v.updateRoom(), int64(max(0, b.available-b.floor))
	if n := min(int64(len(v.failed)), room) + min(int64(len(v.healthy)), room, slack) + int64(len(v.misplaced)+len(v.extra)); n > 0 {
		out, v.removed = make([]Delete, 0, n), make([]int32, 0, n)
	}
	// extras first: an outdated unit beside its available successor is the
	// step of the update furthest along
	out = v.removeExtras(b, out)
	if v.p.Type == v1alpha1.OnDeleteStrategyType {
		out = v.scaleIn(b, out)
	} else {
		room := v.updateRoom()
		failed := v.firstInOrder(v.failed, byUpdateOrder, int(room))
		for _, i := range failed {
			out = v.remove(out, i, ReasonReplaceFailed)
		}
		out = v.cleanupMisplaced(b, out)
		// every healthy candidate is available: the budget decides how many go
		k := min(room-int64(len(failed)), int64(b.available-b.floor))
		healthy := v.firstInOrder(v.healthy, byUpdateOrder, int(k))
		for _, i := range healthy {
			b.spend(&v.units[i])
			out = v.remove(out, i, ReasonUpdate)
		}
		v.updateDeletes = int64(len(failed) + len(healthy))
	}
	slices.SortFunc(out, func(a, b Delete) int {
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// remove appends the delete of the unit at position i.
func (v *levelView) remove(out []Delete, i int32, reason DeleteReason) []Delete {
	v.removed = append(v.removed, i)
	u := &v.units[i]
	return append(out, Delete{Index: u.Index, Reason: reason, Key: u.Key})
}

// release, at a level that replaces while terminating, lets the creates of
// the same plan use what its deletes free: a deleted unit counts no more, its
// index is free unless another live unit stays there, and the surge a
// superseded unit held is free. A refill or the next surge unit then starts in
// the same pass as the delete, not one pass later.
func (v *levelView) release() {
	if !v.p.ReplaceWhileTerminating {
		return
	}
	v.successors -= v.supersededRemoved
	for _, i := range v.removed {
		u := &v.units[i]
		v.total--
		if u.Index < 0 || int(u.Index) >= len(v.occupied) {
			continue
		}
		if n, ok := v.crowded[u.Index]; ok && n > 1 {
			v.crowded[u.Index] = n - 1
			continue
		}
		v.occupied[u.Index] = false
	}
}

// removeExtras deletes the live units beside the unit their index keeps, once
// the kept one is available (at once when the extra is unavailable itself): an
// outdated unit beside its successor as superseded, anything else as the
// surplus it is (under OnDelete, a scale-in).
func (v *levelView) removeExtras(b *budget, out []Delete) []Delete {
	extra := slices.Clone(v.extra)
	slices.SortFunc(extra, func(a, b int32) int {
		x, y := &v.units[a], &v.units[b]
		return cmp.Or(cmp.Compare(x.Index, y.Index), cmp.Compare(x.Key, y.Key), x.CreatedAt.Compare(y.CreatedAt))
	})
	for _, i := range extra {
		u := &v.units[i]
		kept := &v.units[v.keeper[u.Index]]
		if u.Available && !kept.Available {
			continue // the index still needs it
		}
		if !b.spend(u) {
			continue
		}
		reason := ReasonSurgeCleanup
		switch {
		case v.p.Type == v1alpha1.OnDeleteStrategyType:
			reason = ReasonScaleIn
		case v.supersededBy(u, kept):
			reason = ReasonSuperseded
			v.supersededRemoved++
		}
		out = v.remove(out, i, reason)
	}
	return out
}

// cleanupMisplaced removes live units at indices >= Replicas beyond the surge the
// rollout still wants: finished surge units and units left by a scale-in. A
// surge unit of the update revision not yet available stays while the level
// has fewer available units than Replicas: it is the capacity on its way (the
// outdated units it was made for may have failed and gone meanwhile), as a
// Deployment never scales its new pods down to make up for old ones lost.
func (v *levelView) cleanupMisplaced(b *budget, out []Delete) []Delete {
	excess := v.liveMisplaced() - max(0, v.surgeWanted())
	for _, i := range v.inOrder(v.misplaced, byMisplacedOrder, int(excess)) {
		u := &v.units[i]
		if u.Surge && u.Revision == v.p.UpdateRevision && !u.Available && b.available < v.p.Replicas {
			continue
		}
		if b.spend(u) {
			out = v.remove(out, i, misplacedReason(u))
		}
	}
	return out
}

// scaleIn removes live units above Replicas under OnDelete, in the ScaleIn
// order; extras are left to removeExtras.
func (v *levelView) scaleIn(b *budget, out []Delete) []Delete {
	excess := v.live - int32(len(v.extra)) - v.p.Replicas
	if excess <= 0 {
		return out
	}
	live := make([]int32, 0, v.live)
	for i := range v.units {
		if u := &v.units[i]; !u.Terminating && (v.keeper == nil || u.Index < 0 || u.Index >= v.p.Replicas || v.keeper[u.Index] == int32(i)) {
			live = append(live, int32(i))
		}
	}
	for _, i := range v.inOrder(live, byScaleInOrder, int(excess)) {
		u := &v.units[i]
		if b.spend(u) {
			out = v.remove(out, i, misplacedReason(u))
		}
	}
	return out
}

func misplacedReason(u *Unit) DeleteReason {
	if u.Surge {
		return ReasonSurgeCleanup
	}
	return ReasonScaleIn
}

// orderKey ranks units; smaller goes first. The last field always involves
// the index, so only units sharing an index tie (keyedPos breaks that tie).
type orderKey [3]int64

func (a orderKey) compare(b orderKey) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// updateKey orders outdated units for an update: oldest first, or lowest index.
func (v *levelView) updateKey(u *Unit) orderKey {
	if v.p.UpdateOrder == OldestFirst {
		return orderKey{u.CreatedAt.Unix(), int64(u.CreatedAt.Nanosecond()), int64(u.Index)}
	}
	return orderKey{int64(u.Index)}
}

// misplacedKey orders units at indices >= Replicas for removal. They all have to
// go, so unavailable ones go first (free), then the ScaleIn order.
func (v *levelView) misplacedKey(u *Unit) orderKey {
	k := v.scaleInKey(u)
	k[0] += 4 * boolTo[int64](u.Available)
	return k
}

// scaleInKey: OutdatedFirst ranks outdated, then unavailable, then the highest
// index; HighestIndexFirst ranks by index alone.
func (v *levelView) scaleInKey(u *Unit) orderKey {
	if v.p.ScaleIn == HighestIndexFirst {
		return orderKey{0, 0, -int64(u.Index)}
	}
	return orderKey{2*boolTo[int64](u.Revision == v.p.UpdateRevision) + boolTo[int64](u.Available), 0, -int64(u.Index)}
}

// boolTo is 1 for true and 0 for false.
func boolTo[T int32 | int64](b bool) T {
	if b {
		return 1
	}
	return 0
}

// inOrder returns the k positions of pos that come first by key, in that order.
// Victims of a scale-in are spent against the budget one by one, so their order
// matters; there are few of them.
func (v *levelView) inOrder(pos []int32, order keyOrder, k int) []int32 {
	if k <= 0 || len(pos) == 0 {
		return nil
	}
	keyed := v.keyed(pos, order)
	slices.SortFunc(keyed, v.compareKeyed)
	out := make([]int32, min(k, len(keyed)))
	for i := range out {
		out[i] = keyed[i].pos
	}
	return out
}

// firstInOrder returns the k positions of pos that come first by key, as a set:
// update candidates all cost the same budget, so a linear-time selection is
// enough and no full sort of thousands of pods is needed.
func (v *levelView) firstInOrder(pos []int32, order keyOrder, k int) []int32 {
	if k <= 0 || len(pos) == 0 {
		return nil
	}
	if k >= len(pos) {
		return pos
	}
	keyed := v.keyed(pos, order)
	selectSmallest(keyed, k, v.compareKeyed)
	out := make([]int32, k)
	for i := range out {
		out[i] = keyed[i].pos
	}
	return out
}

func (v *levelView) keyed(pos []int32, order keyOrder) []keyedPos {
	keyed := make([]keyedPos, len(pos))
	for i, p := range pos {
		u := &v.units[p]
		var key orderKey
		switch order {
		case byUpdateOrder:
			key = v.updateKey(u)
		case byMisplacedOrder:
			key = v.misplacedKey(u)

		default:
			key = v.scaleInKey(u)
		}
		keyed[i] = keyedPos{key: key, pos: p}
	}
	return keyed
}

// keyOrder names the order firstInOrder ranks by.
type keyOrder int

const (
	byUpdateOrder keyOrder = iota
	byMisplacedOrder
	byScaleInOrder
)

type keyedPos struct {
	key orderKey
	pos int32
}

// compareKeyed ranks two keyed positions; units that share an index tie on
// the key and are ranked by their Key (kept out of keyedPos, which then holds
// no pointer for the collector to follow).
func (v *levelView) compareKeyed(a, b keyedPos) int {
	if c := a.key.compare(b.key); c != 0 {
		return c
	}
	return strings.Compare(v.units[a.pos].Key, v.units[b.pos].Key)
}

// selectSmallest reorders ks so that its first k elements are the k smallest
// keys (quickselect with a median-of-three pivot; keys are unique but for
// units without a Key sharing an index, which are alike).
func selectSmallest(ks []keyedPos, k int, compare func(a, b keyedPos) int) {
	lo, hi := 0, len(ks)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if compare(ks[mid], ks[lo]) < 0 {
			ks[mid], ks[lo] = ks[lo], ks[mid]
		}
		if compare(ks[hi], ks[lo]) < 0 {
			ks[hi], ks[lo] = ks[lo], ks[hi]
		}
		if compare(ks[hi], ks[mid]) < 0 {
			ks[hi], ks[mid] = ks[mid], ks[hi]
		}
		pivot := ks[mid]
		i, j := lo, hi
		for i <= j {
			for compare(ks[i], pivot) < 0 {
				i++
			}
			for compare(ks[j], pivot) > 0 {
				j--
			}
			if i <= j {
				ks[i], ks[j] = ks[j], ks[i]
				i++
				j--
			}
		}
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}

func (v *levelView) status(deletes []Delete) LevelStatus {
	s := LevelStatus{
		Replicas:             v.live,
		ScheduledReplicas:    v.scheduled,
		ReadyReplicas:        v.ready,
		AvailableReplicas:    v.available,
		UpdatedReplicas:      v.updatedRegular,
		UpdatedReadyReplicas: v.updatedReadyRegular,
		SurgeReplicas:        v.liveMisplaced(),
		Complete:             v.updatedRegular == v.p.Replicas && v.live == v.p.Replicas,
	}
	if len(deletes) > 0 {
		s.SelectedToUpdate = make([]int32, 0, len(deletes))
	}
	for _, d := range deletes {
		if d.Reason == ReasonUpdate || d.Reason == ReasonReplaceFailed || d.Reason == ReasonSuperseded {
			s.SelectedToUpdate = append(s.SelectedToUpdate, d.Index)
		}
	}
	return s
}

// PodAvailable reports whether a pod counts as available: ready for at least
// minReadySeconds at now, as Deployment defines it.
func PodAvailable(ready bool, readySince time.Time, minReadySeconds int32, now time.Time) bool {
	if !ready {
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	return !readySince.IsZero() && !now.Before(readySince.Add(time.Duration(minReadySeconds)*time.Second))
}

// Inputs are what a level plan was made from, as key/value pairs for a debug
// log line: the policy's sizes and revisions, and each unit as
// index@revision with its state (s scheduled, r ready, a available, t
// terminating, + surge). With them a surprising plan can be replayed.
func Inputs(p Policy, units []Unit) []any {
	maxUpdated := "none"
	if p.MaxUpdated != nil {
		maxUpdated = fmt.Sprint(*p.MaxUpdated)
	}
	policy := fmt.Sprintf("%s replicas=%d maxSurge=%s maxUnavailable=%s maxUpdated=%s partition=%d update=%s current=%s replaceWhileTerminating=%t surgeAtReplacedIndex=%t",
		p.Type, p.Replicas, p.MaxSurge.String(), p.MaxUnavailable.String(), maxUpdated, p.Partition, p.UpdateRevision, p.CurrentRevision,
		p.ReplaceWhileTerminating, p.SurgeAtReplacedIndex)
	us := make([]string, 0, len(units))
	for _, u := range units {
		state := ""
		for _, f := range []struct {
			on bool
			c  string
		}{{u.Scheduled, "s"}, {u.Ready, "r"}, {u.Available, "a"}, {u.Terminating, "t"}, {u.Surge, "+"}} {
			if f.on {
				state += f.c
			}
		}
		us = append(us, fmt.Sprintf("%d@%s:%s", u.Index, u.Revision, state))
	}
	return []any{"policy", policy, "units", us}
}

// Summary is the plan as key/value pairs for a log line: what it creates and
// deletes (index and reason) and the counts it reports.
func (p LevelPlan) Summary() []any {
	creates := make([]string, 0, len(p.Creates))
	for _, c := range p.Creates {
		creates = append(creates, fmt.Sprintf("%d@%s", c.Index, c.Revision))
	}
	deletes := make([]string, 0, len(p.Deletes))
	for _, d := range p.Deletes {
		deletes = append(deletes, fmt.Sprintf("%d:%s", d.Index, d.Reason))
	}
	s := p.Status
	return []any{"creates", creates, "deletes", deletes, "replicas", s.Replicas, "updated", s.UpdatedReplicas,
		"available", s.AvailableReplicas, "complete", s.Complete}
}
