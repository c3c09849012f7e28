package rollout

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ticker drives PlanLevel in lockstep ticks. Each tick: terminating units vanish,
// units created on the previous tick become ready and available (unless the test
// says they never will), then the plan is applied. It records every action.
type ticker struct {
	t       *testing.T
	p       Policy
	units   []Unit
	tick    int
	never   func(c Create) bool // a created unit that never becomes ready
	actions []string
	maxSeen int32
	maxLive int32
	minAvl  int32
	// lastBusy is the last tick whose plan asked for anything
	lastBusy int
}

func newTicker(t *testing.T, p Policy, units []Unit) *ticker {
	return &ticker{t: t, p: p, units: units, never: func(Create) bool { return false }, minAvl: 1 << 30}
}

// steadyUnits are n ready units at rev, created in index order.
func steadyUnits(n int32, rev string) []Unit {
	var out []Unit
	for i := range n {
		out = append(out, Unit{Index: i, Revision: rev, Scheduled: true, Ready: true, Available: true, CreatedAt: epoch.Add(time.Duration(i) * time.Second)})
	}
	return out
}

// step runs one tick and reports whether the planner asked for anything.
func (k *ticker) step() bool {
	k.tick++
	now := epoch.Add(time.Duration(k.tick) * time.Minute)
	k.units = slices.DeleteFunc(k.units, func(u Unit) bool { return u.Terminating })
	for i := range k.units {
		u := &k.units[i]
		if !u.Ready && !u.Terminating && u.CreatedAt.Before(now) && !u.Scheduled {
			// created last tick: becomes ready unless marked broken (Scheduled && !Ready)
			u.Scheduled, u.Ready, u.Available, u.ReadySince = true, true, true, now
		}
	}
	plan, err := PlanLevel(k.p, k.units)
	if err != nil {
		k.t.Fatalf("PlanLevel: %v", err)
	}
	for _, d := range plan.Deletes {
		k.units[unitOf(k.t, k.units, d)].Terminating = true
		k.actions = append(k.actions, fmt.Sprintf("delete %d %s", d.Index, d.Reason))
	}
	for _, c := range plan.Creates {
		u := Unit{Index: c.Index, Revision: c.Revision, Surge: c.Surge, CreatedAt: now, Key: fmt.Sprintf("%d@%d", c.Index, k.tick)}
		if k.never(c) {
			u.Scheduled = true // scheduled but never ready
		}
		k.units = append(k.units, u)
		s := fmt.Sprintf("create %d %s", c.Index, c.Revision)
		if c.Surge {
			s += " surge"
		}
		k.actions = append(k.actions, s)
	}
	k.maxSeen = max(k.maxSeen, int32(len(k.units)))
	avl, live := int32(0), int32(0)
	for _, u := range k.units {
		if u.Available && !u.Terminating {
			avl++
		}
		if !u.Terminating {
			live++
		}
	}
	k.minAvl = min(k.minAvl, avl)
	k.maxLive = max(k.maxLive, live)
	if len(plan.Creates)+len(plan.Deletes) == 0 {
		return false
	}
	k.lastBusy = k.tick
	return true
}

// unitOf is the position of the live unit a delete names (units made by the
// tests' own creates carry keys, the starting units none).
func unitOf(t testing.TB, units []Unit, d Delete) int {
	t.Helper()
	at := slices.IndexFunc(units, func(u Unit) bool {
		return !u.Terminating && u.Index == d.Index && u.Key == d.Key
	})
	if at < 0 {
		t.Fatalf("delete %+v names no live unit", d)
	}
	return at
}

// run ticks until nothing moves for two ticks or the limit is hit.
func (k *ticker) run(limit int) {
	idle := 0
	for i := 0; i < limit && idle < 2; i++ {
		if k.step() {
			idle = 0
		} else {
			idle++
		}
	}
}

func (k *ticker) indices() []string {
	var out []string
	for _, u := range k.units {
		out = append(out, fmt.Sprintf("%d@%s", u.Index, u.Revision))
	}
	slices.Sort(out)
	return out
}

func assertActions(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("actions:\n got  %s\n want %s", strings.Join(got, " | "), strings.Join(want, " | "))
	}
}

