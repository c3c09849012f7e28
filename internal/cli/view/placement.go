package view

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
)

// iconUnknown marks a cluster whose MemberCluster the reader may not read.
const iconUnknown = "·"

// PlacementSnapshot is a Placement, its PlacementDecisions and, when the
// reader may list them, the MemberClusters.
type PlacementSnapshot struct {
	Placement *fleetv1alpha1.Placement
	Decisions []fleetv1alpha1.PlacementDecision
	// Clusters are the MemberClusters; ClustersKnown is false when they could
	// not be read (MemberClusters are cluster-scoped: a tenant may not list
	// them), and the tree then shows no cluster's state.
	Clusters      []fleetv1alpha1.MemberCluster
	ClustersKnown bool
}

// RenderPlacement writes a Placement: a header with its selection and
// conditions, and a tree of its decision groups, the PlacementDecisions
// (slices) of each and the clusters in each slice. A slice the status does not
// list as final is "extra": a surge spill or an obsolete slice, deleted once
// the decisions settle.
func RenderPlacement(w io.Writer, s *PlacementSnapshot, o Options) error {
	b := bufio.NewWriter(w)
	p := &placementRenderer{renderer: &renderer{w: b, o: o}, s: s}
	p.header()
	p.tree()
	return b.Flush()
}

type placementRenderer struct {
	*renderer
	s *PlacementSnapshot
}

// PlacementPhase is the one-word state of a Placement: Settled, Settling,
// Stalled or Pending.
func PlacementPhase(pl *fleetv1alpha1.Placement) string {
	v := verdict.OfPlacement(pl)
	switch {
	case v.Final && v.Code == verdict.Complete:
		return "Settled"
	case v.Final:
		return "Stalled"
	case apimeta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled)) == nil:
		return "Pending"
	}
	return "Settling"
}

func (p *placementRenderer) header() {
	pl := p.s.Placement
	phase := PlacementPhase(pl)
	style := map[string]string{"Settled": green, "Stalled": red}[phase]
	if style == "" {
		style = yellow
	}
	status := p.paint(style, phase)
	shown := apimeta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
	if c := apimeta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementStalled)); phase == "Stalled" && c != nil {
		shown = c
	}
	if shown != nil {
		status += " (" + shown.Reason + ")"
		if shown.Message != "" {
			status += ": " + shown.Message
		}
	}
	if pl.Status.ObservedGeneration < pl.Generation {
		status += p.paint(dim, fmt.Sprintf("   [generation %d not yet observed]", pl.Generation))
	}
	p.printf("%s\n", p.paint(bold, "Placement "+pl.Namespace+"/"+pl.Name))
	p.field("status", status)
	sets := "every set bound to " + pl.Namespace
	if len(pl.Spec.ClusterSets) > 0 {
		sets = "sets " + strings.Join(pl.Spec.ClusterSets, ", ")
	}
	selector := "every Ready member"
	if sel := pl.Spec.ClusterSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		selector = "Ready members with " + metav1.FormatLabelSelector(sel)
	}
	p.field("selects", selector+" of "+sets)
	ds := &pl.Spec.DecisionStrategy
	typ := string(ds.UpdateStrategy.Type)
	if typ == "" {
		typ = string(fleetv1alpha1.RollingUpdateDecisionUpdate)
	}
	per := "100%"
	if c := ds.GroupStrategy.ClustersPerDecisionGroup; c != nil {
		per = c.String()
	}
	strategy := fmt.Sprintf("%s   clustersPerDecisionGroup %s", typ, per)
	if len(ds.GroupStrategy.DecisionGroups) > 0 {
		var names []string
		for _, g := range ds.GroupStrategy.DecisionGroups {
			names = append(names, g.GroupName)
		}
		strategy += "   groups " + strings.Join(names, ", ")
	}
	p.field("strategy", strategy)
	var conds []string
	for _, t := range []fleetv1alpha1.PlacementConditionType{fleetv1alpha1.PlacementClusterSetsBound, fleetv1alpha1.PlacementDecisionsSettled,
		fleetv1alpha1.PlacementReconciling, fleetv1alpha1.PlacementStalled} {
		c := apimeta.FindStatusCondition(pl.Status.Conditions, string(t))
		if c == nil {
			continue
		}
		// Reconciling and Stalled are good when False, the others when True.
		good := (c.Status == metav1.ConditionTrue) != (t == fleetv1alpha1.PlacementReconciling || t == fleetv1alpha1.PlacementStalled)
		icon, style := iconReady, green
		if !good {
			icon, style = iconPartial, yellow
			if t == fleetv1alpha1.PlacementStalled || t == fleetv1alpha1.PlacementClusterSetsBound {
				icon, style = iconDown, red
			}
		}
		conds = append(conds, p.paint(style, icon)+" "+string(t)+"="+string(c.Status))
	}
	if len(conds) > 0 {
		p.field("conditions", strings.Join(conds, "   "))
	}
	p.printf("\n")
}

// sliceNumber is N of "<placement>-decision-<N>", for ordering slices as
// they are numbered; names without it sort last, by name.
func sliceNumber(name string) int {
	i := strings.LastIndex(name, "-")
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return n
}

