package rollout

// The delete rules of PlanLevel, in the order deletes applies them: extras,
// then (OnDelete) scale-in, or failed outdated units, misplaced units and
// available outdated units within the unavailability budget.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

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
	// indices >= Replicas have no keeper: count who stays there
	var above map[int32]int32
	for _, i := range v.removed {
		if u := &v.units[i]; u.Index >= v.p.Replicas && above == nil {
			above = map[int32]int32{}
			for k := range v.units {
				if w := &v.units[k]; !w.Terminating && w.Index >= v.p.Replicas {
					above[w.Index]++
				}
			}
		}
	}
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
		if n, ok := above[u.Index]; ok && n > 1 {
			above[u.Index] = n - 1
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
// rollout still wants: finished surge units and units left by a scale-in. An
// outdated unit there is no surge (it would have to be replaced too): it
// goes first, always, so a scale-in during a rollout takes outdated units
// before updated ones. Updated units there stay as the surge in use while the
// rollout can use it. A surge unit of the update revision not yet available
// stays while the level has fewer available units than Replicas: it is the
// capacity on its way (the outdated units it was made for may have failed and
// gone meanwhile), as a Deployment never scales its new pods down to make up
// for old ones lost.
func (v *levelView) cleanupMisplaced(b *budget, out []Delete) []Delete {
	outdated := make([]int32, 0, len(v.misplaced))
	updated := make([]int32, 0, len(v.misplaced))
	for _, i := range v.misplaced {
		if v.units[i].Revision == v.p.UpdateRevision {
			updated = append(updated, i)
		} else {
			outdated = append(outdated, i)
		}
	}
	for _, i := range v.inOrder(outdated, byMisplacedOrder, len(outdated)) {
		if b.spend(&v.units[i]) {
			out = v.remove(out, i, misplacedReason(&v.units[i]))
		}
	}
	excess := int32(len(updated)) - max(0, v.surgeWanted())
	for _, i := range v.inOrder(updated, byMisplacedOrder, int(excess)) {
		u := &v.units[i]
		if u.Surge && !u.Available && b.available < v.p.Replicas {
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