func TestResolveFenceposts_RoundsSurgeUpAndUnavailableDown(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		surge, unavailable     intstr.IntOrString
		replicas               int32
		wantSurge, wantUnavail int32
	}{
		{"39% of 10 is 3.9: surge 4, unavailable 3", intstr.FromString("39%"), intstr.FromString("39%"), 10, 4, 3},
		{"25% of 10 is 2.5: surge 3, unavailable 2", intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{"one replica, surge 25%: surge rounds up to 1", intstr.FromString("25%"), intstr.FromString("0%"), 1, 1, 0},
		{"one replica, unavailable 25% rounds to 0: falls back to unavailable 1", intstr.FromString("0%"), intstr.FromString("25%"), 1, 0, 1},
		{"both zero: unavailable 1 like Deployment", intstr.FromInt32(0), intstr.FromInt32(0), 5, 0, 1},
		{"zero replicas with percentages still lets a rollout move", intstr.FromString("50%"), intstr.FromString("50%"), 0, 0, 1},
		{"absolute values pass through", intstr.FromInt32(2), intstr.FromInt32(3), 4, 2, 3},
		{"100% each", intstr.FromString("100%"), intstr.FromString("100%"), 7, 7, 7},
		{"1% of 1000 surges 10 and tolerates 10", intstr.FromString("1%"), intstr.FromString("1%"), 1000, 10, 10},
		{"1% of 99 surges 1 and tolerates 0", intstr.FromString("1%"), intstr.FromString("1%"), 99, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp, err := ResolveFenceposts(tc.surge, tc.unavailable, tc.replicas)
			if err != nil {
				t.Fatal(err)
			}
			if fp.MaxSurge != tc.wantSurge || fp.MaxUnavailable != tc.wantUnavail {
				t.Fatalf("got surge %d unavailable %d, want %d %d", fp.MaxSurge, fp.MaxUnavailable, tc.wantSurge, tc.wantUnavail)
			}
		})
	}
}

func TestResolveFenceposts_RejectsMalformedPercent(t *testing.T) {
	if _, err := ResolveFenceposts(intstr.FromString("ten%"), intstr.FromInt32(0), 3); err == nil {
		t.Fatal("want an error for a malformed percentage")
	}
	if _, err := ResolveFenceposts(intstr.FromInt32(-1), intstr.FromInt32(1), 3); err == nil {
		t.Fatal("want an error for a negative surge")
	}
}

func TestResolveUpdateTo_PercentRoundsUpAndClamps(t *testing.T) {
	for _, tc := range []struct {
		updateTo intstr.IntOrString
		replicas int32
		want     int32
	}{
		{intstr.FromInt32(1), 3, 1},
		{intstr.FromString("100%"), 3, 3},
		{intstr.FromString("50%"), 3, 2},
		{intstr.FromString("1%"), 3, 1},
		{intstr.FromInt32(5), 3, 3},
		{intstr.FromString("0%"), 3, 0},
	} {
		got, err := ResolveUpdateTo(tc.updateTo, tc.replicas)
		if err != nil || got != tc.want {
			t.Errorf("ResolveUpdateTo(%s, %d) = %d, %v; want %d", tc.updateTo.String(), tc.replicas, got, err, tc.want)
		}
	}
}

// PodClique maxSurge: replicas=3, maxSurge=1, maxUnavailable=0.
func TestRollingUpdate_PodCliqueSurgeSequenceFromSeed(t *testing.T) {
	p := Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0),
		UpdateRevision: "new", CurrentRevision: "old", UpdateOrder: OldestFirst, ScaleIn: OutdatedFirst}
	k := newTicker(t, p, steadyUnits(3, "old"))
	k.run(50)
	assertActions(t, k.actions, []string{
		"create 3 new surge",
		"delete 0 update", "create 0 new",
		"delete 1 update", "create 1 new",
		"delete 2 update", "create 2 new",
		"delete 3 surge-cleanup",
	})
	assertIndices(t, k, "0@new", "1@new", "2@new")
	if k.maxSeen > 4 || k.minAvl < 3 {
		t.Fatalf("peak units %d (want <= 4), min available %d (want >= 3)", k.maxSeen, k.minAvl)
	}
}

