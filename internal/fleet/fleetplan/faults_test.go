package fleetplan_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// reweighted is the rehearsal of docs/plan.md on clusters a, b and c: 10
// pods at weights 2:2:3 (3, 3 and 4) moved to 1:1:3 (2, 2 and 6), with
// memberLostTimeoutSeconds 60, c lost from wave 2 on.
func reweighted() fleetplan.Input {
	to := web("web:1", 10, 1, 1, 3)
	timeout := int32(60)
	to.Spec.MemberLostTimeoutSeconds = &timeout
	return fleetplan.Input{From: web("web:1", 10, 2, 2, 3), Workload: to, Clusters: clusters("a", "b", "c"),
		Lose: map[string]int{"c": 2}, Kind: member.Deployment, Startup: 20 * time.Second}
}

func text(t *testing.T, in fleetplan.Input) (fleetplan.Result, string) {
	t.Helper()
	res, err := fleetplan.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := fleetplan.WriteText(&b, in, res); err != nil {
		t.Fatal(err)
	}
	return res, b.String()
}

func compareText(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("output differs; got:\n%s\nwant:\n%s", got, want)
	}
}

// A cluster lost mid-change: c had grown to 5 of its new 6 when the hub
// lost it. For memberLostTimeoutSeconds (three waves of 20 s) it is stale,
// charged the unavailable pod it last reported, and keeps its share: a and b,
// at their new shares, wait. Then it is lost and written off: its share is
// divided over a and b (5 each), held back from them until they have grown
// into it, and it is forgotten. The fleet columns count a and b only, against
// the floor less c's share (8 − 5).
func TestWriteText_ALostClusterIsChargedThenWrittenOffThenForgotten(t *testing.T) {
	_, out := text(t, reweighted())
	compareText(t, out, `FederatedWorkload web: 10 pods of a Deployment over 3 clusters, rolled under one budget: maxUnavailable 2, maxSurge 1; each wave is 20s (units available 20s after they start)
  shares: a 3 → 2, b 3 → 2, c 4 → 6
  lost: c is unreachable to the hub from wave 2 on (--lose c@2); memberLostTimeoutSeconds 1m0s

WAVE  TIME   AVAILABLE  UNITS  A           B           C
1     0s     8/8        9/11   2/2 paused  2/2 paused  5/5 paused
2     20s    4/3        4/11   2/2 paused  2/2 paused  5/5 stale, charged 1 down 0 surge
3     40s    4/3        4/11   2/2 paused  2/2 paused  5/5 stale, charged 1 down 0 surge
4     1m0s   4/3        4/11   2/2 paused  2/2 paused  5/5 stale, charged 1 down 0 surge
5     1m20s  4/3        10/11  5/5 paused  5/5 paused  5/5 lost, 5 written off

  AVAILABLE: fewest available units in the wave / the floor; UNITS: most units / the ceiling.
  Per cluster: updated/share units at the end of the wave, then its grant.
  Unreachable: the hub reads nothing from the cluster and writes nothing to it. It is stale, charged what
  its last grant lets it do, until memberLostTimeoutSeconds pass; then lost: written off, its share held
  back from the others until they have grown into it, then forgotten. What it runs is out of the hub's
  hands: AVAILABLE and UNITS count the clusters the hub reaches, against the floor less the shares it
  still holds for the clusters it cannot reach.

Result: Complete after 5 waves (1m40s); no unit changes revision, the shares move.
  c: unreachable from wave 2, holding a share of 5; lost at wave 5 and written off, its share divided over the others (a 5, b 5); forgotten at the last round, once they had grown into it. The 5 pods it runs stay there, out of the hub's reach.
`)
}

