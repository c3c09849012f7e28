package bench

import (
	"maps"
	"testing"
)

// A settled cluster's window counts every write the operator made but the
// Event writes of series it recorded before the window.
func TestSplitSettled_TellsLateEventSeriesFromTheWindowsOwnWrites(t *testing.T) {
	for _, c := range []struct {
		name          string
		wrote         Writes
		recorded      float64
		settled, late float64
	}{
		{"nothing written", Writes{}, 0, 0, 0},
		{"an Event series closed late", Writes{"events.events.k8s.io": 2}, 0, 0, 2},
		{"an Event recorded in the window", Writes{"events.events.k8s.io": 1}, 1, 1, 0},
		{"a series recorded in the window, never written", Writes{}, 3, 0, 0},
		{"a status write beside a late series", Writes{"podcliquesets.lockstep.dev/status": 1, "events": 1}, 0, 1, 1},
		{"a pod deleted", Writes{"pods": 1}, 0, 1, 0},
	} {
		settled, late := SplitSettled(c.wrote, c.recorded)
		if settled != c.settled || late != c.late {
			t.Errorf("%s: SplitSettled(%v, %v) = %v settled, %v late; want %v, %v", c.name, c.wrote, c.recorded, settled, late, c.settled, c.late)
		}
	}
}

func TestGrowth_KeepsOnlyWhatRose(t *testing.T) {
	earlier := Writes{"pods": 10, "services": 4, "leases.coordination.k8s.io": 7}
	now := Writes{"pods": 25, "services": 4, "leases.coordination.k8s.io": 3, "events": 2}
	got := now.Minus(earlier)
	// services stood still; the leases counter fell (a restarted
	// apiserver): neither rose, so neither is a write of the window.
	want := Writes{"pods": 15, "events": 2}
	if !maps.Equal(got, want) {
		t.Errorf("Minus = %v, want %v", got, want)
	}
	type byVerb map[string]float64
	if got := Growth(byVerb{"POST": 3}, byVerb{}); !maps.Equal(got, byVerb{"POST": 3}) {
		t.Errorf("Growth from nothing = %v, want every counter", got)
	}
}