// Both scaling-group examples (minAvailable 3 and 2): the replica
// sequence is the same; only the gang of each replica differs (see gang.TestInBaseGang_SurgeReplicasAreAlwaysScaled).
func TestRollingUpdate_ScalingGroupSurgeSequenceFromSeed(t *testing.T) {
	p := Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0),
		UpdateRevision: "new", CurrentRevision: "old", UpdateOrder: LowestIndexFirst, ScaleIn: HighestIndexFirst}
	units := steadyUnits(3, "old")
	// creation order must not matter for groups: make replica 2 the oldest
	units[2].CreatedAt = epoch.Add(-time.Hour)
	k := newTicker(t, p, units)
	k.run(50)
	assertActions(t, k.actions, []string{
		"create 3 new surge",
		"delete 0 update", "create 0 new",
		"delete 1 update", "create 1 new",
		"delete 2 update", "create 2 new",
		"delete 3 surge-cleanup",
	})
}

// The default: maxUnavailable=1, maxSurge=0 updates one pod at a time,
// oldest first, delete before create.
func TestRollingUpdate_DefaultIsOneAtATimeOldestFirst(t *testing.T) {
	p := Policy{Replicas: 3, UpdateRevision: "new", CurrentRevision: "old"}
	units := steadyUnits(3, "old")
	units[1].CreatedAt = epoch.Add(-time.Hour) // pod 1 is the oldest
	k := newTicker(t, p, units)
	k.run(50)
	assertActions(t, k.actions, []string{
		"delete 1 update", "create 1 new",
		"delete 0 update", "create 0 new",
		"delete 2 update", "create 2 new",
	})
	if k.minAvl < 2 {
		t.Fatalf("min available %d, want >= 2", k.minAvl)
	}
}

func TestRollingUpdate_SurgeAndUnavailableTogether(t *testing.T) {
	p := Policy{Replicas: 4, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(1), UpdateRevision: "new", CurrentRevision: "old"}
	k := newTicker(t, p, steadyUnits(4, "old"))
	k.run(50)
	assertActions(t, k.actions, []string{
		"delete 0 update", "create 4 new surge",
		"delete 1 update", "create 0 new",
		"delete 2 update", "create 1 new",
		"delete 3 update", "create 2 new",
		// the last hole is refilled while the surge goes: 0,1,2 keep 3 available
		"delete 4 surge-cleanup", "create 3 new",
	})
	assertIndices(t, k, "0@new", "1@new", "2@new", "3@new")
}

func TestRollingUpdate_NeverDeletesBelowMinAvailable(t *testing.T) {
	p := Policy{Replicas: 5, MaxUnavailable: intstr.FromInt32(2), UpdateRevision: "new", CurrentRevision: "old"}
	k := newTicker(t, p, steadyUnits(5, "old"))
	// every replacement of index 0 or 1 never becomes ready
	k.never = func(c Create) bool { return c.Index <= 1 }
	k.run(30)
	if k.minAvl < 3 {
		t.Fatalf("min available %d, want >= 3", k.minAvl)
	}
	assertActions(t, k.actions, []string{"delete 0 update", "delete 1 update", "create 0 new", "create 1 new"})
}

func TestRollingUpdate_ReplacesUnavailableOldUnitsWithoutSpendingBudget(t *testing.T) {
	p := Policy{Replicas: 4, MaxUnavailable: intstr.FromInt32(1), UpdateRevision: "new", CurrentRevision: "old"}
	units := steadyUnits(4, "old")
	units[2].Ready, units[2].Available = false, false
	units[3].Ready, units[3].Available = false, false
	plan, err := PlanLevel(p, units)
	if err != nil {
		t.Fatal(err)
	}
	// 2 available < floor 3 already: only the broken old units go, for free.
	want := []Delete{{Index: 2, Reason: ReasonReplaceFailed}, {Index: 3, Reason: ReasonReplaceFailed}}
	if !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
}

// An R=1 level whose first revision never became ready must still move to a
// newer revision (a known Deployment/StatefulSet trap).
func TestRollingUpdate_SingleReplicaNeverReadyIsReplaceable(t *testing.T) {
	for _, tc := range []struct {
		name               string
		surge, unavailable intstr.IntOrString
	}{
		{"surge 25% unavailable 0%", intstr.FromString("25%"), intstr.FromString("0%")},
		{"surge 0% unavailable 25%", intstr.FromString("0%"), intstr.FromString("25%")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Replicas: 1, MaxSurge: tc.surge, MaxUnavailable: tc.unavailable, UpdateRevision: "v2", CurrentRevision: "v1"}
			units := []Unit{{Index: 0, Revision: "v1", Scheduled: true, CreatedAt: epoch}}
			k := newTicker(t, p, units)
			k.run(20)
			assertIndices(t, k, "0@v2")
		})
	}
}

