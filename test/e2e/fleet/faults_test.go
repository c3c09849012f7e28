//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// killMidSurge re-groups the 250 clusters and SIGKILLs the hub at the first
// PlacementDecision write it sees, then starts the hub again: it must resume
// from what it reads, with no cluster missing at any moment. A kill that lands
// after the update finished proves nothing, so the test tries again with
// another re-grouping, up to three times.
func (s *scene) killMidSurge(t *testing.T, canaries func(fleetv1alpha1.GroupStrategy) fleetv1alpha1.GroupStrategy) {
	t.Helper()
	for _, size := range []string{"100%", "50", "100%"} {
		what := fmt.Sprintf("hub SIGKILLed at the first write of clustersPerDecisionGroup %s, then restarted", size)
		start := time.Now()
		s.w.SetStay(s.selectedNames())
		apply := s.groupStrategy(canaries(percentOrCount(size)))
		want, err := fleet.DesiredLayout(placementName, s.selected(), s.groups)
		if err != nil {
			t.Fatal(err)
		}
		killed := make(chan []fleet.Slice, 1)
		s.w.atNextState(t.Context(), 60*time.Second, func(state []fleet.Slice) {
			_ = testFleet.Process.Kill()
			killed <- state
		})
		if err := apply(t.Context()); err != nil {
			t.Fatal(err)
		}
		var atKill []fleet.Slice
		select {
		case atKill = <-killed:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no PlacementDecision write within 60s", what)
		}
		midUpdate := !sameAsLayout(atKill, want)
		p := &fleetv1alpha1.Placement{}
		if err := s.c.Get(t.Context(), client.ObjectKey{Namespace: testNamespace, Name: placementName}, p); err != nil {
			t.Fatal(err)
		}
		settled := meta.FindStatusCondition(p.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		if err := testFleet.Process.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		s.awaitLayout(t, what, settleTimeout)
		s.checkWatcher(t, what)
		t.Logf("%s: killed when the watcher saw %d slices (%s), DecisionsSettled at the kill %s; settled after the restart in %s",
			what, len(atKill), map[bool]string{true: "mid-update", false: "already final"}[midUpdate],
			conditionString(settled), time.Since(start).Round(10*time.Millisecond))
		if midUpdate {
			return
		}
	}
	t.Errorf("the hub was never killed in the middle of an update: every kill came after the final write")
}

// sameAsLayout reports whether the slices seen by the watcher are exactly
// the layout's.
func sameAsLayout(state []fleet.Slice, l fleet.Layout) bool {
	want := slices.Clone(l.Slices)
	slices.SortFunc(want, func(a, b fleet.Slice) int { return strings.Compare(a.Name, b.Name) })
	return fleetwatch.Equal(state, want)
}

func conditionString(c *metav1.Condition) string {
	if c == nil {
		return "unset"
	}
	return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
}

// memberStoppedAndStarted stops member m1 with kwokctl: the 251 MemberClusters
// it backs must turn Ready=False within 30 seconds and leave the placement,
// while hub-self (on the hub's own apiserver) never leaves it. Started again,
// they come back.
func (s *scene) memberStoppedAndStarted(t *testing.T) {
	t.Helper()
	s.change(t, "hub-self joins", func() []edit { return []edit{s.label([]string{hubSelf}, placedLabel, "yes")} })

	backed := clusterNames("000-250")
	stop := func() []edit {
		for _, n := range backed {
			s.notReady[n] = true
		}
		return []edit{func(ctx context.Context) error {
			if err := testFleet.MemberKwokctl(ctx, "m1", "stop", "cluster"); err != nil {
				return err
			}
			took := s.awaitReady(t, backed, metav1.ConditionFalse, 30*time.Second)
			t.Logf("member stopped: its %d MemberClusters Ready=False after %s (reason %s)",
				len(backed), took.Round(10*time.Millisecond), s.readyReason(ctx, backed[0]))
			return nil
		}}
	}
	s.change(t, "member m1 stopped: its clusters leave, hub-self stays", stop)

	restart := func() []edit {
		for _, n := range backed {
			delete(s.notReady, n)
		}
		return []edit{func(ctx context.Context) error {
			if err := testFleet.MemberKwokctl(ctx, "m1", "start", "cluster"); err != nil {
				return err
			}
			took := s.awaitReady(t, slices.Clone(backed), metav1.ConditionTrue, 90*time.Second)
			t.Logf("member started: its MemberClusters Ready=True after %s", took.Round(10*time.Millisecond))
			return nil
		}}
	}
	s.change(t, "member m1 started: its clusters come back", restart)
}

func (s *scene) readyReason(ctx context.Context, name string) string {
	mc := &fleetv1alpha1.MemberCluster{}
	if err := s.c.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return err.Error()
	}
	return conditionString(meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady)))
}

// allLosesClusters switches the placement to the All update, under which
// clusters that move between slices are briefly in none, and checks that the
// watcher sees it: the test's own proof that the watcher can fail. The
// placement goes back to RollingUpdate afterwards.
func (s *scene) allLosesClusters(t *testing.T) {
	t.Helper()
	setUpdate := func(typ fleetv1alpha1.DecisionUpdateType) edit {
		return func(ctx context.Context) error {
			p := &fleetv1alpha1.Placement{}
			if err := s.c.Get(ctx, client.ObjectKey{Namespace: testNamespace, Name: placementName}, p); err != nil {
				return err
			}
			before := p.DeepCopy()
			p.Spec.DecisionStrategy.UpdateStrategy.Type = typ
			return s.c.Patch(ctx, p, client.MergeFrom(before))
		}
	}
	s.change(t, "updateStrategy All", func() []edit { return []edit{setUpdate(fleetv1alpha1.AllDecisionUpdate)} })

	what := "under All, cluster000 joins and shifts a cluster out of every slice"
	s.w.SetStay(s.selectedNames())
	if err := s.label(clusterNames("000"), placedLabel, "yes")(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.awaitLayout(t, what, settleTimeout)
	seen := s.w.takeViolations()
	if len(seen) == 0 {
		t.Errorf("%s: the watcher saw no cluster missing; it should have", what)
	} else {
		t.Logf("%s: the watcher saw %d state(s) with clusters missing, e.g. %s", what, len(seen), seen[0])
	}

	s.change(t, "updateStrategy back to RollingUpdate", func() []edit { return []edit{setUpdate(fleetv1alpha1.RollingUpdateDecisionUpdate)} })
}
