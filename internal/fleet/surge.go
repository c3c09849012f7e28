package fleet

import (
	"slices"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// surge writes every desired slice as the union of its observed and final
// clusters, capped at 100. When the union does not fit, the slice gives up some
// of the clusters it is losing, in this order: clusters leaving the placement,
// clusters that have another home while the write happens, and last clusters
// with no other home, which are first copied into spill slices.
//
// A cluster c has another home when it is already in its final slice, when its
// final slice's write comes first in the plan (writes that take no selected
// cluster out of their slice), or when it is in an observed slice outside the
// layout (obsolete or spill slices, which a surge never writes).
//
// The order of the writes: first the writes that take no selected cluster out
// of their slice (desired slices, then spill creates), then the others. Every
// prefix of that order keeps every selected cluster that was in the union in it.
func surge(obs map[string]*observedSlice, desired Layout) []Write {
	selected := map[string]string{} // cluster -> name of its final slice
	for _, d := range desired.Slices {
		for _, c := range d.Clusters {
			selected[c] = d.Name
		}
	}
	wanted := map[string]bool{}
	for _, d := range desired.Slices {
		wanted[d.Name] = true
	}
	inOtherSlices := map[string]bool{} // clusters of observed slices outside the layout
	for name, o := range obs {
		if !wanted[name] {
			for c := range o.set {
				inOtherSlices[c] = true
			}
		}
	}

	// A desired slice's write is "adding" when the clusters it must give up can
	// all be taken from those leaving the placement.
	adding := map[string]bool{}
	for _, d := range desired.Slices {
		leaving, _ := losing(obs[d.Name], d, selected)
		adding[d.Name] = overflow(obs[d.Name], d) <= len(leaving)
	}
	homeless := func(c string) bool {
		final := selected[c]
		return !obs[final].has(c) && !adding[final] && !inOtherSlices[c]
	}

	var first, spills, last []Write
	names := newSliceNames(desired.Placement, obs, len(desired.Slices))
	for _, d := range desired.Slices {
		o := obs[d.Name]
		leaving, moving := losing(o, d, selected)
		var noHome, housed []string
		for _, c := range moving {
			if homeless(c) {
				noHome = append(noHome, c)
			} else {
				housed = append(housed, c)
			}
		}
		// Keep in this order of preference; drop the tail.
		keep := slices.Concat(noHome, housed, leaving)
		room := fleetv1alpha1.MaxClustersPerDecision - len(d.Clusters)
		dropped := keep[min(room, len(keep)):]
		keep = keep[:min(room, len(keep))]
		for part := range slices.Chunk(spilled(dropped, noHome), fleetv1alpha1.MaxClustersPerDecision) {
			spills = append(spills, Write{Op: Create, Slice: Slice{Name: names.next(), Labels: d.Labels, Clusters: part}})
		}

		union := Slice{Name: d.Name, Labels: d.Labels, Clusters: slices.Concat(d.Clusters, keep)}
		slices.Sort(union.Clusters)
		switch {
		case o == nil:
			first = append(first, Write{Op: Create, Slice: union})
		case sameSlice(o.Slice, union):
		case adding[d.Name]:
			first = append(first, Write{Op: Update, Slice: union})
		default:
			last = append(last, Write{Op: Update, Slice: union})
		}
	}
	return slices.Concat(first, spills, last)
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

// overflow is how many clusters the union of a slice's observed and final sets
// has above 100.
func overflow(o *observedSlice, d Slice) int {
	n := len(d.Clusters)
	if o != nil {
		for c := range o.set {
			if _, found := slices.BinarySearch(d.Clusters, c); !found {
				n++
			}
		}
	}
	return max(0, n-fleetv1alpha1.MaxClustersPerDecision)
}

// spilled are the dropped clusters that have no other home.
func spilled(dropped, noHome []string) []string {
	var out []string
	for _, c := range dropped {
		if _, found := slices.BinarySearch(noHome, c); found {
			out = append(out, c)
		}
	}
	return out
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