func TestRollingUpdate_PartitionKeepsLowIndicesOnOldRevision(t *testing.T) {
	for _, tc := range []struct {
		partition int32
		want      []string
	}{
		{0, []string{"0@new", "1@new", "2@new"}},
		{2, []string{"0@old", "1@old", "2@new"}},
		{3, []string{"0@old", "1@old", "2@old"}}, // partition == replicas: nothing moves
		{5, []string{"0@old", "1@old", "2@old"}},
	} {
		t.Run(fmt.Sprint("partition ", tc.partition), func(t *testing.T) {
			p := Policy{Replicas: 3, Partition: tc.partition, UpdateRevision: "new", CurrentRevision: "old"}
			k := newTicker(t, p, steadyUnits(3, "old"))
			k.run(30)
			assertIndices(t, k, tc.want...)
		})
	}
}

func TestRollingUpdate_PartitionRecreatesLowIndicesAtCurrentRevision(t *testing.T) {
	p := Policy{Replicas: 3, Partition: 3, UpdateRevision: "new", CurrentRevision: "old"}
	units := steadyUnits(3, "old")[1:] // pod 0 was deleted by hand
	plan, _ := PlanLevel(p, units)
	if want := []Create{{Index: 0, Revision: "old"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
}

func TestRollingUpdate_MaxUpdatedCapsTheUpdateAndRecreatesAtOldRevision(t *testing.T) {
	one := int32(1)
	p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0), MaxUpdated: &one, UpdateRevision: "new", CurrentRevision: "old"}
	k := newTicker(t, p, steadyUnits(3, "old"))
	k.run(30)
	assertActions(t, k.actions, []string{"create 3 new surge", "delete 0 update", "create 0 new", "delete 3 surge-cleanup"})
	// pod 2 deleted by hand while the cap is reached comes back old
	k.units = slices.DeleteFunc(k.units, func(u Unit) bool { return u.Index == 2 })
	plan, _ := PlanLevel(p, k.units)
	if want := []Create{{Index: 2, Revision: "old"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
	// an updated pod deleted by hand comes back new
	k.units = slices.DeleteFunc(k.units, func(u Unit) bool { return u.Index == 0 })
	plan, _ = PlanLevel(p, k.units)
	if want := []Create{{Index: 0, Revision: "new"}, {Index: 2, Revision: "old"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
}

// A capped level with an index still terminating (emptied for the update) and a
// lower-claim empty index (a scale-out): the terminating index keeps the cap's
// room, so the new index is filled on the old revision and the replacement under
// way comes back new once its predecessor is gone.
func TestRollingUpdate_ATerminatingIndexKeepsItsClaimOnTheCap(t *testing.T) {
	one := int32(1)
	p := Policy{Replicas: 3, MaxUpdated: &one, UpdateRevision: "new", CurrentRevision: "old"}
	units := steadyUnits(2, "old")
	units[0].Terminating = true
	plan, _ := PlanLevel(p, units)
	if want := []Create{{Index: 2, Revision: "old"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
	units = append(units[1:], Unit{Index: 2, Revision: "old", Available: true, Ready: true, Scheduled: true})
	plan, _ = PlanLevel(p, units)
	if want := []Create{{Index: 0, Revision: "new"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
}

func TestRollingUpdate_NewRevisionMidRolloutRetargets(t *testing.T) {
	p := Policy{Replicas: 3, UpdateRevision: "v2", CurrentRevision: "v1"}
	k := newTicker(t, p, steadyUnits(3, "v1"))
	k.step()
	k.step() // pod 0 recreated at v2
	k.p.UpdateRevision = "v3"
	k.run(30)
	assertIndices(t, k, "0@v3", "1@v3", "2@v3")
}

func TestRollingUpdate_ReplicasChangeAloneStartsNoRollout(t *testing.T) {
	for _, replicas := range []int32{1, 5} {
		p := Policy{Replicas: replicas, MaxSurge: intstr.FromInt32(1), UpdateRevision: "v1", CurrentRevision: "v1"}
		k := newTicker(t, p, steadyUnits(3, "v1"))
		k.run(30)
		for _, a := range k.actions {
			if strings.Contains(a, "update") || strings.Contains(a, "surge") {
				t.Fatalf("replicas %d: unexpected rollout action %q in %v", replicas, a, k.actions)
			}
		}
		if int32(len(k.units)) != replicas {
			t.Fatalf("replicas %d: ended with %v", replicas, k.indices())
		}
	}
}

func TestRollingUpdate_ScaleInRemovesHighestIndicesAndKeepsNoHoles(t *testing.T) {
	p := Policy{Replicas: 2, UpdateRevision: "v1", ScaleIn: HighestIndexFirst, UpdateOrder: LowestIndexFirst}
	plan, _ := PlanLevel(p, steadyUnits(5, "v1"))
	want := []Delete{{Index: 2, Reason: ReasonScaleIn}, {Index: 3, Reason: ReasonScaleIn}, {Index: 4, Reason: ReasonScaleIn}}
	if !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
}

func TestRollingUpdate_CompactsHolesLeftByAnEarlierScaleIn(t *testing.T) {
	p := Policy{Replicas: 3, UpdateRevision: "v1"}
	units := steadyUnits(5, "v1")[2:] // {2,3,4}
	k := newTicker(t, p, units)
	k.run(30)
	assertIndices(t, k, "0@v1", "1@v1", "2@v1")
}

// OnDelete never deletes for an update.
func TestOnDelete_NeverDeletesForAnUpdate(t *testing.T) {
	p := Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: 8, UpdateRevision: "new", CurrentRevision: "old"}
	k := newTicker(t, p, steadyUnits(8, "old"))
	k.run(10)
	assertActions(t, k.actions, nil)
	plan, _ := PlanLevel(p, k.units)
	if plan.Status.UpdatedReplicas != 0 || plan.Status.Complete {
		t.Fatalf("status %+v: want 0 updated, not complete", plan.Status)
	}
}

func TestOnDelete_RecreatesADeletedPodAtTheNewRevision(t *testing.T) {
	p := Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: 8, UpdateRevision: "new", CurrentRevision: "old"}
	units := slices.DeleteFunc(steadyUnits(8, "old"), func(u Unit) bool { return u.Index == 5 })
	k := newTicker(t, p, units)
	k.run(10)
	assertActions(t, k.actions, []string{"create 5 new"})
	plan, _ := PlanLevel(p, k.units)
	if plan.Status.UpdatedReplicas != 1 {
		t.Fatalf("updatedReplicas %d, want 1", plan.Status.UpdatedReplicas)
	}
}

func TestOnDelete_ScaleInRemovesOutdatedPodsFirst(t *testing.T) {
	units := steadyUnits(5, "new")
	units[1].Revision, units[3].Revision = "old", "old"
	p := Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: 3, UpdateRevision: "new", ScaleIn: OutdatedFirst}
	plan, _ := PlanLevel(p, units)
	if want := []Delete{{Index: 1, Reason: ReasonScaleIn}, {Index: 3, Reason: ReasonScaleIn}}; !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
	// the survivors keep their indices: no churn to close the hole
	k := newTicker(t, p, units)
	k.run(10)
	assertIndices(t, k, "0@new", "2@new", "4@new")
	// the unit left at index 4 is a member, not surge: all three are updated
	after, _ := PlanLevel(p, k.units)
	if s := after.Status; s.UpdatedReplicas != 3 || s.SurgeReplicas != 0 || !s.Complete || len(after.Creates)+len(after.Deletes) != 0 {
		t.Fatalf("after the scale-in: %+v, creates %v, deletes %v", s, after.Creates, after.Deletes)
	}
}

func TestOnDelete_ScalingGroupScaleInRemovesHighestIndexFirst(t *testing.T) {
	units := steadyUnits(5, "new")
	units[1].Revision = "old"
	p := Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: 3, UpdateRevision: "new", ScaleIn: HighestIndexFirst}
	plan, _ := PlanLevel(p, units)
	if want := []Delete{{Index: 3, Reason: ReasonScaleIn}, {Index: 4, Reason: ReasonScaleIn}}; !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
}

func TestPlanLevel_TerminatingUnitsCountTowardSurgeAndBlockTheirIndex(t *testing.T) {
	units := steadyUnits(3, "old")
	units[0].Terminating = true
	p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0), UpdateRevision: "new", CurrentRevision: "old"}
	plan, _ := PlanLevel(p, units)
	// total is 3 of 4: one surge may be created, at index 3 (index 0 is still held)
	if want := []Create{{Index: 3, Revision: "new", Surge: true}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
}

// Under TerminationStarted a terminating unit neither holds its index nor
// counts toward replicas + maxSurge: its replacement starts at once. Under
// TerminationComplete (the test above) it waits.
func TestPlanLevel_ReplaceWhileTerminatingStartsTheReplacementAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		maxSurge, maxUnavail int32
		want                 []Create
	}{
		{"maxSurge 0, maxUnavailable 1", 0, 1, []Create{{Index: 0, Revision: "new"}}},
		{"maxSurge 1, maxUnavailable 0", 1, 0, []Create{{Index: 0, Revision: "new"}, {Index: 3, Revision: "new", Surge: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units := steadyUnits(3, "old")
			units[0].Terminating = true
			p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(tc.maxSurge), MaxUnavailable: intstr.FromInt32(tc.maxUnavail),
				UpdateRevision: "new", CurrentRevision: "old", ReplaceWhileTerminating: true}
			plan, err := PlanLevel(p, units)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(plan.Creates, tc.want) {
				t.Fatalf("creates %v, want %v", plan.Creates, tc.want)
			}
			p.ReplaceWhileTerminating = false
			plan, _ = PlanLevel(p, units)
			if slices.ContainsFunc(plan.Creates, func(c Create) bool { return c.Index == 0 }) {
				t.Fatalf("TerminationComplete refilled index 0 while its pod terminates: %v", plan.Creates)
			}
		})
	}
}

// A sequential rollout under TerminationStarted never waits for a deletion to
// finish: with deletions that take forever, it still completes, one wave per
// unit, and never has more than replicas + maxSurge live units.
func TestPlanLevel_ReplaceWhileTerminatingNeverWaitsForDeletions(t *testing.T) {
	for _, surge := range []int32{0, 1} {
		p := Policy{Replicas: 4, MaxSurge: intstr.FromInt32(surge), MaxUnavailable: intstr.FromInt32(1 - surge),
			UpdateRevision: "new", CurrentRevision: "old", ReplaceWhileTerminating: true}
		units := steadyUnits(4, "old")
		for wave := 0; ; wave++ {
			if wave > 12 {
				t.Fatalf("maxSurge %d: not done after 12 waves: %+v", surge, units)
			}
			plan, err := PlanLevel(p, units)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Status.Complete {
				break
			}
			for _, d := range plan.Deletes {
				u := &units[unitOf(t, units, d)]
				u.Terminating, u.Available, u.Ready = true, false, false
			}
			live := 0
			for _, c := range plan.Creates {
				units = append(units, Unit{Index: c.Index, Revision: c.Revision, Surge: c.Surge, Scheduled: true, Key: fmt.Sprintf("%d@%d", c.Index, wave)})
			}
			for i := range units {
				if !units[i].Terminating {
					live++
					// what was created becomes available by the next wave; terminating units never go
					units[i].Ready, units[i].Available = true, true
				}
			}
			if live > int(4+surge) {
				t.Fatalf("maxSurge %d, wave %d: %d live units, more than %d", surge, wave, live, 4+surge)
			}
		}
	}
}

func TestPlanLevel_OutputDoesNotDependOnInputOrder(t *testing.T) {
	units := steadyUnits(6, "old")
	units[4].Available = false
	p := Policy{Replicas: 4, MaxSurge: intstr.FromInt32(2), MaxUnavailable: intstr.FromInt32(1), UpdateRevision: "new", CurrentRevision: "old"}
	want, _ := PlanLevel(p, slices.Clone(units))
	slices.Reverse(units)
	got, _ := PlanLevel(p, units)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("plan depends on input order:\n%v\n%v", got, want)
	}
}

