package fleetsim_test

import (
	"strings"
	"testing"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

// The short version of `make bench-fleet`: 2,000 clusters regrouped and
// relabelled. RollingUpdate loses no cluster, never fills a slice above 100 and
// settles in two plans; All, on the same updates, loses clusters.
func TestSimulation_RollingUpdateLosesNoClusterAndAllDoes(t *testing.T) {
	for _, sc := range []fleetsim.Scenario{fleetsim.Regroup(2000), fleetsim.Relabel(2000)} {
		rolling, err := fleetsim.Simulate(sc, fleetv1alpha1.RollingUpdateDecisionUpdate)
		if err != nil {
			t.Fatal(err)
		}
		all, err := fleetsim.Simulate(sc, fleetv1alpha1.AllDecisionUpdate)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		rolling.Print(&out)
		all.Print(&out)
		t.Log("\n" + out.String())
		if rolling.Absences != 0 || rolling.PeakSliceSize > fleetv1alpha1.MaxClustersPerDecision {
			t.Errorf("%s: RollingUpdate had %d absences, peak slice size %d", sc.Name, rolling.Absences, rolling.PeakSliceSize)
		}
		if rolling.Plans > 2 {
			t.Errorf("%s: RollingUpdate took %d plans, want at most 2", sc.Name, rolling.Plans)
		}
		if all.Absences == 0 {
			t.Errorf("%s: All lost no cluster; the scenario does not exercise moves between slices", sc.Name)
		}
		if all.Writes != all.MinWrites {
			t.Errorf("%s: All wrote %d, want the minimum %d", sc.Name, all.Writes, all.MinWrites)
		}
	}
}
