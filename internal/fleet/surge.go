package fleet

import (
	"slices"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// surge writes every desired slice as the union of its observed and final
// clusters, capped at 100. When the union does not fit, the slice gives up some
// of the clusters it is losing, in this order: clusters leaving the placement,
// clusters housed elsewhere when the write happens, and last clusters with no
// other home, which are first copied into spill slices.
//
// A cluster is housed when it is already in its final slice, when its final
// slice's write comes earlier in the plan, or when it is in an observed slice
// outside the layout (obsolete or spill slices, which a surge never writes).
//
// The order of the writes: first every write that takes no selected cluster out
// of its slice, in slice order; then the others, each placed after the writes
// that house the clusters it gives up. Only when those writes wait on each other
// in a cycle does a slice spill: its spill slices are created just before its
// write. Every prefix of the plan keeps every selected cluster in the union.
func surge(obs map[string]*observedSlice, desired Layout) []Write {
	selected := map[string]string{} // cluster -> name of its final slice
	wanted := map[string]bool{}
	for _, d := range desired.Slices {
		wanted[d.Name] = true
		for _, c := range d.Clusters {
			selected[c] = d.Name
		}
	}
	inOtherSlices := map[string]bool{} // clusters of observed slices outside the layout
	for name, o := range obs {
		if !wanted[name] {
			for c := range o.set {
				inOtherSlices[c] = true
			}
		}
	}
	written := map[string]bool{} // desired slices holding their final set once the plan so far is applied
	housed := func(c string) bool {
		final := selected[c]
		return obs[final].has(c) || written[final] || inOtherSlices[c]
	}

	// Slices that give up only clusters leaving the placement go first.
	var writes []Write
	var giving []*losingSlice
	for _, d := range desired.Slices {
		l := newLosingSlice(obs[d.Name], d, selected)
		if l.mustDrop > 0 {
			giving = append(giving, l)
			continue
		}
		writes = append(writes, l.write(nil, l.moving)...)
		written[d.Name] = true
	}

	// Then, repeatedly, the first slice whose dropped clusters are all housed; in
	// a cycle, the first slice, through spill slices.
	names := newSliceNames(desired.Placement, obs, len(desired.Slices))
	for len(giving) > 0 {
		k := slices.IndexFunc(giving, func(l *losingSlice) bool { return l.countHoused(housed) >= l.mustDrop })
		k = max(k, 0)
		l := giving[k]
		giving = slices.Delete(giving, k, k+1)
		var noHome, home []string
		for _, c := range l.moving {
			if housed(c) {
				home = append(home, c)
			} else {
				noHome = append(noHome, c)
			}
		}
		// The union drops housed clusters first; what it must drop beyond them is
		// the tail of the homeless ones, which spill.
		var spills []Write
		if n := l.mustDrop - len(home); n > 0 {
			for part := range slices.Chunk(noHome[len(noHome)-n:], fleetv1alpha1.MaxClustersPerDecision) {
				spills = append(spills, Write{Op: Create, Slice: Slice{Name: names.next(), Labels: l.desired.Labels, Clusters: part}})
			}
		}
		writes = append(writes, spills...)
		writes = append(writes, l.write(noHome, home)...)
		written[l.desired.Name] = true
	}
	return writes
}

// losingSlice is a desired slice with what its observed slice holds beyond its
// final set.
type losingSlice struct {
	observed *observedSlice
	desired  Slice
	// leaving are clusters leaving the placement, moving those going to another
	// slice; mustDrop is how many moving clusters the union cannot keep.
	leaving, moving []string
	mustDrop        int
}

func newLosingSlice(o *observedSlice, d Slice, selected map[string]string) *losingSlice {
	l := &losingSlice{observed: o, desired: d}
	l.leaving, l.moving = losing(o, d, selected)
	room := fleetv1alpha1.MaxClustersPerDecision - len(d.Clusters)
	l.mustDrop = max(0, len(l.moving)-room)
	return l
}

func (l *losingSlice) countHoused(housed func(string) bool) int {
	n := 0
	for _, c := range l.moving {
		if housed(c) {
			n++
		}
	}
	return n
}

// write returns the write of the union: the final set plus as many of the
// moving clusters (first, then second, in that order of preference) and then
// of the leaving ones as fit. No write when the slice already holds that.
func (l *losingSlice) write(first, second []string) []Write {
	room := fleetv1alpha1.MaxClustersPerDecision - len(l.desired.Clusters)
	keep := slices.Concat(first, second, l.leaving)
	union := Slice{Name: l.desired.Name, Labels: l.desired.Labels, Clusters: slices.Concat(l.desired.Clusters, keep[:min(room, len(keep))])}
	slices.Sort(union.Clusters)
	switch {
	case l.observed == nil:
		return []Write{{Op: Create, Slice: union}}
	case sameSlice(l.observed.Slice, union):
		return nil
	default:
		return []Write{{Op: Update, Slice: union}}
	}
}

// losing splits the observed clusters of a slice that are not in its final set
// into those leaving the placement and those moving to another slice, each
// sorted.
func losing(o *observedSlice, d Slice, selected map[string]string) (leaving, moving []string) {
	if o == nil {
		return nil, nil
	}
	for c := range o.set {
		switch final, ok := selected[c]; {
		case !ok:
			leaving = append(leaving, c)
		case final != d.Name:
			moving = append(moving, c)
		}
	}
	slices.Sort(leaving)
	slices.Sort(moving)
	return leaving, moving
}

func (o *observedSlice) has(c string) bool { return o != nil && o.set[c] }

// sliceNames hands out names for spill slices: the lowest numbers after the
// layout's slices that no observed slice uses.
type sliceNames struct {
	placement string
	obs       map[string]*observedSlice
	n         int
}

func newSliceNames(placement string, obs map[string]*observedSlice, layoutSlices int) *sliceNames {
	return &sliceNames{placement: placement, obs: obs, n: layoutSlices}
}

func (s *sliceNames) next() string {
	for {
		s.n++
		if name := SliceName(s.placement, s.n); s.obs[name] == nil {
			return name
		}
	}
}
