package fleet

import (
	"fmt"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
)

// Cluster is a selected member cluster: its name and labels.
type Cluster struct {
	Name   string
	Labels map[string]string
}

// Slice is one PlacementDecision: its name, its labels and its clusters. The
// planner reads observed slices and writes desired ones in this shape.
type Slice struct {
	Name     string
	Labels   map[string]string
	Clusters []string
}

// DecisionGroup is one decision group of a layout.
type DecisionGroup struct {
	Index int
	// Name is the predefined group the decision group was cut from, or "".
	Name string
	// Slices are the names of the group's slices, in order.
	Slices   []string
	Clusters int
}

// Layout is where every selected cluster belongs: the decision groups and the
// slices, in order.
type Layout struct {
	Placement string
	Groups    []DecisionGroup
	Slices    []Slice
}

// SliceName is the name of the n-th slice of a placement, n counting from 1.
func SliceName(placement string, n int) string {
	return fmt.Sprintf("%s-decision-%d", placement, n)
}

// SliceLabels are the labels of every slice of a decision group.
func SliceLabels(placement, groupName string, groupIndex int) map[string]string {
	return map[string]string{
		fleetv1alpha1.LabelPlacement:          placement,
		fleetv1alpha1.LabelDecisionGroupName:  groupName,
		fleetv1alpha1.LabelDecisionGroupIndex: strconv.Itoa(groupIndex),
	}
}

// ClustersPerDecisionGroup resolves clustersPerDecisionGroup against the number
// of selected clusters: an integer as is, a percentage of all selected clusters
// rounded up; unset means 100%. The result is at least 1.
func ClustersPerDecisionGroup(v *intstr.IntOrString, selected int) (int, error) {
	if v == nil {
		return max(selected, 1), nil
	}
	n, err := limit.Resolve(*v, int32(selected), limit.Up)
	if err != nil {
		return 0, fmt.Errorf("clustersPerDecisionGroup: %w", err)
	}
	return max(int(n), 1), nil
}

// DesiredLayout groups and slices the selected clusters of a placement. The
// predefined groups come first, in the order given, then the clusters no group
// matched, under group name ""; a cluster joins the first group whose selector
// matches. Inside a group clusters are sorted by name (plain string order) and cut
// into chunks of clustersPerDecisionGroup; every chunk is a decision group with
// its own index, and every chunk is cut into slices of at most 100, named
// <placement>-decision-<N> with N counting from 1 over all groups. With no
// cluster selected the layout is one empty slice, so that a consumer always
// finds the placement's slices.
func DesiredLayout(placement string, clusters []Cluster, gs fleetv1alpha1.GroupStrategy) (Layout, error) {
	size, err := ClustersPerDecisionGroup(gs.ClustersPerDecisionGroup, len(clusters))
	if err != nil {
		return Layout{}, err
	}
	groups, err := assignGroups(clusters, gs.DecisionGroups)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{Placement: placement}
	for _, g := range groups {
		for chunk := range slices.Chunk(g.clusters, size) {
			l.addGroup(g.name, chunk)
		}
	}
	if len(l.Slices) == 0 {
		l.addGroup("", nil)
	}
	return l, nil
}

// addGroup appends a decision group and its slices.
func (l *Layout) addGroup(name string, clusters []string) {
	dg := DecisionGroup{Index: len(l.Groups), Name: name, Clusters: len(clusters)}
	lbls := SliceLabels(l.Placement, name, dg.Index)
	add := func(part []string) {
		s := Slice{Name: SliceName(l.Placement, len(l.Slices)+1), Labels: lbls, Clusters: part}
		l.Slices = append(l.Slices, s)
		dg.Slices = append(dg.Slices, s.Name)
	}
	if len(clusters) == 0 {
		add(nil)
	}
	for part := range slices.Chunk(clusters, fleetv1alpha1.MaxClustersPerDecision) {
		add(part)
	}
	l.Groups = append(l.Groups, dg)
}

type namedGroup struct {
	name     string
	clusters []string
}

// assignGroups puts every cluster in the first predefined group that matches it,
// or in the last group, "", and sorts each group by name. Empty groups are left
// out.
func assignGroups(clusters []Cluster, predefined []fleetv1alpha1.DecisionGroup) ([]namedGroup, error) {
	selectors := make([]labels.Selector, len(predefined))
	for i, g := range predefined {
		if g.GroupClusterSelector == nil {
			return nil, fmt.Errorf("decision group %q has no groupClusterSelector", g.GroupName)
		}
		s, err := metav1.LabelSelectorAsSelector(g.GroupClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("decision group %q: %w", g.GroupName, err)
		}
		selectors[i] = s
	}
	groups := make([]namedGroup, len(predefined)+1)
	for i, g := range predefined {
		groups[i].name = g.GroupName
	}
	for _, c := range clusters {
		i := slices.IndexFunc(selectors, func(s labels.Selector) bool { return s.Matches(labels.Set(c.Labels)) })
		if i < 0 {
			i = len(predefined)
		}
		groups[i].clusters = append(groups[i].clusters, c.Name)
	}
	nonEmpty := groups[:0]
	for _, g := range groups {
		if len(g.clusters) > 0 {
			slices.Sort(g.clusters)
			nonEmpty = append(nonEmpty, g)
		}
	}
	return nonEmpty, nil
}

// GroupStatus is status.decisionGroups for the layout.
func (l Layout) GroupStatus() []fleetv1alpha1.DecisionGroupStatus {
	out := make([]fleetv1alpha1.DecisionGroupStatus, 0, len(l.Groups))
	for _, g := range l.Groups {
		out = append(out, fleetv1alpha1.DecisionGroupStatus{
			DecisionGroupIndex: int32(g.Index),
			DecisionGroupName:  g.Name,
			Decisions:          slices.Clone(g.Slices),
			ClusterCount:       int32(g.Clusters),
		})
	}
	return out
}
