package fleet

import (
	"maps"
	"slices"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// Op is what a write does to a slice.
type Op string

const (
	// Create creates the slice with its labels and clusters.
	Create Op = "Create"
	// Update replaces the slice's labels and clusters.
	Update Op = "Update"
	// Delete deletes the slice.
	Delete Op = "Delete"
)

// Write is one write to one slice. For Delete only Slice.Name is set.
type Write struct {
	Op    Op
	Slice Slice
}

// Phase is where an update of the decisions stands, as derived from the
// observed slices. It is never stored.
type Phase string

const (
	// PhaseSettled: every slice holds its final set and nothing else is left.
	PhaseSettled Phase = "Settled"
	// PhaseSurge: RollingUpdate, some selected cluster is not yet in its final
	// slice; the writes only add clusters to slices, or remove clusters that
	// have another home.
	PhaseSurge Phase = "Surge"
	// PhaseFinalize: RollingUpdate, every selected cluster is in its final
	// slice; the writes trim slices to their final sets and delete the rest.
	PhaseFinalize Phase = "Finalize"
	// PhaseWriteAll: All, the slices are written to their final sets directly.
	PhaseWriteAll Phase = "WriteAll"
)

// Plan is the next writes for a placement's slices.
type Plan struct {
	Phase  Phase
	Writes []Write
}

// PlanDecisions returns the writes that move the observed slices of a placement
// towards the desired layout, under the given update type ("" is RollingUpdate).
// See the package documentation for how the writes must be applied.
func PlanDecisions(observed []Slice, desired Layout, update fleetv1alpha1.DecisionUpdateType) Plan {
	obs := indexSlices(observed)
	if settled(obs, desired) {
		return Plan{Phase: PhaseSettled}
	}
	if update == fleetv1alpha1.AllDecisionUpdate {
		return Plan{Phase: PhaseWriteAll, Writes: writeFinal(obs, desired)}
	}
	if everyClusterInItsFinalSlice(obs, desired) {
		return Plan{Phase: PhaseFinalize, Writes: writeFinal(obs, desired)}
	}
	return Plan{Phase: PhaseSurge, Writes: surge(obs, desired)}
}

// observedSlice is an observed slice with its clusters as a set.
type observedSlice struct {
	Slice
	set map[string]bool
}

func indexSlices(observed []Slice) map[string]*observedSlice {
	obs := make(map[string]*observedSlice, len(observed))
	for _, s := range observed {
		o := &observedSlice{Slice: s, set: make(map[string]bool, len(s.Clusters))}
		for _, c := range s.Clusters {
			o.set[c] = true
		}
		obs[s.Name] = o
	}
	return obs
}

// settled is true when the observed slices are exactly the desired ones.
func settled(obs map[string]*observedSlice, desired Layout) bool {
	if len(obs) != len(desired.Slices) {
		return false
	}
	for _, d := range desired.Slices {
		o, ok := obs[d.Name]
		if !ok || !sameSlice(o.Slice, d) {
			return false
		}
	}
	return true
}

// sameSlice compares clusters in order and the labels the planner owns; other
// labels on the observed slice are left alone.
func sameSlice(o, d Slice) bool {
	for k, v := range d.Labels {
		if got, ok := o.Labels[k]; !ok || got != v {
			return false
		}
	}
	return slices.Equal(o.Clusters, d.Clusters)
}

// everyClusterInItsFinalSlice is the condition for finalizing: each desired
// cluster is already in the slice that will hold it at the end, so no trim of
// any slice can take a selected cluster out of the union.
func everyClusterInItsFinalSlice(obs map[string]*observedSlice, desired Layout) bool {
	for _, d := range desired.Slices {
		o, ok := obs[d.Name]
		for _, c := range d.Clusters {
			if !ok || !o.set[c] {
				return false
			}
		}
	}
	return true
}

// writeFinal writes every desired slice that differs, in slice order, then
// deletes every other slice, in name order.
func writeFinal(obs map[string]*observedSlice, desired Layout) []Write {
	var writes []Write
	wanted := make(map[string]bool, len(desired.Slices))
	for _, d := range desired.Slices {
		wanted[d.Name] = true
		o, ok := obs[d.Name]
		switch {
		case !ok:
			writes = append(writes, Write{Op: Create, Slice: d})
		case !sameSlice(o.Slice, d):
			writes = append(writes, Write{Op: Update, Slice: d})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obs)) {
		if !wanted[name] {
			writes = append(writes, Write{Op: Delete, Slice: Slice{Name: name}})
		}
	}
	return writes
}
