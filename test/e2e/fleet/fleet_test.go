//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

const (
	testNamespace = "fleet-e2e"
	placementName = "p"
	// placedLabel selects a MemberCluster into the test's placement.
	placedLabel = "e2e.lockstep.dev/placed"
	// canaryLabel selects a MemberCluster into the placement's canary group.
	canaryLabel = "e2e.lockstep.dev/canary"
	// memberSecret is the Secret fleet-up.sh made for member m1; the test's
	// 251 MemberClusters all reach m1 through it.
	memberSecret = "m1"
	// hubSelf is a MemberCluster whose kubeconfig is the hub's own: it stays
	// reachable while m1 is stopped.
	hubSelf = "hub-self"

	pollInterval  = 250 * time.Millisecond
	settleTimeout = 90 * time.Second
)

var clusterNames = fleetsim.ClusterNames

// scene is what the test believes about the hub: every MemberCluster's labels
// and readiness and the placement's group strategy. The expected layout is
// computed from it with the planner's own layout function.
type scene struct {
	c        client.Client
	labels   map[string]map[string]string
	notReady map[string]bool
	groups   fleetv1alpha1.GroupStrategy
	w        *decisionWatcher
}

// selected are the clusters the placement should select now, with their labels.
func (s *scene) selected() []fleet.Cluster {
	var out []fleet.Cluster
	for name, l := range s.labels {
		if l[placedLabel] == "yes" && !s.notReady[name] {
			out = append(out, fleet.Cluster{Name: name, Labels: maps.Clone(l)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *scene) selectedNames() []string {
	var out []string
	for _, c := range s.selected() {
		out = append(out, c.Name)
	}
	return out
}

// edit pushes a change the scene has already recorded to the hub.
type edit func(ctx context.Context) error

// label records a label set (or, with value "", removed) on MemberClusters and
// returns the edit that patches them, several at a time.
func (s *scene) label(names []string, key, value string) edit {
	v := "null"
	if value != "" {
		v = strconv.Quote(value)
	}
	for _, n := range names {
		if value == "" {
			delete(s.labels[n], key)
		} else {
			s.labels[n][key] = value
		}
	}
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, key, v))
	return func(ctx context.Context) error {
		return s.eachCluster(names, func(n string) error {
			mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: n}}
			if err := s.c.Patch(ctx, mc, patch); err != nil {
				return fmt.Errorf("labelling %s: %w", n, err)
			}
			return nil
		})
	}
}

// eachCluster runs f for every name, eight at a time, and returns the first error.
func (s *scene) eachCluster(names []string, f func(name string) error) error {
	errs := make(chan error, len(names))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := f(n); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// groupStrategy records a new group strategy and returns the edit that sets it.
func (s *scene) groupStrategy(gs fleetv1alpha1.GroupStrategy) edit {
	s.groups = gs
	return func(ctx context.Context) error {
		p := &fleetv1alpha1.Placement{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: placementName}, p); err != nil {
			return err
		}
		before := p.DeepCopy()
		p.Spec.DecisionStrategy.GroupStrategy = gs
		return s.c.Patch(ctx, p, client.MergeFrom(before))
	}
}

// change makes one update live. plan records the update in the scene and
// returns the edits that make it; the clusters selected both before and after
// must stay in the union of the slices throughout, and the decisions must then
// settle on the layout the scene expects.
func (s *scene) change(t *testing.T, what string, plan func() []edit) {
	t.Helper()
	s.play(t, what, false, plan)
}

// changeWriteByWrite is change for an update made by one edit: the watcher
// must also see exactly the states the planner goes through, write by write.
func (s *scene) changeWriteByWrite(t *testing.T, what string, plan func() []edit) {
	t.Helper()
	s.play(t, what, true, plan)
}

