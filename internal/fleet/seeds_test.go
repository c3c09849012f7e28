package fleet_test

import (
	"reflect"
	"testing"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

// wantStep is one write of an update and every slice a watcher sees after it.
type wantStep struct {
	plan  int
	phase fleet.Phase
	op    fleet.Op
	slice string
	state []fleet.Slice
}

// The three worked examples of decision updates, played write by write with
// RollingUpdate: every intermediate state exactly, no selected cluster ever
// missing from the union and no slice above 100.
func TestRollingUpdate_WorkedExamples(t *testing.T) {
	cases := []struct {
		name          string
		before, after fleet.Layout
		steps         []wantStep
	}{{
		// cluster000 joins and sorts first, so cluster100 moves from slice 1 to
		// slice 2. Slice 2 takes it before slice 1 lets it go; slice 1 cannot
		// hold the union (101), and it need not: cluster100 is already in its
		// final slice. The update settles without a finalize.
		name:   "a cluster joins and pushes the last cluster of a full slice into the next",
		before: layout(t, clusters("1-150"), perGroup("100%")),
		after:  layout(t, clusters("0-150"), perGroup("100%")),
		steps: []wantStep{
			{1, fleet.PhaseSurge, fleet.Update, "p-decision-2", []fleet.Slice{slice(1, 0, "001-100"), slice(2, 0, "100-150")}},
			{1, fleet.PhaseSurge, fleet.Update, "p-decision-1", []fleet.Slice{slice(1, 0, "000-099"), slice(2, 0, "100-150")}},
		},
	}, {
		// cluster000 leaves, so cluster100 moves back into slice 1. The surge
		// writes slice 1 as its final set (cluster000 leaves the placement, which
		// makes room for cluster100); slice 2 keeps cluster100 until the
		// finalize.
		name:   "a cluster leaves and pulls the first cluster of the next slice back",
		before: layout(t, clusters("0-150"), perGroup("100%")),
		after:  layout(t, clusters("1-150"), perGroup("100%")),
		steps: []wantStep{
			{1, fleet.PhaseSurge, fleet.Update, "p-decision-1", []fleet.Slice{slice(1, 0, "001-100"), slice(2, 0, "100-150")}},
			{2, fleet.PhaseFinalize, fleet.Update, "p-decision-2", []fleet.Slice{slice(1, 0, "001-100"), slice(2, 0, "101-150")}},
		},
	}, {
		// 250 clusters regrouped from one decision group of three slices into
		// five decision groups of 50. The union for slice 2 would be 150
		// clusters; it keeps 100, because the 50 it drops (151-200) were first
		// written to their final slice 4. The union for slice 3 is 100.
		name:   "clustersPerDecisionGroup 100% to 50",
		before: layout(t, clusters("1-250"), perGroup("100%")),
		after:  layout(t, clusters("1-250"), perGroup("50")),
		steps: []wantStep{
			{1, fleet.PhaseSurge, fleet.Update, "p-decision-3", []fleet.Slice{
				slice(1, 0, "001-100"), slice(2, 0, "101-200"), slice(3, 2, "101-150", "201-250"),
			}},
			{1, fleet.PhaseSurge, fleet.Create, "p-decision-4", []fleet.Slice{
				slice(1, 0, "001-100"), slice(2, 0, "101-200"), slice(3, 2, "101-150", "201-250"), slice(4, 3, "151-200"),
			}},
			{1, fleet.PhaseSurge, fleet.Create, "p-decision-5", []fleet.Slice{
				slice(1, 0, "001-100"), slice(2, 0, "101-200"), slice(3, 2, "101-150", "201-250"), slice(4, 3, "151-200"), slice(5, 4, "201-250"),
			}},
			{1, fleet.PhaseSurge, fleet.Update, "p-decision-2", []fleet.Slice{
				slice(1, 0, "001-100"), slice(2, 1, "051-150"), slice(3, 2, "101-150", "201-250"), slice(4, 3, "151-200"), slice(5, 4, "201-250"),
			}},
			{2, fleet.PhaseFinalize, fleet.Update, "p-decision-1", []fleet.Slice{
				slice(1, 0, "001-050"), slice(2, 1, "051-150"), slice(3, 2, "101-150", "201-250"), slice(4, 3, "151-200"), slice(5, 4, "201-250"),
			}},
			{2, fleet.PhaseFinalize, fleet.Update, "p-decision-2", []fleet.Slice{
				slice(1, 0, "001-050"), slice(2, 1, "051-100"), slice(3, 2, "101-150", "201-250"), slice(4, 3, "151-200"), slice(5, 4, "201-250"),
			}},
			{2, fleet.PhaseFinalize, fleet.Update, "p-decision-3", []fleet.Slice{
				slice(1, 0, "001-050"), slice(2, 1, "051-100"), slice(3, 2, "101-150"), slice(4, 3, "151-200"), slice(5, 4, "201-250"),
			}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := fleetsim.NewStore(tc.before.Slices)
			steps, err := fleetsim.Play(s, tc.after, fleetv1alpha1.RollingUpdateDecisionUpdate)
			if err != nil {
				t.Fatal(err)
			}
			for i, got := range steps {
				if i >= len(tc.steps) {
					t.Fatalf("step %d: unexpected %s %s in plan %d\n%s", i+1, got.Write.Op, got.Write.Slice.Name, got.Plan, fleetsim.Render(got.State))
				}
				want := tc.steps[i]
				if got.Plan != want.plan || got.Phase != want.phase || got.Write.Op != want.op || got.Write.Slice.Name != want.slice {
					t.Fatalf("step %d: got plan %d %s %s %s, want plan %d %s %s %s", i+1,
						got.Plan, got.Phase, got.Write.Op, got.Write.Slice.Name, want.plan, want.phase, want.op, want.slice)
				}
				if !reflect.DeepEqual(got.State, want.state) {
					t.Fatalf("step %d (%s %s): state\n%swant\n%s", i+1, want.op, want.slice, fleetsim.Render(got.State), fleetsim.Render(want.state))
				}
			}
			if len(steps) != len(tc.steps) {
				t.Fatalf("%d steps, want %d", len(steps), len(tc.steps))
			}
			if len(s.Absences) > 0 || s.Oversized() {
				t.Errorf("absences %v, peak slice size %d", s.Absences, s.PeakSliceSize)
			}
			if got := s.Slices(); !reflect.DeepEqual(got, tc.after.Slices) {
				t.Errorf("final state\n%swant\n%s", fleetsim.Render(got), fleetsim.Render(tc.after.Slices))
			}
		})
	}
}

// The first worked example under All, OCM's behaviour: slice 1 is rewritten first
// and cluster100 is in no slice until slice 2 is. The watcher must see it.
func TestAll_WorkedExampleLosesAClusterForAMoment(t *testing.T) {
	before := layout(t, clusters("1-150"), perGroup("100%"))
	after := layout(t, clusters("0-150"), perGroup("100%"))
	s := fleetsim.NewStore(before.Slices)
	steps, err := fleetsim.Play(s, after, fleetv1alpha1.AllDecisionUpdate)
	if err != nil {
		t.Fatal(err)
	}
	want := []fleetsim.Absence{{Cluster: "cluster100", After: fleet.Write{Op: fleet.Update, Slice: after.Slices[0]}}}
	if !reflect.DeepEqual(s.Absences, want) {
		t.Errorf("absences %v, want %v", s.Absences, want)
	}
	if len(steps) != 2 || steps[0].Phase != fleet.PhaseWriteAll {
		t.Errorf("steps %+v, want two writes of one All plan", steps)
	}
}
