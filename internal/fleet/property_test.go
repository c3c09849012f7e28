package fleet_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

// world is a fleet and a placement's group strategy. Label "selected" stands for
// the placement's cluster selector and the members' readiness.
type world struct {
	labels   map[string]map[string]string
	strategy fleetv1alpha1.GroupStrategy
}

var predefinedGroups = []fleetv1alpha1.DecisionGroup{
	{GroupName: "canary", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
	{GroupName: "eu", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
	{GroupName: "us", GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}},
}

func randomLabels(r *rand.Rand) map[string]string {
	sel := "yes"
	if r.IntN(10) == 0 {
		sel = "no"
	}
	tier := "prod"
	if r.IntN(8) == 0 {
		tier = "canary"
	}
	return map[string]string{"selected": sel, "tier": tier, "region": []string{"eu", "us", "ap"}[r.IntN(3)]}
}

// drawWorld draws up to 1,000 clusters; their labels come from a drawn seed, so
// that large fleets stay cheap to generate.
func drawWorld(t *rapid.T) *world {
	w := &world{labels: map[string]map[string]string{}}
	n := rapid.IntRange(0, 1000).Draw(t, "clusters")
	r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "label seed"), 0))
	for i := range n {
		w.labels[fmt.Sprintf("cluster%04d", i)] = randomLabels(r)
	}
	w.strategy = drawStrategy(t)
	return w
}

func drawStrategy(t *rapid.T) fleetv1alpha1.GroupStrategy {
	var per intstr.IntOrString
	if rapid.Bool().Draw(t, "percent") {
		per = intstr.FromString(fmt.Sprintf("%d%%", rapid.IntRange(1, 100).Draw(t, "percent value")))
	} else {
		per = intstr.FromInt32(int32(rapid.IntRange(1, 300).Draw(t, "clusters per group")))
	}
	var groups []fleetv1alpha1.DecisionGroup
	for _, i := range rapid.Permutation([]int{0, 1, 2}).Draw(t, "group order")[:rapid.IntRange(0, 3).Draw(t, "groups")] {
		groups = append(groups, predefinedGroups[i])
	}
	return fleetv1alpha1.GroupStrategy{ClustersPerDecisionGroup: &per, DecisionGroups: groups}
}

