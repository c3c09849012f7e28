package fleetsim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// Scenario is a fleet before and after a change, for one placement.
type Scenario struct {
	Name                 string
	Before, After        []fleet.Cluster
	BeforeGroups, Groups fleetv1alpha1.GroupStrategy
}

// Report is what a simulated update did.
type Report struct {
	Scenario string
	Update   fleetv1alpha1.DecisionUpdateType
	Clusters int
	// SlicesBefore and SlicesAfter count the layouts' slices.
	SlicesBefore, SlicesAfter int
	// Plans is how many plans had writes.
	Plans int
	// Writes is how many writes were applied; MinWrites is how many slices differ
	// between the two layouts, the least any update could write.
	Writes, MinWrites int
	// Spills counts spill slices created.
	Spills int
	// Absences counts clusters selected before and after that were missing from
	// the union at some state.
	Absences int
	// PeakSliceSize is the most clusters a slice held at any state.
	PeakSliceSize int
	// PlanTime is the planner's time (layout and plan) per round.
	PlanTime []time.Duration
}

// Simulate plays the scenario's update from the settled "before" layout.
func Simulate(sc Scenario, update fleetv1alpha1.DecisionUpdateType) (Report, error) {
	before, err := fleet.DesiredLayout("fleet", sc.Before, sc.BeforeGroups)
	if err != nil {
		return Report{}, err
	}
	r := Report{Scenario: sc.Name, Update: update, Clusters: len(sc.After), SlicesBefore: len(before.Slices)}
	s := NewStore(before.Slices)
	mustStay := stayingClusters(sc.Before, sc.After)
	inLayout := map[string]bool{}
	for n := 0; ; n++ {
		if n > MaxPlans {
			return r, fmt.Errorf("%s: not settled after %d plans", sc.Name, MaxPlans)
		}
		start := time.Now()
		after, err := fleet.DesiredLayout("fleet", sc.After, sc.Groups)
		if err != nil {
			return r, err
		}
		p := fleet.PlanDecisions(s.Slices(), after, update)
		r.PlanTime = append(r.PlanTime, time.Since(start))
		if n == 0 {
			r.SlicesAfter = len(after.Slices)
			r.MinWrites = len(fleet.PlanDecisions(s.Slices(), after, fleetv1alpha1.AllDecisionUpdate).Writes)
			for _, sl := range after.Slices {
				inLayout[sl.Name] = true
			}
		}
		if p.Phase == fleet.PhaseSettled {
			break
		}
		r.Plans++
		for _, w := range p.Writes {
			if w.Op == fleet.Create && !inLayout[w.Slice.Name] {
				r.Spills++
			}
			if err := s.Apply(w, func(c string) bool { return mustStay[c] }); err != nil {
				return r, err
			}
		}
	}
	r.Writes, r.Absences, r.PeakSliceSize = s.Writes, len(s.Absences), s.PeakSliceSize
	return r, nil
}

// stayingClusters are the clusters in both fleets.
func stayingClusters(before, after []fleet.Cluster) map[string]bool {
	was := map[string]bool{}
	for _, c := range before {
		was[c.Name] = true
	}
	out := map[string]bool{}
	for _, c := range after {
		if was[c.Name] {
			out[c.Name] = true
		}
	}
	return out
}

// Regroup is n clusters regrouped from one decision group (100%) into decision
// groups of 50.
func Regroup(n int) Scenario {
	cs := Fleet(n, 1)
	all, fifty := intstr.FromString("100%"), intstr.FromInt32(50)
	return Scenario{
		Name:   fmt.Sprintf("%d clusters, clustersPerDecisionGroup 100%% -> 50", n),
		Before: cs, After: cs,
		BeforeGroups: fleetv1alpha1.GroupStrategy{ClustersPerDecisionGroup: &all},
		Groups:       fleetv1alpha1.GroupStrategy{ClustersPerDecisionGroup: &fifty},
	}
}

// Relabel is n clusters in predefined groups by region (eu, us, the rest), cut
// in decision groups of 10%, with 1% of them moved to another region at once.
func Relabel(n int) Scenario {
	before := Fleet(n, 1)
	after := make([]fleet.Cluster, len(before))
	r := rand.New(rand.NewPCG(2, 2))
	moved := map[int]bool{}
	for len(moved) < n/100 {
		moved[r.IntN(n)] = true
	}
	regions := []string{"eu", "us", "ap"}
	for i, c := range before {
		after[i] = fleet.Cluster{Name: c.Name, Labels: map[string]string{"region": c.Labels["region"]}}
		if moved[i] {
			for after[i].Labels["region"] == c.Labels["region"] {
				after[i].Labels["region"] = regions[r.IntN(len(regions))]
			}
		}
	}
	tenPct := intstr.FromString("10%")
	gs := fleetv1alpha1.GroupStrategy{
		ClustersPerDecisionGroup: &tenPct,
		DecisionGroups: []fleetv1alpha1.DecisionGroup{
			{GroupName: "eu", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
			{GroupName: "us", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}},
		},
	}
	return Scenario{
		Name:   fmt.Sprintf("%d clusters in groups by region, 1%% (%d) relabelled at once", n, n/100),
		Before: before, After: after, BeforeGroups: gs, Groups: gs,
	}
}

// Fleet is n clusters named cluster00001... with a region label drawn from seed.
func Fleet(n int, seed uint64) []fleet.Cluster {
	r := rand.New(rand.NewPCG(seed, seed))
	regions := []string{"eu", "us", "ap"}
	cs := make([]fleet.Cluster, n)
	for i := range cs {
		cs[i] = fleet.Cluster{Name: fmt.Sprintf("cluster%05d", i+1), Labels: map[string]string{"region": regions[r.IntN(len(regions))]}}
	}
	return cs
}

// Print writes a report as a few lines of figures.
func (r Report) Print(w io.Writer) {
	var total, peak time.Duration
	for _, d := range r.PlanTime {
		total += d
		peak = max(peak, d)
	}
	mean := time.Duration(0)
	if len(r.PlanTime) > 0 {
		mean = total / time.Duration(len(r.PlanTime))
	}
	fmt.Fprintf(w, "%s, %s\n", r.Scenario, r.Update)
	fmt.Fprintf(w, "  slices %d -> %d; plans %d; writes %d (minimum %d, %.2fx); spill slices %d\n",
		r.SlicesBefore, r.SlicesAfter, r.Plans, r.Writes, r.MinWrites, float64(r.Writes)/float64(max(r.MinWrites, 1)), r.Spills)
	fmt.Fprintf(w, "  absences %d; peak slice size %d; planner time per round mean %v, max %v (%d rounds)\n",
		r.Absences, r.PeakSliceSize, mean.Round(time.Microsecond), peak.Round(time.Microsecond), len(r.PlanTime))
}
