package fleet

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// ClusterSelector is a placement's spec.clusterSelector; every cluster matches
// when it is unset.
func ClusterSelector(pl *fleetv1alpha1.Placement) (labels.Selector, error) {
	return selectorOf(pl.Spec.ClusterSelector)
}

// SetSelector is a MemberClusterSet's spec.clusterSelector; every cluster
// matches when it is unset.
func SetSelector(set *fleetv1alpha1.MemberClusterSet) (labels.Selector, error) {
	return selectorOf(set.Spec.ClusterSelector)
}

func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// Selectable: a MemberCluster that matches a placement's selector is selected
// only while it is Ready and not being deleted.
func Selectable(mc *fleetv1alpha1.MemberCluster) bool {
	return mc.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
}

// SelectionInput is everything that decides which clusters a placement
// selects. Sets, Bindings and Members may hold more than the placement needs
// (every set, bindings of every namespace); order does not matter.
type SelectionInput struct {
	Placement *fleetv1alpha1.Placement
	// Sets are the MemberClusterSets that exist. One being deleted counts as
	// gone.
	Sets []fleetv1alpha1.MemberClusterSet
	// Bindings are MemberClusterSetBindings; only those in the placement's
	// namespace count.
	Bindings []fleetv1alpha1.MemberClusterSetBinding
	Members  []fleetv1alpha1.MemberCluster
}

// Selection is what a placement selects, and why.
type Selection struct {
	// Clusters are the selected clusters, sorted by name: Ready members of the
	// sets the placement uses that match its clusterSelector.
	Clusters []Cluster
	// Eligible are the names, sorted, of every member of the sets the placement
	// uses that matches its clusterSelector, Ready or not, and not being
	// deleted: what a consumer may keep reaching while a member is briefly
	// unready. A member outside them is not the placement's.
	Eligible []string
	// Sets are the sets the placement draws from, sorted: bound to its
	// namespace, existing, and named in spec.clusterSets when that is given.
	Sets []string
	// NoBinding: no MemberClusterSetBinding in the placement's namespace.
	NoBinding bool
	// Unbound are names in spec.clusterSets with no binding in the namespace.
	Unbound []string
	// UnknownSets are sets the placement would use that are bound but do not
	// exist.
	UnknownSets []string
	// InvalidSets are sets the placement uses whose selector does not parse;
	// they contain no cluster.
	InvalidSets []string
}

// Select decides which clusters a placement selects: the members of the
// MemberClusterSets bound to its namespace (bindings whose set exists),
// narrowed to spec.clusterSets when that is given, then to those matching
// spec.clusterSelector, then to the Ready ones. A set named but not bound, or
// bound but missing, adds nothing. It fails only when the placement's own
// clusterSelector does not parse.
func Select(in SelectionInput) (Selection, error) {
	pl := in.Placement
	placementSel, err := ClusterSelector(pl)
	if err != nil {
		return Selection{}, fmt.Errorf("spec.clusterSelector: %w", err)
	}
	var out Selection
	bound := map[string]bool{}
	for i := range in.Bindings {
		b := &in.Bindings[i]
		if b.Namespace == pl.Namespace && b.DeletionTimestamp.IsZero() {
			bound[b.Spec.ClusterSet] = true
		}
	}
	out.NoBinding = len(bound) == 0
	wanted := bound
	if len(pl.Spec.ClusterSets) > 0 {
		wanted = map[string]bool{}
		for _, name := range pl.Spec.ClusterSets {
			if bound[name] {
				wanted[name] = true
			} else if !out.NoBinding {
				out.Unbound = append(out.Unbound, name)
			}
		}
	}
	existing := map[string]*fleetv1alpha1.MemberClusterSet{}
	for i := range in.Sets {
		if s := &in.Sets[i]; s.DeletionTimestamp.IsZero() {
			existing[s.Name] = s
		}
	}
	var sels []labels.Selector
	for name := range wanted {
		set, ok := existing[name]
		if !ok {
			out.UnknownSets = append(out.UnknownSets, name)
			continue
		}
		out.Sets = append(out.Sets, name)
		sel, err := SetSelector(set)
		if err != nil {
			out.InvalidSets = append(out.InvalidSets, name)
			continue
		}
		sels = append(sels, sel)
	}
	for i := range in.Members {
		mc := &in.Members[i]
		if !mc.DeletionTimestamp.IsZero() {
			continue
		}
		set := labels.Set(mc.Labels)
		if !placementSel.Matches(set) || !slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(set) }) {
			continue
		}
		out.Eligible = append(out.Eligible, mc.Name)
		if Selectable(mc) {
			out.Clusters = append(out.Clusters, Cluster{Name: mc.Name, Labels: mc.Labels})
		}
	}
	slices.SortFunc(out.Clusters, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range [][]string{out.Eligible, out.Sets, out.Unbound, out.UnknownSets, out.InvalidSets} {
		slices.Sort(s)
	}
	out.Unbound = slices.Compact(out.Unbound)
	return out, nil
}

// ClusterSetsCondition is a placement's ClusterSetsBound condition for a
// selection: False, naming what is missing, when no set is bound to the
// namespace, a named set is not bound, or a set it would use does not exist.
func ClusterSetsCondition(s Selection, namespace string, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type:               string(fleetv1alpha1.PlacementClusterSetsBound),
		Status:             metav1.ConditionTrue,
		Reason:             string(fleetv1alpha1.PlacementReasonClusterSetsBound),
		ObservedGeneration: generation,
	}
	var missing []string
	if s.NoBinding {
		missing = append(missing, fmt.Sprintf("no MemberClusterSet is bound to namespace %s (create a MemberClusterSetBinding there)", namespace))
	}
	if len(s.Unbound) > 0 {
		missing = append(missing, fmt.Sprintf("spec.clusterSets names %s not bound to namespace %s", setList(s.Unbound), namespace))
	}
	if len(s.UnknownSets) > 0 {
		missing = append(missing, fmt.Sprintf("namespace %s binds %s, which %s not exist", namespace, setList(s.UnknownSets), doesOrDo(s.UnknownSets)))
	}
	var notes []string
	if len(s.InvalidSets) > 0 {
		notes = append(notes, fmt.Sprintf("%s: invalid clusterSelector, no cluster added", setList(s.InvalidSets)))
	}
	if len(missing) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, string(fleetv1alpha1.PlacementReasonClusterSetUnbound)
		if len(s.Sets) > 0 {
			notes = append(notes, "selecting from "+setList(s.Sets)+" only")
		} else {
			notes = append(notes, "selecting nothing")
		}
		c.Message = strings.Join(append(missing, notes...), "; ")
		return c
	}
	c.Message = strings.Join(append([]string{"selecting from " + setList(s.Sets) + ", bound to namespace " + namespace}, notes...), "; ")
	return c
}

// setList names sets for a message: "MemberClusterSet a" or
// "MemberClusterSets a, b".
func setList(names []string) string {
	if len(names) == 1 {
		return "MemberClusterSet " + names[0]
	}
	return "MemberClusterSets " + strings.Join(names, ", ")
}

func doesOrDo(names []string) string {
	if len(names) == 1 {
		return "does"
	}
	return "do"
}