// The lost cluster is fed to the hub's round as the hub's own controller
// feeds it one: from its wave on its MemberCluster is not Ready (reason
// Unreachable, since that round's clock), the placement no longer holds it,
// no read of it reaches the round and no write is made to it; the status
// names it stale, then unreachable, then no more.
func TestRun_ALostClusterReachesTheRoundAsTheHubsControllerFeedsIt(t *testing.T) {
	in := reweighted()
	var since time.Time
	var progressing []string
	in.OnRound = func(rd fleetplan.Round) {
		if rd.Wave == 0 {
			return
		}
		p := meta.FindStatusCondition(rd.Out.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadProgressing))
		progressing = append(progressing, p.Message)
		var ready *metav1.Condition
		for i := range rd.In.MemberClusters {
			if rd.In.MemberClusters[i].Name == "c" {
				ready = meta.FindStatusCondition(rd.In.MemberClusters[i].Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
			}
		}
		_, read := rd.In.Members["c"]
		placed := slices.Contains(rd.In.Placed, "c")
		if rd.Wave < 2 {
			if ready.Status != metav1.ConditionTrue || !read || !placed || len(rd.Received["c"]) == 0 {
				t.Errorf("wave %d: c not reached before its loss: Ready %s, read %t, placed %t, %d requests", rd.Wave, ready.Status, read, placed, len(rd.Received["c"]))
			}
			return
		}
		if rd.Wave == 2 {
			since = rd.In.Now
		}
		if ready.Status != metav1.ConditionFalse || ready.Reason != string(fleetv1alpha1.MemberClusterReasonUnreachable) || !ready.LastTransitionTime.Time.Equal(since) {
			t.Errorf("wave %d: c's Ready condition %+v; want False, Unreachable, since %s", rd.Wave, ready, since)
		}
		if read || placed || len(rd.Received["c"]) > 0 || len(rd.Failed) > 0 || !slices.Equal(rd.Unreachable, []string{"c"}) {
			t.Errorf("wave %d: c read %t, placed %t, %d requests, %d failed writes, unreachable %v", rd.Wave, read, placed,
				len(rd.Received["c"]), len(rd.Failed), rd.Unreachable)
		}
	}
	res, err := fleetplan.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"status stale", "status stale", "status stale", "unreachable", ""}
	if len(progressing) != len(want)+1 {
		t.Fatalf("%d rounds on the change, want %d: %q", len(progressing), len(want)+1, progressing)
	}
	for i, w := range want {
		if has := strings.Contains(progressing[i+1], "cluster c: "+w); w != "" && !has || w == "" && strings.Contains(progressing[i+1], "cluster c") {
			t.Errorf("wave %d: Progressing %q, want c %q", i+2, progressing[i+1], w)
		}
	}
	lost := fleetplan.LostCluster{Cluster: "c", From: 2, Lost: 5, Forgotten: 6, Share: 5, Runs: 5}
	if !res.Done || len(res.Lost) != 1 || res.Lost[0] != lost || len(res.Status.Clusters) != 2 {
		t.Errorf("done %t, lost %+v (want %+v), status clusters %+v", res.Done, res.Lost, lost, res.Status.Clusters)
	}
}

// A cluster lost before its rollout: it keeps its share and its charge for
// memberLostTimeoutSeconds (the default five minutes here: fifteen waves),
// while the others wait; then the others take its share and roll out.
func TestRun_ALostClusterHoldsTheRolloutUntilItsTimeout(t *testing.T) {
	in := fleetplan.Input{From: web("web:1", 10, 2, 3), Workload: web("web:2", 10, 2, 3), Clusters: clusters("a", "b"),
		Lose: map[string]int{"a": 2}}
	res := run(t, in)
	want := fleetplan.LostCluster{Cluster: "a", From: 2, Lost: 2 + 300, Share: 4}
	if got := res.Lost[0]; got.From != want.From || got.Lost != want.Lost || got.Share != want.Share || got.Forgotten != want.Lost+1 {
		t.Errorf("lost %+v, want from wave 2, lost at %d (300 one-second waves on), forgotten the wave after", got, want.Lost)
	}
	if !res.Done || res.Status.UpdatedReplicas != 10 || len(res.Status.Clusters) != 1 {
		t.Errorf("done %t, status %+v", res.Done, res.Status)
	}
}

// Every cluster lost: the placement holds none, the hub's round cannot be
// planned, and the plan says so (stuck, not complete).
func TestRun_EveryClusterLostLeavesNothingToPlan(t *testing.T) {
	in := fleetplan.Input{From: web("web:1", 10, 2, 3), Workload: web("web:2", 10, 2, 3), Clusters: clusters("a", "b"),
		Lose: map[string]int{"a": 1, "b": 1}, Kind: member.Deployment, Startup: time.Second}
	res, out := text(t, in)
	if res.Done || !strings.HasPrefix(res.Stuck, string(fleetv1alpha1.FederatedWorkloadReasonNoClustersPlaced)) ||
		!strings.Contains(out, "Result: Stuck after 0 waves: the hub cannot plan a round (NoClustersPlaced") ||
		!strings.Contains(out, "  a: unreachable from wave 1, holding a share of 4; the hub planned no round after that.\n") {
		t.Errorf("done %t, stuck %q:\n%s", res.Done, res.Stuck, out)
	}
}

// A loss the rollout never reaches is said to be so.
func TestWriteText_ALossAfterTheEndNeverHappens(t *testing.T) {
	in := reweighted()
	in.Lose = map[string]int{"c": 50}
	_, out := text(t, in)
	if !strings.Contains(out, "  c: never lost: the plan ended before wave 50.\n") || strings.Contains(out, "Unreachable:") {
		t.Errorf("output:\n%s", out)
	}
}

