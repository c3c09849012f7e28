// Package fleetsim plays the fleet in memory. A Store holds a placement's
// decision slices and plays their updates one write at a time, with a watcher
// that sees every state in between (the decision planner's tests and `make
// bench-fleet`). A Member plays a member cluster for a FederatedWorkload
// rollout: the apiserver holding its member object and the object's own
// controller (`lockstep plan`, through internal/fleet/fleetplan).
package fleetsim

import (
	"fmt"
	"maps"
	"slices"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// Store holds the slices of one placement as an apiserver would, and watches
// every state: after each write it records selected clusters missing from the
// union and the largest slice seen.
type Store struct {
	slices map[string]fleet.Slice
	// holders counts the slices holding each cluster.
	holders map[string]int

	// Writes counts the writes applied.
	Writes int
	// PeakSliceSize is the most clusters any slice held at any state.
	PeakSliceSize int
	// Absences are the times a cluster that had to stay left the union.
	Absences []Absence
}

// Absence is a cluster missing from the union after a write.
type Absence struct {
	Cluster string
	After   fleet.Write
}

func (a Absence) String() string {
	return fmt.Sprintf("%s missing after %s %s", a.Cluster, a.After.Op, a.After.Slice.Name)
}

// NewStore returns a store holding the given slices.
func NewStore(initial []fleet.Slice) *Store {
	s := &Store{slices: map[string]fleet.Slice{}, holders: map[string]int{}}
	for _, sl := range initial {
		s.put(sl)
	}
	return s
}

// Slices are the stored slices in name order, as a read returns them.
func (s *Store) Slices() []fleet.Slice {
	out := make([]fleet.Slice, 0, len(s.slices))
	for _, name := range slices.Sorted(maps.Keys(s.slices)) {
		out = append(out, s.slices[name])
	}
	return out
}

// Union is the set of clusters in at least one slice.
func (s *Store) Union() map[string]bool {
	u := make(map[string]bool, len(s.holders))
	for c := range s.holders {
		u[c] = true
	}
	return u
}

// Apply applies one write as the apiserver would: a create fails when the slice
// exists, an update or delete when it does not. mustStay says which clusters may
// not leave the union; every one that does is recorded as an absence.
func (s *Store) Apply(w fleet.Write, mustStay func(cluster string) bool) error {
	old, exists := s.slices[w.Slice.Name]
	switch {
	case w.Op == fleet.Create && exists:
		return fmt.Errorf("create %s: already exists", w.Slice.Name)
	case w.Op != fleet.Create && !exists:
		return fmt.Errorf("%s %s: not found", w.Op, w.Slice.Name)
	}
	s.Writes++
	if exists {
		s.remove(old)
	}
	if w.Op != fleet.Delete {
		s.put(w.Slice)
	}
	if exists {
		for _, c := range old.Clusters {
			if s.holders[c] == 0 && mustStay(c) {
				s.Absences = append(s.Absences, Absence{Cluster: c, After: w})
			}
		}
	}
	return nil
}

func (s *Store) put(sl fleet.Slice) {
	sl.Clusters = slices.Clone(sl.Clusters)
	s.slices[sl.Name] = sl
	for _, c := range sl.Clusters {
		s.holders[c]++
	}
	s.PeakSliceSize = max(s.PeakSliceSize, len(sl.Clusters))
}

func (s *Store) remove(sl fleet.Slice) {
	delete(s.slices, sl.Name)
	for _, c := range sl.Clusters {
		if s.holders[c]--; s.holders[c] == 0 {
			delete(s.holders, c)
		}
	}
}

// Oversized says whether some state had a slice above the limit.
func (s *Store) Oversized() bool {
	return s.PeakSliceSize > fleetv1alpha1.MaxClustersPerDecision
}

// Selected returns mustStay for a layout: the clusters it places.
func Selected(l fleet.Layout) func(string) bool {
	in := map[string]bool{}
	for _, sl := range l.Slices {
		for _, c := range sl.Clusters {
			in[c] = true
		}
	}
	return func(c string) bool { return in[c] }
}