func TestPodAvailable_HonoursMinReadySeconds(t *testing.T) {
	if PodAvailable(true, epoch, 10, epoch.Add(9*time.Second)) {
		t.Fatal("ready 9s with minReadySeconds 10 is not available")
	}
	if !PodAvailable(true, epoch, 10, epoch.Add(10*time.Second)) {
		t.Fatal("ready 10s with minReadySeconds 10 is available")
	}
	if PodAvailable(false, epoch, 0, epoch) || !PodAvailable(true, time.Time{}, 0, epoch) {
		t.Fatal("readiness decides when minReadySeconds is 0")
	}
}

func assertIndices(t *testing.T, k *ticker, want ...string) {
	t.Helper()
	if got := k.indices(); !slices.Equal(got, want) {
		t.Fatalf("units %v, want %v (actions %v)", got, want, k.actions)
	}
}

// A group replica made with 2 workers per leader stays available while the spec
// moves to 3: it is judged by its own cliques' minimum, not the new one.
func TestGroupUnits_JudgesAReplicaByTheShapeItWasMadeWith(t *testing.T) {
	ready := func(n int) []Unit {
		var out []Unit
		for i := range n {
			out = append(out, Unit{Index: int32(i), Scheduled: true, Ready: true, Available: true})
		}
		return out
	}
	members := []MemberMinimum{{Clique: "leader", MinAvailable: 1}, {Clique: "worker", MinAvailable: 3}}
	old := GroupReplicaObservation{Index: 0, Revision: "old", Cliques: []CliqueObservation{
		{Name: "leader", Pods: ready(1), MinAvailable: 1}, {Name: "worker", Pods: ready(2), MinAvailable: 2}}}
	if u := GroupUnits(members, []GroupReplicaObservation{old})[0]; !u.Available {
		t.Fatal("an old-shape group replica with all its pods available must count as available")
	}
	old.Cliques[1].MinAvailable = 0 // unknown: fall back to the spec's minimum
	if u := GroupUnits(members, []GroupReplicaObservation{old})[0]; u.Available {
		t.Fatal("without its own minimum the replica is judged by the spec")
	}
}