func (s *scene) play(t *testing.T, what string, writeByWrite bool, plan func() []edit) {
	t.Helper()
	start := time.Now()
	before := s.selectedNames()
	mark, initial := s.w.mark(), s.w.Slices()
	edits := plan()
	after := s.selectedNames()
	s.w.SetStay(intersect(before, after))
	for _, e := range edits {
		if err := e(t.Context()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	want := s.awaitLayout(t, what, settleTimeout)
	s.checkWatcher(t, what)
	if writeByWrite {
		s.checkStates(t, what, mark, initial, want)
	}
	t.Logf("%s: %d -> %d clusters, settled in %s", what, len(before), len(after), time.Since(start).Round(10*time.Millisecond))
}

// checkStates compares the states the watcher saw since mark with those the
// planner goes through from initial to the layout, one write at a time. A
// PlacementDecision's labels and its decisions (the status subresource) are
// written by two requests, and a new one is created empty before its decisions
// are written: the comparison is of what slices hold, so those half-written
// states fold into the one before them. The final check of the layout covers
// the labels.
func (s *scene) checkStates(t *testing.T, what string, mark int, initial []fleet.Slice, want fleet.Layout) {
	t.Helper()
	// The watch may trail the read that found the layout.
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval/5, 10*time.Second, true, func(context.Context) (bool, error) {
		return sameAsLayout(s.w.Slices(), want), nil
	})
	if err != nil {
		t.Fatalf("%s: the watcher never saw the final layout", what)
	}
	steps, err := fleetsim.Play(fleetsim.NewStore(initial), want, fleetv1alpha1.RollingUpdateDecisionUpdate)
	if err != nil {
		t.Fatalf("%s: planning the update: %v", what, err)
	}
	var planned [][]fleet.Slice
	for _, st := range steps {
		planned = append(planned, st.State)
	}
	seen := s.w.statesSince(mark)
	got, wantStates := contentSteps(initial, seen), contentSteps(initial, planned)
	if !reflect.DeepEqual(got, wantStates) {
		var b strings.Builder
		for i := range max(len(got), len(wantStates)) {
			var g, w []fleet.Slice
			if i < len(got) {
				g = got[i]
			}
			if i < len(wantStates) {
				w = wantStates[i]
			}
			fmt.Fprintf(&b, "state %d seen:\n%splanned:\n%s", i+1, fleetsim.Render(g), fleetsim.Render(w))
		}
		t.Errorf("%s: the watcher saw %d state(s), the planner goes through %d:\n%s", what, len(got), len(wantStates), b.String())
		return
	}
	t.Logf("%s: the watcher saw the planner's %d states in order (%d states in all)", what, len(got), len(seen))
}

// contentSteps reduces states to what their slices hold (no labels, no
// empty slices) and drops each state that holds the same as the one before.
func contentSteps(initial []fleet.Slice, states [][]fleet.Slice) [][]fleet.Slice {
	content := func(state []fleet.Slice) []fleet.Slice {
		var out []fleet.Slice
		for _, sl := range state {
			if len(sl.Clusters) > 0 {
				out = append(out, fleet.Slice{Name: sl.Name, Clusters: sl.Clusters})
			}
		}
		return out
	}
	prev := content(initial)
	var out [][]fleet.Slice
	for _, st := range states {
		c := content(st)
		if reflect.DeepEqual(c, prev) {
			continue
		}
		out = append(out, c)
		prev = c
	}
	return out
}

func intersect(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range a {
		in[x] = true
	}
	var out []string
	for _, x := range b {
		if in[x] {
			out = append(out, x)
		}
	}
	return out
}

func (s *scene) checkWatcher(t *testing.T, what string) {
	t.Helper()
	violations, peak, states := s.w.report()
	if len(violations) > 0 {
		t.Fatalf("%s: %d violation(s) seen by the watcher (%d states, peak slice %d):\n%s",
			what, len(violations), states, peak, strings.Join(violations, "\n"))
	}
}

// observedSlices reads the placement's PlacementDecisions as the planner's slices.
func (s *scene) observedSlices(ctx context.Context) ([]fleet.Slice, error) {
	var list fleetv1alpha1.PlacementDecisionList
	if err := s.c.List(ctx, &list, client.InNamespace(testNamespace),
		client.MatchingLabels{fleetv1alpha1.LabelPlacement: placementName}); err != nil {
		return nil, err
	}
	out := make([]fleet.Slice, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, asSlice(&list.Items[i]))
	}
	sortSlices(out)
	return out, nil
}

// asSlice reads a PlacementDecision as the planner's slice: its name, the
// fleet labels and its clusters.
func asSlice(pd *fleetv1alpha1.PlacementDecision) fleet.Slice {
	sl := fleet.Slice{Name: pd.Name, Labels: map[string]string{}}
	for _, k := range []string{fleetv1alpha1.LabelPlacement, fleetv1alpha1.LabelDecisionGroupName, fleetv1alpha1.LabelDecisionGroupIndex} {
		if v, ok := pd.Labels[k]; ok {
			sl.Labels[k] = v
		}
	}
	for _, d := range pd.Status.Decisions {
		sl.Clusters = append(sl.Clusters, d.ClusterName)
	}
	return sl
}

