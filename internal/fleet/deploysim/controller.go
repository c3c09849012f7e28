package deploysim

import (
	"cmp"
	"math"
	"slices"
)

// Sync is one sync of the Deployment controller: paused, it only scales its
// ReplicaSets in proportion; on a change of replicas it does the same; else
// it takes one rolling step, growing the new ReplicaSet within maxSurge or,
// when that is not possible, shrinking the old ones within maxUnavailable.
// Then it writes the status from the ReplicaSets' statuses (which do not
// show what it just did). It reports whether it changed anything.
func (d *Deployment) Sync() bool {
	before, status, revision := d.snapshot(), d.Status, d.Revision
	d.sync()
	return !slices.Equal(before, d.snapshot()) || status != d.Status || revision != d.Revision
}

func (d *Deployment) sync() {
	newRS, olds := d.newAndOld(false)
	switch {
	case d.Spec.Paused || d.scalingEvent(newRS, olds):
		d.scale(newRS, olds)
	default:
		newRS, olds = d.newAndOld(true)
		if !d.growNew(newRS) {
			d.shrinkOld(newRS, active(olds))
		}
	}
	d.writeStatus(newRS)
}

// newAndOld are the ReplicaSet of the spec's template (nil when there is
// none and create is false) and the others. The new one's revision is kept
// above every old one's; the Deployment takes the new one's revision when it
// has it.
func (d *Deployment) newAndOld(create bool) (*ReplicaSet, []*ReplicaSet) {
	newRS := d.Of(d.Spec.Template)
	var olds []*ReplicaSet
	var maxOld int64
	for _, rs := range d.ReplicaSets {
		if rs != newRS {
			olds = append(olds, rs)
			maxOld = max(maxOld, rs.Revision)
		}
	}
	switch {
	case newRS != nil && newRS.Revision <= maxOld:
		// A rollback to an older template: its ReplicaSet is renumbered,
		// and the Deployment follows at its next sync.
		newRS.Revision = maxOld + 1
	case newRS != nil:
		d.Revision = newRS.Revision
	case create:
		newRS = d.addReplicaSet(d.Spec.Template, maxOld+1, 0)
		newRS.Replicas = d.newReplicas(append(slices.Clone(olds), newRS), newRS)
		d.Revision = newRS.Revision
	}
	return newRS, olds
}

// snapshot is every ReplicaSet as it is now.
func (d *Deployment) snapshot() []ReplicaSet {
	out := make([]ReplicaSet, len(d.ReplicaSets))
	for i, rs := range d.ReplicaSets {
		out[i] = *rs
	}
	return out
}

// scalingEvent: a ReplicaSet with replicas was last scaled for other
// replicas than the Deployment's now.
func (d *Deployment) scalingEvent(newRS *ReplicaSet, olds []*ReplicaSet) bool {
	for _, rs := range active(withNew(olds, newRS)) {
		if rs.DesiredReplicas != d.Spec.Replicas {
			return true
		}
	}
	return false
}

// growNew scales the new ReplicaSet toward replicas, within maxSurge over
// every ReplicaSet's replicas (down at once when above replicas); it reports
// whether it scaled.
func (d *Deployment) growNew(newRS *ReplicaSet) bool {
	switch {
	case newRS.Replicas == d.Spec.Replicas:
		return false
	case newRS.Replicas > d.Spec.Replicas:
		return d.scaleTo(newRS, d.Spec.Replicas, false)
	}
	return d.scaleTo(newRS, d.newReplicas(d.ReplicaSets, newRS), false)
}

// newReplicas is what the new ReplicaSet may grow to: by what is left of
// replicas + maxSurge over the replicas of all, never above replicas.
func (d *Deployment) newReplicas(all []*ReplicaSet, newRS *ReplicaSet) int32 {
	most := d.Spec.Replicas + d.Spec.maxSurge()
	now := replicasOf(all)
	if now >= most {
		return newRS.Replicas
	}
	return newRS.Replicas + min(most-now, d.Spec.Replicas-newRS.Replicas)
}

