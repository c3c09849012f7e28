package rollout

// The orders in which PlanLevel picks units: update, misplaced and scale-in
// orders, with a partial selection so a wide level is not sorted whole.

import (
	"cmp"
	"slices"
	"strings"
)

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
