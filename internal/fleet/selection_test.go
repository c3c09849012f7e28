package fleet_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

const ns = "team-a"

func member(name string, ready bool, kv ...string) fleetv1alpha1.MemberCluster {
	mc := fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		mc.Labels[kv[i]] = kv[i+1]
	}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	mc.Status.Conditions = []metav1.Condition{{Type: string(fleetv1alpha1.MemberClusterReady), Status: status}}
	return mc
}

func clusterSet(name string, matchLabels map[string]string) fleetv1alpha1.MemberClusterSet {
	s := fleetv1alpha1.MemberClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if matchLabels != nil {
		s.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
	return s
}

func binding(namespace, set string) fleetv1alpha1.MemberClusterSetBinding {
	return fleetv1alpha1.MemberClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec:       fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: set},
	}
}

// placementIn is placement "p" of namespace ns.
func placementIn(sets []string, matchLabels map[string]string) *fleetv1alpha1.Placement {
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	pl.Spec.ClusterSets = sets
	if matchLabels != nil {
		pl.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: matchLabels}
	}
	return pl
}

func selectedNames(s fleet.Selection) []string {
	out := []string{}
	for _, c := range s.Clusters {
		out = append(out, c.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	members := []fleetv1alpha1.MemberCluster{
		member("eu-1", true, "tenant", "a", "region", "eu"),
		member("eu-2", false, "tenant", "a", "region", "eu"), // not Ready
		member("us-1", true, "tenant", "a", "region", "us"),
		member("b-1", true, "tenant", "b", "region", "eu"),
		member("shared", true, "region", "us"),
	}
	sets := []fleetv1alpha1.MemberClusterSet{
		clusterSet("all", nil),
		clusterSet("tenant-a", map[string]string{"tenant": "a"}),
		clusterSet("tenant-b", map[string]string{"tenant": "b"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Spec: fleetv1alpha1.MemberClusterSetSpec{ClusterSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "Near"}}}}},
	}
	tests := []struct {
		name      string
		placement *fleetv1alpha1.Placement
		bindings  []fleetv1alpha1.MemberClusterSetBinding
		want      []string
		wantSets  []string
		// bound is the ClusterSetsBound status; message parts must all appear.
		bound   metav1.ConditionStatus
		message []string
	}{
		{
			name:      "no binding in the namespace selects nothing",
			placement: placementIn(nil, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding("other", "all")},
			want:      []string{},
			bound:     metav1.ConditionFalse,
			message:   []string{"no MemberClusterSet is bound to namespace team-a", "selecting nothing"},
		},
		{
			name:      "a set of all clusters selects every Ready member",
			placement: placementIn(nil, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "all")},
			want:      []string{"b-1", "eu-1", "shared", "us-1"},
			wantSets:  []string{"all"},
			bound:     metav1.ConditionTrue,
			message:   []string{"selecting from MemberClusterSet all, bound to namespace team-a"},
		},
		{
			name:      "a tenant's set, then the placement's selector",
			placement: placementIn(nil, map[string]string{"region": "eu"}),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a")},
			want:      []string{"eu-1"},
			wantSets:  []string{"tenant-a"},
			bound:     metav1.ConditionTrue,
		},
		{
			name:      "two bound sets are a union",
			placement: placementIn(nil, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a"), binding(ns, "tenant-b")},
			want:      []string{"b-1", "eu-1", "us-1"},
			wantSets:  []string{"tenant-a", "tenant-b"},
			bound:     metav1.ConditionTrue,
			message:   []string{"MemberClusterSets tenant-a, tenant-b"},
		},
		{
			name:      "clusterSets narrows to the named bound sets",
			placement: placementIn([]string{"tenant-b"}, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a"), binding(ns, "tenant-b")},
			want:      []string{"b-1"},
			wantSets:  []string{"tenant-b"},
			bound:     metav1.ConditionTrue,
		},
		{
			name:      "clusterSets naming an unbound set selects nothing and says so",
			placement: placementIn([]string{"tenant-b"}, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a")},
			want:      []string{},
			bound:     metav1.ConditionFalse,
			message:   []string{"spec.clusterSets names MemberClusterSet tenant-b not bound to namespace team-a", "selecting nothing"},
		},
		{
			name:      "an unbound name next to a bound one: the bound one still counts",
			placement: placementIn([]string{"tenant-a", "tenant-b"}, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a")},
			want:      []string{"eu-1", "us-1"},
			wantSets:  []string{"tenant-a"},
			bound:     metav1.ConditionFalse,
			message:   []string{"tenant-b not bound", "selecting from MemberClusterSet tenant-a only"},
		},
		{
			name:      "a binding to an unknown set contributes nothing",
			placement: placementIn(nil, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a"), binding(ns, "nope")},
			want:      []string{"eu-1", "us-1"},
			wantSets:  []string{"tenant-a"},
			bound:     metav1.ConditionFalse,
			message:   []string{"namespace team-a binds MemberClusterSet nope, which does not exist"},
		},
		{
			name:      "an unknown set not named in clusterSets does not concern the placement",
			placement: placementIn([]string{"tenant-a"}, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "tenant-a"), binding(ns, "nope")},
			want:      []string{"eu-1", "us-1"},
			wantSets:  []string{"tenant-a"},
			bound:     metav1.ConditionTrue,
		},
		{
			name:      "a set with an invalid selector adds no cluster",
			placement: placementIn(nil, nil),
			bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "broken"), binding(ns, "tenant-b")},
			want:      []string{"b-1"},
			wantSets:  []string{"broken", "tenant-b"},
			bound:     metav1.ConditionTrue,
			message:   []string{"MemberClusterSet broken: invalid clusterSelector"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := fleet.Select(fleet.SelectionInput{Placement: tt.placement, Sets: sets, Bindings: tt.bindings, Members: members})
			if err != nil {
				t.Fatal(err)
			}
			if got := selectedNames(s); !slices.Equal(got, tt.want) {
				t.Errorf("selected %v, want %v", got, tt.want)
			}
			if !slices.Equal(s.Sets, tt.wantSets) {
				t.Errorf("sets %v, want %v", s.Sets, tt.wantSets)
			}
			c := fleet.ClusterSetsCondition(s, ns, 3)
			if c.Status != tt.bound || c.ObservedGeneration != 3 || c.Type != string(fleetv1alpha1.PlacementClusterSetsBound) {
				t.Errorf("condition %+v, want status %s", c, tt.bound)
			}
			if wantReason := map[metav1.ConditionStatus]fleetv1alpha1.PlacementReason{metav1.ConditionTrue: fleetv1alpha1.PlacementReasonClusterSetsBound,
				metav1.ConditionFalse: fleetv1alpha1.PlacementReasonClusterSetUnbound}[tt.bound]; c.Reason != string(wantReason) {
				t.Errorf("reason %s, want %s", c.Reason, wantReason)
			}
			for _, part := range tt.message {
				if !strings.Contains(c.Message, part) {
					t.Errorf("message %q lacks %q", c.Message, part)
				}
			}
		})
	}
}

// Eligible counts members that are not Ready (a consumer keeps a blinking
// member), but never one outside the placement's sets or selector.
func TestSelect_EligibleIncludesUnreadyMembersOfTheSets(t *testing.T) {
	s, err := fleet.Select(fleet.SelectionInput{
		Placement: placementIn(nil, map[string]string{"region": "eu"}),
		Sets:      []fleetv1alpha1.MemberClusterSet{clusterSet("a", map[string]string{"tenant": "a"})},
		Bindings:  []fleetv1alpha1.MemberClusterSetBinding{binding(ns, "a")},
		Members: []fleetv1alpha1.MemberCluster{
			member("eu-1", true, "tenant", "a", "region", "eu"),
			member("eu-2", false, "tenant", "a", "region", "eu"),
			member("us-1", false, "tenant", "a", "region", "us"),
			member("b-1", false, "tenant", "b", "region", "eu"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"eu-1", "eu-2"}; !slices.Equal(s.Eligible, want) {
		t.Errorf("eligible %v, want %v", s.Eligible, want)
	}
	if want := []string{"eu-1"}; !slices.Equal(selectedNames(s), want) {
		t.Errorf("selected %v, want %v", selectedNames(s), want)
	}
}

func TestSelect_InvalidPlacementSelectorIsAnError(t *testing.T) {
	pl := placementIn(nil, nil)
	pl.Spec.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
	if _, err := fleet.Select(fleet.SelectionInput{Placement: pl}); err == nil || !strings.Contains(err.Error(), "spec.clusterSelector") {
		t.Fatalf("err = %v, want one naming spec.clusterSelector", err)
	}
}

// selectionWorld is a random fleet: members labelled from a few keys, sets
// over the same labels, bindings in two namespaces.
type selectionWorld struct {
	in fleet.SelectionInput
}

var (
	selectionKeys   = []string{"tenant", "region", "gpu"}
	selectionValues = []string{"a", "b", "c"}
)

func drawLabels(t *rapid.T, label string) map[string]string {
	out := map[string]string{}
	for _, k := range selectionKeys {
		if v := rapid.IntRange(-1, len(selectionValues)-1).Draw(t, label+" "+k); v >= 0 {
			out[k] = selectionValues[v]
		}
	}
	return out
}

func drawSelector(t *rapid.T, label string) *metav1.LabelSelector {
	switch rapid.IntRange(0, 3).Draw(t, label+" kind") {
	case 0:
		return nil
	case 1:
		return &metav1.LabelSelector{}
	default:
		return &metav1.LabelSelector{MatchLabels: drawLabels(t, label)}
	}
}

func drawSelectionWorld(t *rapid.T) selectionWorld {
	var w selectionWorld
	setNames := []string{"s0", "s1", "s2", "s3", "s4"}
	for i := range rapid.IntRange(0, 30).Draw(t, "members") {
		w.in.Members = append(w.in.Members, member(fmt.Sprintf("m%02d", i), rapid.Bool().Draw(t, "ready"), flatten(drawLabels(t, "member"))...))
	}
	for _, name := range setNames {
		if rapid.IntRange(0, 4).Draw(t, "set exists") > 0 {
			s := fleetv1alpha1.MemberClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
			s.Spec.ClusterSelector = drawSelector(t, "set")
			w.in.Sets = append(w.in.Sets, s)
		}
	}
	for _, namespace := range []string{ns, "other"} {
		for _, name := range setNames {
			if rapid.Bool().Draw(t, "bound") {
				w.in.Bindings = append(w.in.Bindings, binding(namespace, name))
			}
		}
	}
	pl := placementIn(nil, nil)
	pl.Spec.ClusterSelector = drawSelector(t, "placement")
	for _, name := range setNames {
		if rapid.IntRange(0, 3).Draw(t, "named") == 0 {
			pl.Spec.ClusterSets = append(pl.Spec.ClusterSets, name)
		}
	}
	w.in.Placement = pl
	return w
}

func flatten(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}

func mustSelect(t *rapid.T, in fleet.SelectionInput) fleet.Selection {
	s, err := fleet.Select(in)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	return s
}

// Every selected cluster is Ready, matches the placement's selector and
// belongs to a set that exists, is bound in the placement's namespace and is
// named by spec.clusterSets when given; every member meeting all of that is
// selected.
func TestSelect_PropertySelectedIsExactlyTheBoundSetsMembers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawSelectionWorld(t)
		s := mustSelect(t, w.in)
		pl := w.in.Placement
		plSel, _ := fleet.ClusterSelector(pl)
		inUsableSet := func(mc *fleetv1alpha1.MemberCluster) bool {
			for i := range w.in.Sets {
				set := &w.in.Sets[i]
				if len(pl.Spec.ClusterSets) > 0 && !slices.Contains(pl.Spec.ClusterSets, set.Name) {
					continue
				}
				if !slices.ContainsFunc(w.in.Bindings, func(b fleetv1alpha1.MemberClusterSetBinding) bool {
					return b.Namespace == pl.Namespace && b.Spec.ClusterSet == set.Name
				}) {
					continue
				}
				if sel, err := fleet.SetSelector(set); err == nil && sel.Matches(labels.Set(mc.Labels)) {
					return true
				}
			}
			return false
		}
		got := selectedNames(s)
		for i := range w.in.Members {
			mc := &w.in.Members[i]
			want := fleet.Selectable(mc) && plSel.Matches(labels.Set(mc.Labels)) && inUsableSet(mc)
			if slices.Contains(got, mc.Name) != want {
				t.Fatalf("member %s (labels %v, ready %v): selected %v, want %v; sets used %v",
					mc.Name, mc.Labels, fleet.Selectable(mc), !want, want, s.Sets)
			}
		}
		if !slices.IsSorted(got) {
			t.Fatalf("selection not sorted: %v", got)
		}
		c := fleet.ClusterSetsCondition(s, pl.Namespace, 1)
		if (c.Status == metav1.ConditionTrue) != (!s.NoBinding && len(s.Unbound) == 0 && len(s.UnknownSets) == 0) {
			t.Fatalf("condition %s (%s) disagrees with the selection %+v", c.Status, c.Message, s)
		}
	})
}

// Adding a binding never removes a cluster, whatever else the placement says.
func TestSelect_PropertyAddingABindingNeverRemovesACluster(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawSelectionWorld(t)
		before := selectedNames(mustSelect(t, w.in))
		namespace := rapid.SampledFrom([]string{ns, "other"}).Draw(t, "new binding's namespace")
		set := rapid.SampledFrom([]string{"s0", "s1", "s2", "s3", "s4", "unknown"}).Draw(t, "new binding's set")
		w.in.Bindings = append(slices.Clone(w.in.Bindings), binding(namespace, set))
		after := selectedNames(mustSelect(t, w.in))
		for _, name := range before {
			if !slices.Contains(after, name) {
				t.Fatalf("binding %s in %s removed %s: before %v, after %v", set, namespace, name, before, after)
			}
		}
	})
}

// Naming sets in spec.clusterSets only narrows: the selection is a subset of
// what the placement selects without naming any.
func TestSelect_PropertyClusterSetsOnlyNarrows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawSelectionWorld(t)
		narrowed := selectedNames(mustSelect(t, w.in))
		w.in.Placement = w.in.Placement.DeepCopy()
		w.in.Placement.Spec.ClusterSets = nil
		all := selectedNames(mustSelect(t, w.in))
		for _, name := range narrowed {
			if !slices.Contains(all, name) {
				t.Fatalf("%s selected with clusterSets but not without", name)
			}
		}
	})
}