func (p *placementRenderer) tree() {
	pl := p.s.Placement
	st := &pl.Status
	// Slices by decision group index, in number order.
	byGroup := map[int32][]*fleetv1alpha1.PlacementDecision{}
	groupName := map[int32]string{}
	// In how many slices each cluster is listed.
	listed := map[string][]string{}
	for i := range p.s.Decisions {
		d := &p.s.Decisions[i]
		idx, _ := strconv.Atoi(d.Labels[fleetv1alpha1.LabelDecisionGroupIndex])
		byGroup[int32(idx)] = append(byGroup[int32(idx)], d)
		groupName[int32(idx)] = d.Labels[fleetv1alpha1.LabelDecisionGroupName]
		for _, c := range d.Status.Decisions {
			listed[c.ClusterName] = append(listed[c.ClusterName], d.Name)
		}
	}
	final := map[int32]*fleetv1alpha1.DecisionGroupStatus{}
	var indices []int32
	for i := range st.DecisionGroups {
		g := &st.DecisionGroups[i]
		final[g.DecisionGroupIndex] = g
		groupName[g.DecisionGroupIndex] = g.DecisionGroupName
		indices = append(indices, g.DecisionGroupIndex)
	}
	for idx := range byGroup {
		if final[idx] == nil {
			indices = append(indices, idx)
		}
	}
	slices.Sort(indices)
	ready := map[string]*metav1.Condition{}
	exists := map[string]bool{}
	for i := range p.s.Clusters {
		mc := &p.s.Clusters[i]
		exists[mc.Name] = mc.DeletionTimestamp == nil
		ready[mc.Name] = apimeta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
	}

	root := &node{name: pl.Name}
	root.icon, root.iconStyle = iconReady, green
	switch PlacementPhase(pl) {
	case "Stalled":
		root.icon, root.iconStyle = iconDown, red
	case "Settling", "Pending":
		root.icon, root.iconStyle = iconPartial, yellow
	}
	root.tags = []string{fmt.Sprintf("%s selected", clusters(st.NumberOfSelectedClusters)),
		fmt.Sprintf("%d decision group%s", st.NumberOfDecisionGroups, plural(int(st.NumberOfDecisionGroups))),
		fmt.Sprintf("%d slice%s", len(p.s.Decisions), plural(len(p.s.Decisions)))}
	for _, idx := range indices {
		root.children = append(root.children, p.group(idx, groupName[idx], final[idx], byGroup[idx], listed, ready, exists))
	}
	p.drawRoot(root)
}

func clusters(n int32) string {
	return fmt.Sprintf("%d cluster%s", n, plural(int(n)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// group is a decision group's node: its slices, final ones first as the
// status lists them, then extra ones.
func (p *placementRenderer) group(idx int32, name string, final *fleetv1alpha1.DecisionGroupStatus, have []*fleetv1alpha1.PlacementDecision,
	listed map[string][]string, ready map[string]*metav1.Condition, exists map[string]bool) *node {
	label := fmt.Sprintf("group %d", idx)
	if name != "" {
		label += " " + name
	} else {
		label += " (rest)"
	}
	n := &node{name: label, icon: iconReady, iconStyle: green}
	isFinal := map[string]bool{}
	if final != nil {
		for _, d := range final.Decisions {
			isFinal[d] = true
		}
		n.tags = append(n.tags, clusters(final.ClusterCount))
	} else {
		n.icon, n.iconStyle = iconGone, dim
		n.tags = append(n.tags, p.paint(dim, "obsolete: deleted once settled"))
	}
	slices.SortFunc(have, func(a, b *fleetv1alpha1.PlacementDecision) int {
		return cmp.Or(cmp.Compare(sliceNumber(a.Name), sliceNumber(b.Name)), strings.Compare(a.Name, b.Name))
	})
	found := map[string]bool{}
	for _, d := range have {
		found[d.Name] = true
		sn := &node{name: d.Name, icon: iconReady, iconStyle: green}
		sn.tags = append(sn.tags, clusters(int32(len(d.Status.Decisions))))
		if !isFinal[d.Name] {
			sn.icon, sn.iconStyle = iconPartial, yellow
			sn.tags = append(sn.tags, p.paint(cyan, "extra")+": goes once settled")
			if final != nil {
				n.icon, n.iconStyle = iconPartial, yellow
			}
		}
		for _, c := range d.Status.Decisions {
			sn.children = append(sn.children, p.cluster(c.ClusterName, d.Name, listed, ready, exists))
		}
		n.children = append(n.children, sn)
	}
	if final != nil {
		for _, name := range final.Decisions {
			if !found[name] {
				n.icon, n.iconStyle = iconPartial, yellow
				n.children = append(n.children, &node{name: name, icon: iconDown, iconStyle: red, tags: []string{p.paint(red, "not written yet")}})
			}
		}
	}
	return n
}

// cluster is a cluster's node in slice: its MemberCluster's readiness and
// the other slices that list it too (while the decisions surge).
func (p *placementRenderer) cluster(name, slice string, listed map[string][]string, ready map[string]*metav1.Condition, exists map[string]bool) *node {
	n := &node{name: name}
	switch c, ok := ready[name]; {
	case !p.s.ClustersKnown:
		n.icon, n.iconStyle = iconUnknown, dim
	case !ok || !exists[name]:
		n.icon, n.iconStyle = iconGone, dim
		n.tags = append(n.tags, p.paint(dim, "no MemberCluster"))
	case c != nil && c.Status == metav1.ConditionTrue:
		n.icon, n.iconStyle = iconReady, green
		n.tags = append(n.tags, "Ready")
	default:
		n.icon, n.iconStyle = iconDown, red
		why := "not Ready"
		if c != nil {
			why += " (" + c.Reason + ")"
		}
		n.tags = append(n.tags, p.paint(red, why))
	}
	var others []string
	for _, s := range listed[name] {
		if s != slice {
			others = append(others, s)
		}
	}
	if len(others) > 0 {
		n.tags = append(n.tags, p.paint(cyan, "also in "+strings.Join(others, ", ")))
	}
	return n
}