// A member whose status reaches the hub a round late: the hub sees a's
// surge and unavailability free a round later, so b starts a wave later and
// the rollout takes a wave more than on time (4, not 3), within the budget.
func TestWriteText_ALateMemberSlowsTheRolloutWithinTheBudget(t *testing.T) {
	in := fleetplan.Input{From: web("web:1", 6), Workload: web("web:2", 6), Clusters: clusters("a", "b"),
		Kind: member.Deployment, Startup: 20 * time.Second}
	onTime, _ := text(t, in)
	in.Late = map[string]int{"a": 1}
	late, out := text(t, in)
	if len(onTime.Waves) != 3 || len(late.Breaches) > 0 {
		t.Errorf("on time %d waves, late breaches %v", len(onTime.Waves), late.Breaches)
	}
	compareText(t, out, `FederatedWorkload web: 6 pods of a Deployment over 2 clusters, rolled under one budget: maxUnavailable 2, maxSurge 1; each wave is 20s (units available 20s after they start)
  shares: a 3 b 3
  late: a's status reaches the hub 1 round late (--late a=1)

WAVE  TIME  AVAILABLE  UNITS  A                      B
1     0s    4/4        7/7    3/3 surge 1 unavail 2  0/3 held
2     20s   6/4        6/7    3/3 surge 1 unavail 2  0/3 held
3     40s   4/4        6/7    3/3 paused             3/3 surge 0 unavail 2
4     1m0s  5/4        6/7    3/3 paused             3/3 surge 0 unavail 2

  AVAILABLE: fewest available units in the wave / the floor; UNITS: most units / the ceiling.
  Per cluster: updated/share units at the end of the wave, then its grant.

Result: Complete after 4 waves (1m20s); the fewest any rollout could take is 2 (units allowed to update / (maxUnavailable + maxSurge)).
`)
}

// The hub's round reads a late member's status as its controller reported
// it that many rounds before: each generation its object takes is seen
// observed two rounds after the round that first read it (the member acted
// on it at once).
func TestRun_TheRoundReadsALateMembersStatusRoundsLate(t *testing.T) {
	in := fleetplan.Input{From: web("web:1", 6), Workload: web("web:2", 6), Clusters: clusters("a", "b"), Late: map[string]int{"b": 2}}
	// made and observed are, by generation of b's object, the rounds that
	// first read it, and first read it observed.
	made, observed := map[int64]int{}, map[int64]int{}
	n := 0
	in.OnRound = func(rd fleetplan.Round) {
		n++
		obj := rd.In.Members["b"].Object
		if obj == nil {
			return
		}
		if _, ok := made[obj.GetGeneration()]; !ok {
			made[obj.GetGeneration()] = n
		}
		og, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		if _, ok := observed[og]; !ok && og > 0 {
			observed[og] = n
		}
	}
	res := run(t, in)
	if !res.Done || len(observed) < 2 {
		t.Fatalf("done %t, generations observed %v", res.Done, observed)
	}
	for g, at := range observed {
		if at-made[g] != 2 {
			t.Errorf("generation %d: first read at round %d, seen observed at round %d; want 2 rounds later", g, made[g], at)
		}
	}
}

// Late and lost clusters must be clusters of the plan, late by a round at
// least, lost from wave 1 on.
func TestRun_RefusesFaultsOnNoClusterOrNoWave(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   fleetplan.Input
		want string
	}{
		{"late unknown", fleetplan.Input{Late: map[string]int{"x": 1}}, "late cluster x is not one of the clusters"},
		{"late zero", fleetplan.Input{Late: map[string]int{"a": 0}}, "late cluster a: 0 rounds late; want at least 1"},
		{"lost unknown", fleetplan.Input{Lose: map[string]int{"x": 1}}, "lost cluster x is not one of the clusters"},
		{"lost at 0", fleetplan.Input{Lose: map[string]int{"a": 0}}, "lost cluster a: wave 0; waves count from 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.From, in.Workload, in.Clusters, in.Kind, in.Startup = web("web:1", 6), web("web:2", 6), clusters("a", "b"), member.Deployment, time.Second
			if _, err := fleetplan.Run(in); err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// A change of replicas and weights together starts from the shares at rest on
// the current workload (4 and 6) and ends on the new ones (3 and 9), within
// the budgets, the text showing both.
func TestRun_ChangedReplicasAndWeightsMoveFromTheCurrentShares(t *testing.T) {
	in := fleetplan.Input{From: web("web:1", 10, 2, 3), Workload: web("web:1", 12, 1, 3), Clusters: clusters("a", "b"),
		Kind: member.Deployment, Startup: 20 * time.Second}
	res, out := text(t, in)
	from := []fleetplan.Share{{Cluster: "a", Units: 4}, {Cluster: "b", Units: 6}}
	to := []fleetplan.Share{{Cluster: "a", Units: 3}, {Cluster: "b", Units: 9}}
	if !slices.Equal(res.From, from) || !slices.Equal(res.Shares, to) || !strings.Contains(out, "  shares: a 4 → 3, b 6 → 9\n") {
		t.Errorf("shares from %v to %v:\n%s", res.From, res.Shares, out)
	}
	if !res.Done || len(res.Breaches) > 0 || res.Status.Clusters[0].DesiredReplicas != 3 || res.Status.Clusters[1].DesiredReplicas != 9 ||
		res.Status.AvailableReplicas != 12 {
		t.Errorf("done %t, breaches %v, status %+v", res.Done, res.Breaches, res.Status)
	}
}