// A huge maxSurge (a child spec edited by hand, say) costs no more memory than
// the units observed: the planner must not size anything by the limit.
func TestPlanLevel_AHugeMaxSurgeAllocatesByTheUnitsNotTheLimit(t *testing.T) {
	p := Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: 3, MaxSurge: intstr.FromInt32(2_000_000_000), MaxUnavailable: intstr.FromInt32(0),
		UpdateRevision: "new", CurrentRevision: "old"}
	units := steadyUnits(3, "old")
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	before := stats.TotalAlloc
	plan, err := PlanLevel(p, units)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&stats)
	if grew := stats.TotalAlloc - before; grew > 1<<20 {
		t.Fatalf("one plan of 3 units allocated %d bytes", grew)
	}
	if len(plan.Creates) != 3 {
		t.Fatalf("creates %+v, want a surge unit for each of the 3 outdated units", plan.Creates)
	}
}

// The debug line of a plan carries what it was made from, so that a
// surprising plan seen in a log can be replayed.
func TestInputs_NameThePolicyAndEachUnitsState(t *testing.T) {
	p := Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: 2, MaxSurge: intstr.FromInt(1), MaxUnavailable: intstr.FromInt(0),
		MaxUpdated: ptr.To[int32](1), UpdateRevision: "new", CurrentRevision: "old"}
	got := Inputs(p, []Unit{
		{Index: 0, Revision: "old", Terminating: true},
		{Index: 2, Revision: "new", Surge: true, Scheduled: true, Ready: true, Available: true},
	})
	want := []any{
		"policy", "RollingUpdate replicas=2 maxSurge=1 maxUnavailable=0 maxUpdated=1 partition=0 update=new current=old replaceWhileTerminating=false surgeAtReplacedIndex=false",
		"units", []string{"0@old:t", "2@new:sra+"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Inputs = %#v, want %#v", got, want)
	}
}