// shrinkOld scales the old ReplicaSets (those with replicas, oldest first)
// down: first their pods reported not available, as far as what may go
// (every ReplicaSet's replicas less minAvailable less the new one's pods not
// yet available), then as many as the available pods reported exceed
// minAvailable. It reports whether it scaled.
func (d *Deployment) shrinkOld(newRS *ReplicaSet, olds []*ReplicaSet) bool {
	if replicasOf(olds) == 0 {
		return false
	}
	minAvailable := d.Spec.minAvailable()
	mayGo := replicasOf(d.ReplicaSets) - minAvailable - (newRS.Replicas - newRS.Status.AvailableReplicas)
	if mayGo <= 0 {
		return false
	}
	var gone int32
	for _, rs := range olds {
		if gone >= mayGo {
			break
		}
		unhealthy := rs.Replicas - rs.Status.AvailableReplicas
		if rs.Replicas == 0 || unhealthy == 0 {
			continue
		}
		if unhealthy < 0 {
			// Its status counts more available pods than it has replicas
			// (its pods just deleted, not yet seen gone): the real
			// controller takes this for an invalid scale-up and gives up
			// this sync, keeping what it scaled so far.
			return false
		}
		n := min(mayGo-gone, unhealthy)
		d.scaleTo(rs, rs.Replicas-n, false)
		gone += n
	}
	// Only the old ReplicaSets that had replicas and the new one count here:
	// pods an old one scaled to 0 still reports are not taken as available.
	available := availableOf(withNew(olds, newRS))
	if available <= minAvailable {
		return gone > 0
	}
	excess := available - minAvailable
	var shrunk int32
	for _, rs := range olds {
		if shrunk >= excess {
			break
		}
		if rs.Replicas == 0 {
			continue
		}
		n := min(rs.Replicas, excess-shrunk)
		d.scaleTo(rs, rs.Replicas-n, false)
		shrunk += n
	}
	return gone+shrunk > 0
}

