package fleet_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

// Two full slices swap one cluster each: neither can take the union (101), and
// each waits for the other to house the cluster it gives up. The cycle is broken
// by a spill slice: slice 1 first copies cluster001 into one, with its own group
// labels, then takes cluster101; slice 2 can then let cluster101 go. The
// finalize deletes the spill.
func TestRollingUpdate_ASwapBetweenFullSlicesGoesThroughSpillSlices(t *testing.T) {
	tiers := func(canary ...string) []fleet.Cluster {
		cs := clusters("1-200")
		for i := range cs {
			cs[i].Labels = map[string]string{"tier": "prod"}
		}
		for _, n := range names(canary...) {
			for i := range cs {
				if cs[i].Name == n {
					cs[i].Labels["tier"] = "canary"
				}
			}
		}
		return cs
	}
	gs := perGroup("100%")
	gs.DecisionGroups = []fleetv1alpha1.DecisionGroup{{GroupName: "canary", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}}
	before := layout(t, tiers("1-100"), gs)
	after := layout(t, tiers("2-101"), gs) // cluster001 leaves the canaries, cluster101 joins them

	canary := func(n int, ranges ...string) fleet.Slice {
		return fleet.Slice{Name: fleet.SliceName("p", n), Labels: fleet.SliceLabels("p", "canary", 0), Clusters: names(ranges...)}
	}
	rest := func(n int, ranges ...string) fleet.Slice {
		return fleet.Slice{Name: fleet.SliceName("p", n), Labels: fleet.SliceLabels("p", "", 1), Clusters: names(ranges...)}
	}
	want := []wantStep{
		{1, fleet.PhaseSurge, fleet.Create, "p-decision-3", []fleet.Slice{canary(1, "001-100"), rest(2, "101-200"), canary(3, "001")}},
		{1, fleet.PhaseSurge, fleet.Update, "p-decision-1", []fleet.Slice{canary(1, "002-101"), rest(2, "101-200"), canary(3, "001")}},
		{1, fleet.PhaseSurge, fleet.Update, "p-decision-2", []fleet.Slice{canary(1, "002-101"), rest(2, "001", "102-200"), canary(3, "001")}},
		{2, fleet.PhaseFinalize, fleet.Delete, "p-decision-3", []fleet.Slice{canary(1, "002-101"), rest(2, "001", "102-200")}},
	}
	s := fleetsim.NewStore(before.Slices)
	steps, err := fleetsim.Play(s, after, fleetv1alpha1.RollingUpdateDecisionUpdate)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != len(want) {
		for _, st := range steps {
			t.Logf("plan %d %s %s %s\n%s", st.Plan, st.Phase, st.Write.Op, st.Write.Slice.Name, fleetsim.Render(st.State))
		}
		t.Fatalf("%d steps, want %d", len(steps), len(want))
	}
	for i, got := range steps {
		w := want[i]
		if got.Plan != w.plan || got.Phase != w.phase || got.Write.Op != w.op || got.Write.Slice.Name != w.slice || !reflect.DeepEqual(got.State, w.state) {
			t.Fatalf("step %d: got plan %d %s %s %s\n%swant plan %d %s %s %s\n%s", i+1,
				got.Plan, got.Phase, got.Write.Op, got.Write.Slice.Name, fleetsim.Render(got.State),
				w.plan, w.phase, w.op, w.slice, fleetsim.Render(w.state))
		}
	}
	if len(s.Absences) > 0 || s.Oversized() {
		t.Errorf("absences %v, peak slice size %d", s.Absences, s.PeakSliceSize)
	}
}

func TestSettledCondition(t *testing.T) {
	cases := []struct {
		phase  fleet.Phase
		status metav1.ConditionStatus
		reason fleetv1alpha1.PlacementReason
	}{
		{fleet.PhaseSettled, metav1.ConditionTrue, fleetv1alpha1.PlacementReasonSettled},
		{fleet.PhaseSurge, metav1.ConditionFalse, fleetv1alpha1.PlacementReasonSurging},
		{fleet.PhaseFinalize, metav1.ConditionFalse, fleetv1alpha1.PlacementReasonSurging},
		{fleet.PhaseWriteAll, metav1.ConditionFalse, fleetv1alpha1.PlacementReasonUpdating},
	}
	for _, tc := range cases {
		c := fleet.SettledCondition(fleet.Plan{Phase: tc.phase}, 7)
		if c.Type != string(fleetv1alpha1.PlacementDecisionsSettled) || c.Status != tc.status || c.Reason != string(tc.reason) || c.ObservedGeneration != 7 {
			t.Errorf("%s: got %+v, want %s/%s", tc.phase, c, tc.status, tc.reason)
		}
	}
}