// The chaos suite's node NotReady fault: both old group replicas failed and
// were replaced while the surge replica was starting. The surge replica is the
// capacity on its way; it stays until the refills are available, then goes.
func TestPlanLevel_ASurgeUnitOnItsWayStaysWhileTheLevelIsShort(t *testing.T) {
	p := Policy{Replicas: 2, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0), UpdateRevision: "new", CurrentRevision: "old",
		UpdateOrder: LowestIndexFirst, ScaleIn: HighestIndexFirst}
	surge := Unit{Index: 2, Revision: "new", Surge: true, Scheduled: true}
	plan, _ := PlanLevel(p, []Unit{{Index: 0, Revision: "old", Terminating: true}, {Index: 1, Revision: "old", Terminating: true}, surge})
	if len(plan.Deletes) != 0 {
		t.Fatalf("deletes %v while nothing is available, want none", plan.Deletes)
	}
	// the refills come up: now the surge unit is beyond what the level needs
	ready := Unit{Revision: "new", Scheduled: true, Ready: true, Available: true}
	r0, r1 := ready, ready
	r0.Index, r1.Index = 0, 1
	plan, _ = PlanLevel(p, []Unit{r0, r1, surge})
	if want := []Delete{{Index: 2, Reason: ReasonSurgeCleanup}}; !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
}