// scale is the Deployment controller's scaling on a change of replicas or
// while paused: the one ReplicaSet with replicas (or the newest, when none
// has any) takes them all; a new ReplicaSet that is saturated (all replicas,
// all available) leaves the old ones none; else every ReplicaSet with
// replicas gets its share of what the sum is off from replicas + maxSurge, in
// proportion to its size against the maxReplicas it was last scaled under,
// the remainder going to the largest.
func (d *Deployment) scale(newRS *ReplicaSet, olds []*ReplicaSet) {
	if only := activeOrLatest(newRS, olds); only != nil {
		if only.Replicas != d.Spec.Replicas {
			d.scaleTo(only, d.Spec.Replicas, false)
		}
		return
	}
	if newRS != nil && newRS.DesiredReplicas == d.Spec.Replicas && newRS.Replicas == d.Spec.Replicas &&
		newRS.Status.AvailableReplicas == d.Spec.Replicas {
		for _, rs := range active(olds) {
			d.scaleTo(rs, 0, false)
		}
		return
	}
	all := active(withNew(newestFirst(olds), newRS))
	var allowed int32
	if d.Spec.Replicas > 0 {
		allowed = d.Spec.Replicas + d.Spec.maxSurge()
	}
	toAdd := allowed - replicasOf(all)
	switch {
	case toAdd > 0:
		// largest first; of equal ones the newer grows first
		slices.SortFunc(all, func(a, b *ReplicaSet) int {
			return cmp.Or(cmp.Compare(b.Replicas, a.Replicas), cmp.Compare(b.created, a.created))
		})
	case toAdd < 0:
		// largest first; of equal ones the older shrinks first
		slices.SortFunc(all, func(a, b *ReplicaSet) int {
			return cmp.Or(cmp.Compare(b.Replicas, a.Replicas), cmp.Compare(a.created, b.created))
		})
	}
	sizes := make([]int32, len(all))
	var added int32
	for i, rs := range all {
		sizes[i] = rs.Replicas
		if toAdd != 0 {
			p := d.proportion(rs, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			sizes[0] = max(0, sizes[0]+toAdd-added)
		}
		d.scaleTo(rs, sizes[i], true)
	}
}

// proportion is rs's part of toAdd (of which added went to larger ones): its
// size scaled from the maxReplicas it was last scaled under to replicas +
// maxSurge now, within what is left to add or remove.
func (d *Deployment) proportion(rs *ReplicaSet, toAdd, added int32) int32 {
	if rs.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	left := toAdd - added
	fraction := d.fraction(rs)
	if toAdd > 0 {
		return min(fraction, left)
	}
	return max(fraction, left)
}

// fraction is how far rs would move if it kept its share of the most pods
// the Deployment may run.
func (d *Deployment) fraction(rs *ReplicaSet) int32 {
	if d.Spec.Replicas == 0 {
		return -rs.Replicas
	}
	before := rs.MaxReplicas
	if before == 0 {
		before = d.Status.Replicas
		if before == 0 {
			return 0
		}
	}
	after := d.Spec.Replicas + d.Spec.maxSurge()
	return int32(math.Round(float64(rs.Replicas)*float64(after)/float64(before))) - rs.Replicas
}

// scaleTo sets rs's replicas and, with them, its desired-replicas and
// max-replicas annotations; unforced, it does nothing when the replicas do
// not change. It reports whether the replicas changed.
func (d *Deployment) scaleTo(rs *ReplicaSet, replicas int32, force bool) bool {
	if !force && rs.Replicas == replicas {
		return false
	}
	changed := rs.Replicas != replicas
	rs.DesiredReplicas, rs.MaxReplicas = d.Spec.Replicas, d.Spec.Replicas+d.Spec.maxSurge()
	if changed {
		rs.Replicas = replicas
		rs.Generation++
	}
	return changed
}

// writeStatus is the status the Deployment controller writes: sums of the
// ReplicaSets' statuses, at the generation it synced.
func (d *Deployment) writeStatus(newRS *ReplicaSet) {
	s := Status{ObservedGeneration: d.Generation}
	for _, rs := range d.ReplicaSets {
		s.Replicas += rs.Status.Replicas
		s.Available += rs.Status.AvailableReplicas
		s.Terminating += rs.Status.Terminating
	}
	if newRS != nil {
		s.Updated = newRS.Status.Replicas
	}
	d.Status = s
}

// activeOrLatest is the one ReplicaSet with replicas, or, when none has any,
// the new one or else the newest; nil when several have replicas.
func activeOrLatest(newRS *ReplicaSet, olds []*ReplicaSet) *ReplicaSet {
	if newRS == nil && len(olds) == 0 {
		return nil
	}
	olds = newestFirst(olds)
	all := active(withNew(olds, newRS))
	switch {
	case len(all) == 1:
		return all[0]
	case len(all) > 1:
		return nil
	case newRS != nil:
		return newRS
	}
	return olds[0]
}

func withNew(olds []*ReplicaSet, newRS *ReplicaSet) []*ReplicaSet {
	all := slices.Clone(olds)
	if newRS != nil {
		all = append(all, newRS)
	}
	return all
}

func newestFirst(rss []*ReplicaSet) []*ReplicaSet {
	out := slices.Clone(rss)
	slices.SortFunc(out, func(a, b *ReplicaSet) int { return cmp.Compare(b.created, a.created) })
	return out
}

// active are the ReplicaSets with replicas.
func active(rss []*ReplicaSet) []*ReplicaSet {
	var out []*ReplicaSet
	for _, rs := range rss {
		if rs.Replicas > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func replicasOf(rss []*ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += rs.Replicas
	}
	return n
}

func availableOf(rss []*ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += rs.Status.AvailableReplicas
	}
	return n
}