// sortSlices orders slices by their number, as the layout does.
func sortSlices(ss []fleet.Slice) {
	num := func(name string) int {
		n, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:])
		return n
	}
	sort.Slice(ss, func(i, j int) bool { return num(ss[i].Name) < num(ss[j].Name) })
}

// awaitLayout polls until DecisionsSettled is True for the current spec and
// the slices are exactly the expected layout.
func (s *scene) awaitLayout(t *testing.T, what string, timeout time.Duration) fleet.Layout {
	t.Helper()
	want, err := fleet.DesiredLayout(placementName, s.selected(), s.groups)
	if err != nil {
		t.Fatalf("%s: expected layout: %v", what, err)
	}
	wantSlices := slices.Clone(want.Slices)
	for i := range wantSlices {
		if len(wantSlices[i].Clusters) == 0 {
			wantSlices[i].Clusters = nil
		}
	}
	var got []fleet.Slice
	last := "not polled yet"
	err = wait.PollUntilContextTimeout(t.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		p := &fleetv1alpha1.Placement{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: placementName}, p); err != nil {
			last = err.Error()
			return false, nil
		}
		cond := meta.FindStatusCondition(p.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		if cond == nil || cond.Status != metav1.ConditionTrue || p.Status.ObservedGeneration != p.Generation {
			last = fmt.Sprintf("DecisionsSettled %v, observedGeneration %d of %d", cond, p.Status.ObservedGeneration, p.Generation)
			return false, nil
		}
		if got, err = s.observedSlices(ctx); err != nil {
			last = err.Error()
			return false, nil
		}
		if !reflect.DeepEqual(got, wantSlices) {
			last = "slices differ from the expected layout"
			return false, nil
		}
		if int(p.Status.NumberOfSelectedClusters) != len(s.selected()) {
			last = fmt.Sprintf("numberOfSelectedClusters %d, want %d", p.Status.NumberOfSelectedClusters, len(s.selected()))
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s: the decisions did not settle within %s (last: %s)\ngot\n%swant\n%s",
			what, timeout, last, fleetsim.Render(got), fleetsim.Render(wantSlices))
	}
	return want
}

// awaitReady polls until every named MemberCluster's Ready condition has the
// given status, and returns how long that took.
func (s *scene) awaitReady(t *testing.T, names []string, status metav1.ConditionStatus, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	last := ""
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var list fleetv1alpha1.MemberClusterList
		if err := s.c.List(ctx, &list); err != nil {
			last = err.Error()
			return false, nil
		}
		pending, reasons, some := 0, map[string]int{}, []string{}
		for _, mc := range list.Items {
			if !want[mc.Name] {
				continue
			}
			cond := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
			if cond == nil || cond.Status != status {
				pending++
				reason := "no condition yet"
				if cond != nil {
					reason = cond.Reason
				}
				reasons[reason]++
				if len(some) < 5 {
					some = append(some, mc.Name)
				}
			}
		}
		last = fmt.Sprintf("%d of %d not Ready=%s (their reasons: %v; among them %v)", pending, len(names), status, reasons, some)
		return pending == 0, nil
	})
	if err != nil {
		t.Fatalf("MemberClusters did not turn Ready=%s within %s: %s", status, timeout, last)
	}
	return time.Since(start)
}

// registerClusters makes cluster000..cluster250, all reaching member m1
// through the same Secret, and hub-self, which reaches the hub itself.
func (s *scene) registerClusters(ctx context.Context) error {
	kubeconfig, err := os.ReadFile(testFleet.HubKubeconfig)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lockstep-fleet", Name: hubSelf},
		Data:       map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: kubeconfig},
	}
	if err := s.c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", hubSelf, err)
	}
	names := append(clusterNames("000-250"), hubSelf)
	for _, n := range names {
		s.labels[n] = map[string]string{}
	}
	return s.eachCluster(names, func(n string) error {
		ref := memberSecret
		if n == hubSelf {
			ref = hubSelf
		}
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: "lockstep-fleet", Name: ref,
			}},
		}
		if err := s.c.Create(ctx, mc); err != nil {
			return fmt.Errorf("creating MemberCluster %s: %w", n, err)
		}
		return nil
	})
}

func percentOrCount(s string) fleetv1alpha1.GroupStrategy {
	v := intstr.Parse(s)
	return fleetv1alpha1.GroupStrategy{ClustersPerDecisionGroup: &v}
}