// With surgePlacement ReplacedIndex the surge goes beside the outdated unit
// it replaces, at its index, and that unit is deleted once its successor is
// available: a rollout of n units takes n waves with maxSurge 1, as a
// Deployment's does, and never makes a unit to remove at the end. Without it
// (AboveReplicas), or under TerminationComplete, which never runs two live
// units at one index, the surge unit takes an index of its own.
func TestPlanLevel_SurgeAtReplacedIndexGoesBesideTheOutdatedUnit(t *testing.T) {
	p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0),
		UpdateRevision: "new", CurrentRevision: "old", ReplaceWhileTerminating: true, SurgeAtReplacedIndex: true}
	k := newTicker(t, p, steadyUnits(3, "old"))
	k.run(50)
	assertActions(t, k.actions, []string{
		"create 0 new",
		"delete 0 superseded", "create 1 new",
		"delete 1 superseded", "create 2 new",
		"delete 2 superseded",
	})
	if k.minAvl < 3 || k.maxLive > 4 {
		t.Fatalf("available fell to %d or live units rose to %d (want >= 3 and <= 4)", k.minAvl, k.maxLive)
	}
	// one tick a wave: the next surge unit starts in the plan that deletes
	// the unit its predecessor superseded
	if k.lastBusy != 4 {
		t.Fatalf("the rollout's last action came at tick %d, want 4: %v", k.lastBusy, k.actions)
	}

	for _, q := range []Policy{
		{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0), UpdateRevision: "new", CurrentRevision: "old", ReplaceWhileTerminating: true},
		{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0), UpdateRevision: "new", CurrentRevision: "old", SurgeAtReplacedIndex: true},
	} {
		k = newTicker(t, q, steadyUnits(3, "old"))
		k.run(50)
		if k.actions[0] != "create 3 new surge" {
			t.Fatalf("%+v: the surge unit should take index 3: %v", q, k.actions)
		}
	}
}

// A successor that never becomes available holds its outdated unit in place:
// the index keeps serving, and the surge stays spent on it.
func TestPlanLevel_OutdatedUnitStaysUntilItsSuccessorIsAvailable(t *testing.T) {
	p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0),
		UpdateRevision: "new", CurrentRevision: "old", ReplaceWhileTerminating: true, SurgeAtReplacedIndex: true}
	k := newTicker(t, p, steadyUnits(3, "old"))
	k.never = func(c Create) bool { return c.Index == 0 }
	k.run(50)
	assertActions(t, k.actions, []string{"create 0 new"})
	if got := k.indices(); !slices.Equal(got, []string{"0@new", "0@old", "1@old", "2@old"}) {
		t.Fatalf("units %v", got)
	}
}

// An outdated unit beside its successor is deleted as superseded once the
// successor is available, and named by its key; one that is unavailable goes
// at once, for free.
func TestPlanLevel_DeletesTheOutdatedUnitBesideItsSuccessorByKey(t *testing.T) {
	p := Policy{Replicas: 2, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0),
		UpdateRevision: "new", CurrentRevision: "old", ReplaceWhileTerminating: true, SurgeAtReplacedIndex: true}
	units := []Unit{
		{Index: 0, Revision: "old", Ready: true, Available: true, Key: "a-0"},
		{Index: 0, Revision: "new", Ready: true, Available: true, Key: "a-0-x", CreatedAt: epoch},
		{Index: 1, Revision: "old", Ready: true, Available: true, Key: "a-1"},
	}
	plan, err := PlanLevel(p, units)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Delete{{Index: 0, Reason: ReasonSuperseded, Key: "a-0"}}; !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
	if s := plan.Status; s.Replicas != 3 || s.UpdatedReplicas != 1 || s.Complete {
		t.Fatalf("status %+v: want 3 live, 1 updated, not complete", s)
	}
	units[1].Ready, units[1].Available = false, false
	units[0].Ready, units[0].Available = false, false
	plan, _ = PlanLevel(p, units)
	if want := []Delete{{Index: 0, Reason: ReasonSuperseded, Key: "a-0"}}; !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
}