// change draws a change of the world: labels flipped (selection, group), clusters
// joining and leaving, the group strategy changed; any of them, or all at once.
func (w *world) change(t *rapid.T) {
	r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "change seed"), 1))
	if rapid.Bool().Draw(t, "flip labels") {
		flips := rapid.IntRange(1, 50).Draw(t, "flips")
		names := slices.Sorted(mapsKeys(w.labels))
		for range min(flips, len(names)) {
			w.labels[names[r.IntN(len(names))]] = randomLabels(r)
		}
	}
	if rapid.Bool().Draw(t, "join or leave") {
		for range rapid.IntRange(1, 20).Draw(t, "joins and leaves") {
			name := fmt.Sprintf("cluster%04d", r.IntN(1100))
			if _, ok := w.labels[name]; ok {
				delete(w.labels, name)
			} else {
				w.labels[name] = randomLabels(r)
			}
		}
	}
	if rapid.Bool().Draw(t, "change strategy") {
		w.strategy = drawStrategy(t)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (w *world) layout(t *rapid.T) fleet.Layout {
	var cs []fleet.Cluster
	for _, name := range slices.Sorted(mapsKeys(w.labels)) {
		if l := w.labels[name]; l["selected"] == "yes" {
			cs = append(cs, fleet.Cluster{Name: name, Labels: l})
		}
	}
	l, err := fleet.DesiredLayout("p", cs, w.strategy)
	if err != nil {
		t.Fatalf("DesiredLayout: %v", err)
	}
	return l
}

// applyPlan applies a plan's writes one at a time up to crashAt (the rest are
// lost in a crash), with the watcher checking the state after each write.
func applyPlan(t *rapid.T, s *fleetsim.Store, p fleet.Plan, desired fleet.Layout, crashAt int) {
	stay := fleetsim.Selected(desired)
	for _, w := range p.Writes[:crashAt] {
		if err := s.Apply(w, stay); err != nil {
			t.Fatalf("%s plan: %v", p.Phase, err)
		}
		if len(s.Absences) > 0 {
			t.Fatalf("%s plan: %v\nstate after:\n%s", p.Phase, s.Absences, fleetsim.Render(s.Slices()))
		}
		if s.Oversized() {
			t.Fatalf("%s plan: a slice holds %d clusters after %s %s", p.Phase, s.PeakSliceSize, w.Op, w.Slice.Name)
		}
	}
}

// decisionUpdates is the property: from a settled placement, through changes of
// the fleet that may come in the middle of an update, with the controller
// crashing between any two writes and planning again from what it reads, no
// selected cluster ever leaves the union of the slices and no slice holds more
// than 100; once the changes stop, two plans applied in full settle the slices
// on the layout.
func decisionUpdates(update fleetv1alpha1.DecisionUpdateType) func(*rapid.T) {
	return func(t *rapid.T) {
		w := drawWorld(t)
		s := fleetsim.NewStore(w.layout(t).Slices)
		changes := rapid.IntRange(1, 3).Draw(t, "changes")
		for c := range changes {
			w.change(t)
			desired := w.layout(t)
			for round := 0; ; round++ {
				last := c == changes-1
				if !last && rapid.IntRange(0, 3).Draw(t, "next change now") == 0 {
					break // the fleet changes again in the middle of the update
				}
				p := fleet.PlanDecisions(s.Slices(), desired, update)
				if p.Phase == fleet.PhaseSettled || round >= 6 {
					break
				}
				applyPlan(t, s, p, desired, rapid.IntRange(0, len(p.Writes)).Draw(t, "crash after write"))
			}
		}
		// No more changes and no more crashes: the update must settle.
		desired := w.layout(t)
		for n := 0; ; n++ {
			p := fleet.PlanDecisions(s.Slices(), desired, update)
			if p.Phase == fleet.PhaseSettled {
				break
			}
			if n == 2 {
				t.Fatalf("still %s after two plans applied in full:\n%s", p.Phase, fleetsim.Render(s.Slices()))
			}
			applyPlan(t, s, p, desired, len(p.Writes))
		}
		want := fleetsim.NewStore(desired.Slices).Slices() // in the store's order
		if got := s.Slices(); !reflect.DeepEqual(got, want) {
			t.Fatalf("settled on\n%swant\n%s", fleetsim.Render(got), fleetsim.Render(want))
		}
	}
}

func TestRollingUpdate_NoSelectedClusterEverLeavesTheUnion(t *testing.T) {
	rapid.Check(t, decisionUpdates(fleetv1alpha1.RollingUpdateDecisionUpdate))
}

// failures records a failed property instead of failing the test.
type failures struct {
	*testing.T
	failed bool
	report strings.Builder
}

func (f *failures) Errorf(format string, args ...any) {
	f.failed = true
	fmt.Fprintf(&f.report, format+"\n", args...)
}
func (f *failures) Fatalf(format string, args ...any) { f.Errorf(format, args...); f.FailNow() }
func (f *failures) Error(args ...any)                 { f.Errorf("%s", fmt.Sprint(args...)) }
func (f *failures) Fatal(args ...any)                 { f.Errorf("%s", fmt.Sprint(args...)); f.FailNow() }
func (f *failures) Fail()                             { f.failed = true }
func (f *failures) FailNow()                          { f.failed = true }
func (f *failures) Failed() bool                      { return f.failed }
func (f *failures) Logf(string, ...any)               {}
func (f *failures) Log(...any)                        {}

// The same property under All must fail: the watcher sees a cluster leave the
// union while it moves between slices. This shows the checker can fail.
func TestAll_ThePropertyFindsAMissingCluster(t *testing.T) {
	old := flag.Lookup("rapid.nofailfile").Value.String()
	_ = flag.Set("rapid.nofailfile", "true") // an expected failure leaves no file behind
	defer func() { _ = flag.Set("rapid.nofailfile", old) }()

	f := &failures{T: t}
	rapid.Check(f, decisionUpdates(fleetv1alpha1.AllDecisionUpdate))
	if !f.failed {
		t.Fatal("rapid found no absence under All")
	}
	if !strings.Contains(f.report.String(), "missing after") {
		t.Fatalf("the failure is not an absence:\n%s", f.report.String())
	}
	t.Logf("rapid's counterexample under All:\n%s", firstLines(f.report.String(), 4))
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
