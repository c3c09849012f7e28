package fleet_test

import (
	"testing"

	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"

	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

var names = fleetsim.ClusterNames

func clusters(ranges ...string) []fleet.Cluster {
	var out []fleet.Cluster
	for _, n := range names(ranges...) {
		out = append(out, fleet.Cluster{Name: n})
	}
	return out
}

// slice is a slice of placement "p" in group "" with the given index.
func slice(n, groupIndex int, ranges ...string) fleet.Slice {
	return fleet.Slice{
		Name:     fleet.SliceName("p", n),
		Labels:   fleet.SliceLabels("p", "", groupIndex),
		Clusters: names(ranges...),
	}
}

func perGroup(s string) fleetv1alpha1.GroupStrategy {
	v := intstr.Parse(s)
	return fleetv1alpha1.GroupStrategy{ClustersPerDecisionGroup: &v}
}

func layout(t *testing.T, cs []fleet.Cluster, gs fleetv1alpha1.GroupStrategy) fleet.Layout {
	t.Helper()
	l, err := fleet.DesiredLayout("p", cs, gs)
	if err != nil {
		t.Fatalf("DesiredLayout: %v", err)
	}
	return l
}