// The fleet on real clusters: 251 MemberClusters backed by one member, one
// placement, the decision updates of the worked examples and more played live
// under a watcher, the hub killed in the middle of a surge, and the member
// stopped and started. The watcher fails the test at the first state in which
// a cluster placed before and after an update is in no slice, or a slice holds
// more than 100 clusters.
func TestFleet_DecisionsNeverDropAPlacedCluster(t *testing.T) {
	ctx := t.Context()
	start := time.Now()
	s := &scene{c: testFleet.Hub, labels: map[string]map[string]string{}, notReady: map[string]bool{}}

	// fleet-up.sh registered m1 with its labels; the hub must find it Ready.
	s.awaitReady(t, []string{"m1"}, metav1.ConditionTrue, 60*time.Second)
	m1 := &fleetv1alpha1.MemberCluster{}
	if err := s.c.Get(ctx, client.ObjectKey{Name: "m1"}, m1); err != nil {
		t.Fatal(err)
	}
	if m1.Labels["region"] != "eu" || m1.Labels["gpu"] != "true" {
		t.Errorf("m1 labels %v, want region=eu gpu=true", m1.Labels)
	}

	if err := s.registerClusters(ctx); err != nil {
		t.Fatal(err)
	}
	all := clusterNames("000-250")
	took := s.awaitReady(t, append(slices.Clone(all), hubSelf), metav1.ConditionTrue, 120*time.Second)
	t.Logf("252 MemberClusters registered and Ready in %s", took.Round(10*time.Millisecond))

	if err := testFleet.Namespace(ctx, testNamespace); err != nil {
		t.Fatal(err)
	}
	w, err := watchDecisions(ctx, testFleet.Hub, testNamespace, placementName)
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	t.Cleanup(w.Stop)

	s.change(t, "150 clusters placed", func() []edit {
		s.groups = percentOrCount("100%")
		create := func(ctx context.Context) error {
			return s.c.Create(ctx, &fleetv1alpha1.Placement{
				ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: placementName},
				Spec: fleetv1alpha1.PlacementSpec{
					ClusterSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{placedLabel: "yes"}},
					DecisionStrategy: fleetv1alpha1.DecisionStrategy{GroupStrategy: s.groups},
				},
			})
		}
		return []edit{s.label(clusterNames("001-150"), placedLabel, "yes"), create}
	})

	canaries := func(gs fleetv1alpha1.GroupStrategy) fleetv1alpha1.GroupStrategy {
		gs.DecisionGroups = []fleetv1alpha1.DecisionGroup{{
			GroupName:            "canary",
			GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{canaryLabel: "true"}},
		}}
		return gs
	}
	steps := []struct {
		what string
		// writeByWrite: one edit makes the update, so the watcher must see the
		// planner's states exactly.
		writeByWrite bool
		plan         func() []edit
	}{{
		what:         "cluster000 joins and sorts first: cluster100 moves to the second slice",
		writeByWrite: true,
		plan:         func() []edit { return []edit{s.label(clusterNames("000"), placedLabel, "yes")} },
	}, {
		what:         "cluster000 leaves: cluster100 moves back",
		writeByWrite: true,
		plan:         func() []edit { return []edit{s.label(clusterNames("000"), placedLabel, "")} },
	}, {
		what: "100 clusters join: 250",
		plan: func() []edit { return []edit{s.label(clusterNames("151-250"), placedLabel, "yes")} },
	}, {
		what:         "clustersPerDecisionGroup 100% to 50",
		writeByWrite: true,
		plan:         func() []edit { return []edit{s.groupStrategy(percentOrCount("50"))} },
	}, {
		what: "a canary group takes 10 clusters",
		plan: func() []edit {
			return []edit{s.label(clusterNames("045-054"), canaryLabel, "true"), s.groupStrategy(canaries(percentOrCount("50")))}
		},
	}, {
		what: "the canaries change: 10 clusters leave the group, 10 others join it",
		plan: func() []edit {
			return []edit{s.label(clusterNames("195-204"), canaryLabel, "true"), s.label(clusterNames("045-054"), canaryLabel, "")}
		},
	}, {
		what:         "clustersPerDecisionGroup 50 to 30%",
		writeByWrite: true,
		plan:         func() []edit { return []edit{s.groupStrategy(canaries(percentOrCount("30%")))} },
	}}
	for _, st := range steps {
		if st.writeByWrite {
			s.changeWriteByWrite(t, st.what, st.plan)
		} else {
			s.change(t, st.what, st.plan)
		}
	}

	s.killMidSurge(t, canaries)
	s.memberStoppedAndStarted(t)
	s.allLosesClusters(t)

	violations, peak, states := s.w.report()
	t.Logf("watcher: %d states, peak slice %d clusters, %d violations; the test took %s",
		states, peak, len(violations), time.Since(start).Round(100*time.Millisecond))
}
