package rollout

// The create rules of PlanLevel: refill holes, then surge (above Replicas, or
// beside the unit it replaces).

import (
	"cmp"
	"slices"
)

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
	need := v.surgeWanted() - v.surgeInUse()
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
