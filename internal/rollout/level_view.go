package rollout

// What PlanLevel reads from the units before it decides: counts, the unit
// each index keeps, and the room the cap and the surge leave.

import (
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

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

func (v *levelView) liveMisplaced() int32 { return int32(len(v.misplaced)) }

// surgeInUse counts the live units at indices >= Replicas on the update
// revision: the surge a rollout already has. Outdated units there are a
// scale-in's leftovers on their way out, not surge.
func (v *levelView) surgeInUse() int32 {
	return countUnits(v.units, func(u *Unit) bool {
		return (u.Index < 0 || u.Index >= v.p.Replicas) && u.Revision == v.p.UpdateRevision
	})
}
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
