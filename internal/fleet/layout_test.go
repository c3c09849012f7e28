package fleet_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// group is a decision group of placement "p" for the expectations.
func group(index int, name string, clusters int, slices ...int) fleet.DecisionGroup {
	g := fleet.DecisionGroup{Index: index, Name: name, Clusters: clusters}
	for _, n := range slices {
		g.Slices = append(g.Slices, fleet.SliceName("p", n))
	}
	return g
}

func labelled(c []fleet.Cluster, key, value string) []fleet.Cluster {
	for i := range c {
		c[i].Labels = map[string]string{key: value}
	}
	return c
}

func TestDesiredLayout(t *testing.T) {
	canary := fleetv1alpha1.DecisionGroup{GroupName: "canary", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}}
	eu := fleetv1alpha1.DecisionGroup{GroupName: "eu", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}
	withGroups := func(gs fleetv1alpha1.GroupStrategy, groups ...fleetv1alpha1.DecisionGroup) fleetv1alpha1.GroupStrategy {
		gs.DecisionGroups = groups
		return gs
	}
	cases := []struct {
		name     string
		clusters []fleet.Cluster
		strategy fleetv1alpha1.GroupStrategy
		groups   []fleet.DecisionGroup
		slices   map[string][]string // slice name -> clusters, for the slices worth checking
	}{
		{
			name:     "no cluster selected: one empty slice",
			strategy: perGroup("100%"),
			groups:   []fleet.DecisionGroup{group(0, "", 0, 1)},
			slices:   map[string][]string{"p-decision-1": nil},
		},
		{
			name:     "unset clustersPerDecisionGroup is 100%",
			clusters: clusters("1-250"),
			groups:   []fleet.DecisionGroup{group(0, "", 250, 1, 2, 3)},
			slices:   map[string][]string{"p-decision-3": names("201-250")},
		},
		{
			name:     "plain string order: cluster10 sorts before cluster2",
			clusters: []fleet.Cluster{{Name: "cluster2"}, {Name: "cluster10"}, {Name: "cluster1"}},
			strategy: perGroup("100%"),
			groups:   []fleet.DecisionGroup{group(0, "", 3, 1)},
			slices:   map[string][]string{"p-decision-1": {"cluster1", "cluster10", "cluster2"}},
		},
		{
			name:     "a percentage is of all selected clusters, rounded up",
			clusters: clusters("1-10"),
			strategy: perGroup("25%"), // 2.5 -> 3
			groups:   []fleet.DecisionGroup{group(0, "", 3, 1), group(1, "", 3, 2), group(2, "", 3, 3), group(3, "", 1, 4)},
			slices:   map[string][]string{"p-decision-4": names("10")},
		},
		{
			name:     "a decision group above 100 is cut into slices, numbered across groups",
			clusters: clusters("1-300"),
			strategy: perGroup("150"),
			groups:   []fleet.DecisionGroup{group(0, "", 150, 1, 2), group(1, "", 150, 3, 4)},
			slices:   map[string][]string{"p-decision-2": names("101-150"), "p-decision-3": names("151-250")},
		},
		{
			name: "predefined groups first in the order given, the first match wins, the rest last",
			clusters: append(append(
				labelled(clusters("1-3"), "region", "eu"),
				fleet.Cluster{Name: "cluster004", Labels: map[string]string{"region": "eu", "tier": "canary"}}),
				clusters("5-6")...),
			strategy: withGroups(perGroup("100%"), canary, eu),
			groups:   []fleet.DecisionGroup{group(0, "canary", 1, 1), group(1, "eu", 3, 2), group(2, "", 2, 3)},
			slices: map[string][]string{
				"p-decision-1": names("4"), "p-decision-2": names("1-3"), "p-decision-3": names("5-6"),
			},
		},
		{
			name:     "a predefined group nobody matches has no decision group",
			clusters: labelled(clusters("1-4"), "region", "eu"),
			strategy: withGroups(perGroup("2"), canary, eu),
			groups:   []fleet.DecisionGroup{group(0, "eu", 2, 1), group(1, "eu", 2, 2)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := layout(t, tc.clusters, tc.strategy)
			if !reflect.DeepEqual(l.Groups, tc.groups) {
				t.Errorf("groups\n%+v\nwant\n%+v", l.Groups, tc.groups)
			}
			for _, s := range l.Slices {
				if want, ok := tc.slices[s.Name]; ok && !reflect.DeepEqual(s.Clusters, want) {
					t.Errorf("%s holds %v, want %v", s.Name, s.Clusters, want)
				}
			}
			// Labels follow the group of each slice.
			for _, g := range l.Groups {
				for _, name := range g.Slices {
					i := slicesIndex(l.Slices, name)
					if want := fleet.SliceLabels("p", g.Name, g.Index); !reflect.DeepEqual(l.Slices[i].Labels, want) {
						t.Errorf("%s labels %v, want %v", name, l.Slices[i].Labels, want)
					}
				}
			}
		})
	}
}

func slicesIndex(s []fleet.Slice, name string) int {
	for i := range s {
		if s[i].Name == name {
			return i
		}
	}
	return -1
}

func TestLayout_GroupStatusNamesTheFinalSlices(t *testing.T) {
	l := layout(t, clusters("1-300"), perGroup("150"))
	want := []fleetv1alpha1.DecisionGroupStatus{
		{DecisionGroupIndex: 0, Decisions: []string{"p-decision-1", "p-decision-2"}, ClusterCount: 150},
		{DecisionGroupIndex: 1, Decisions: []string{"p-decision-3", "p-decision-4"}, ClusterCount: 150},
	}
	if got := l.GroupStatus(); !reflect.DeepEqual(got, want) {
		t.Errorf("GroupStatus() = %+v, want %+v", got, want)
	}
}
