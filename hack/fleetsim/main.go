// Command fleetsim simulates decision updates of a large fleet with the decision
// planner and prints absences, peak slice size, writes against the minimum, and
// planner time per round. `make bench-fleet` runs it on 10,000 clusters.
package main

import (
	"flag"
	"fmt"
	"os"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

func main() {
	clusters := flag.Int("clusters", 10000, "clusters in the fleet")
	flag.Parse()
	failed := false
	for _, sc := range []fleetsim.Scenario{fleetsim.Regroup(*clusters), fleetsim.Relabel(*clusters)} {
		for _, update := range []fleetv1alpha1.DecisionUpdateType{fleetv1alpha1.RollingUpdateDecisionUpdate, fleetv1alpha1.AllDecisionUpdate} {
			r, err := fleetsim.Simulate(sc, update)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			r.Print(os.Stdout)
			if update == fleetv1alpha1.RollingUpdateDecisionUpdate && (r.Absences > 0 || r.PeakSliceSize > fleetv1alpha1.MaxClustersPerDecision) {
				failed = true
			}
		}
		fmt.Println()
	}
	if failed {
		fmt.Fprintln(os.Stderr, "RollingUpdate lost a cluster or overfilled a slice")
		os.Exit(1)
	}
}
