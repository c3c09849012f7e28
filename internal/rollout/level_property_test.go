package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// drawLimit draws an int or a percentage.
func drawLimit(t *rapid.T, label string) intstr.IntOrString {
	if rapid.Bool().Draw(t, label+" is percent") {
		return intstr.FromString(fmt.Sprintf("%d%%", rapid.IntRange(0, 100).Draw(t, label+" percent")))
	}
	return intstr.FromInt(rapid.IntRange(0, 4).Draw(t, label))
}

func drawPolicy(t *rapid.T) Policy {
	p := Policy{
		Type:           rapid.SampledFrom([]v1alpha1.UpdateStrategyType{v1alpha1.RollingUpdateStrategyType, v1alpha1.OnDeleteStrategyType}).Draw(t, "type"),
		Replicas:       int32(rapid.IntRange(0, 8).Draw(t, "replicas")),
		MaxUnavailable: drawLimit(t, "maxUnavailable"),
		MaxSurge:       drawLimit(t, "maxSurge"),
		UpdateRevision: "new", CurrentRevision: "old",
		Partition:               int32(rapid.IntRange(0, 3).Draw(t, "partition")) * int32(rapid.IntRange(0, 1).Draw(t, "use partition")),
		UpdateOrder:             rapid.SampledFrom([]UpdateOrder{OldestFirst, LowestIndexFirst}).Draw(t, "order"),
		ScaleIn:                 rapid.SampledFrom([]ScaleInOrder{OutdatedFirst, HighestIndexFirst}).Draw(t, "scaleIn"),
		ReplaceWhileTerminating: rapid.Bool().Draw(t, "replace while terminating"),
		SurgeAtReplacedIndex:    rapid.Bool().Draw(t, "surge at replaced index"),
	}
	if rapid.Bool().Draw(t, "capped") {
		p.MaxUpdated = ptr.To(int32(rapid.IntRange(0, 8).Draw(t, "maxUpdated")))
	}
	return p
}

// drawSharedUnits draws units at indices in [0, 12) with random revisions and
// health; some share an index (a successor beside its outdated unit, or a
// duplicate). Each has its own key.
func drawSharedUnits(t *rapid.T) []Unit {
	return drawUnitsAt(t, rapid.SliceOfN(rapid.Int32Range(0, 11), 0, 14).Draw(t, "indices"))
}

func drawUnitsAt(t *rapid.T, idx []int32) []Unit {
	var units []Unit
	for k, i := range idx {
		ready := rapid.Bool().Draw(t, "ready")
		units = append(units, Unit{
			Index:       i,
			Revision:    rapid.SampledFrom([]string{"old", "mid", "new"}).Draw(t, "revision"),
			Surge:       rapid.Bool().Draw(t, "surge"),
			Scheduled:   true,
			Ready:       ready,
			Available:   ready && rapid.Bool().Draw(t, "available"),
			Terminating: rapid.IntRange(0, 4).Draw(t, "terminating") == 0,
			CreatedAt:   epoch.Add(time.Duration(rapid.IntRange(0, 100).Draw(t, "age")) * time.Second),
			Key:         fmt.Sprintf("u%d", k),
		})
	}
	return units
}

// One plan over arbitrary units never breaks a rule of the level, whatever state
// the level is in.
func TestPlanLevel_EveryPlanKeepsTheLevelInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawPolicy(t)
		units := drawSharedUnits(t)
		plan, err := PlanLevel(p, units)
		if err != nil {
			t.Fatalf("PlanLevel: %v", err)
		}
		fp, _ := ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
		if p.Type == v1alpha1.OnDeleteStrategyType {
			fp.MaxSurge = 0
		}
		// under ReplaceWhileTerminating terminating units hold nothing, nor do
		// the units this plan deletes: their refills may start in the same plan
		deleted := map[string]bool{}
		for _, d := range plan.Deletes {
			deleted[d.Key] = true
		}
		counts := func(u *Unit) bool { return !p.ReplaceWhileTerminating || !u.Terminating && !deleted[u.Key] }
		at := func(i int32) []*Unit {
			var out []*Unit
			for k := range units {
				if units[k].Index == i && counts(&units[k]) {
					out = append(out, &units[k])
				}
			}
			return out
		}
		byKey := func(d Delete) *Unit {
			for k := range units {
				if units[k].Key == d.Key && units[k].Index == d.Index {
					return &units[k]
				}
			}
			return nil
		}
		// creates: free indices, within replicas+maxSurge, surge exactly above replicas
		total := int32(0)
		for k := range units {
			if counts(&units[k]) {
				total++
			}
		}
		if n := int32(len(plan.Creates)); n > 0 && total+n > p.Replicas+fp.MaxSurge {
			t.Fatalf("%d units + %d creates > %d + %d", total, n, p.Replicas, fp.MaxSurge)
		}
		newCreates := int32(0)
		for _, c := range plan.Creates {
			// an occupied index takes only a successor: at a level that places
			// surge at the replaced index (and replaces while terminating),
			// beside its one live unit, outdated and available
			if there := at(c.Index); len(there) > 0 {
				if !p.ReplaceWhileTerminating || !p.SurgeAtReplacedIndex || len(there) > 1 || there[0].Terminating || there[0].Revision == p.UpdateRevision ||
					!there[0].Available || c.Revision != p.UpdateRevision || c.Index >= p.Replicas {
					t.Fatalf("create %+v at occupied index %d: %+v", c, c.Index, there)
				}
			}
			if c.Surge != (c.Index >= p.Replicas) {
				t.Fatalf("create %+v: surge flag must match index >= replicas %d", c, p.Replicas)
			}
			if c.Index < p.Partition && c.Revision != p.CurrentRevision {
				t.Fatalf("create %+v below partition %d not at current revision", c, p.Partition)
			}
			if c.Revision == p.UpdateRevision && c.Index < p.Replicas {
				newCreates++
			}
		}
		// deletes: existing live units, availability floor kept, OnDelete only scales in
		available, lost := int32(0), int32(0)
		for _, u := range units {
			if u.Available && !u.Terminating {
				available++
			}
		}
		for _, d := range plan.Deletes {
			u := byKey(d)
			if u == nil || u.Terminating {
				t.Fatalf("delete of missing or terminating unit %d", d.Index)
			}
			if u.Available {
				lost++
			}
			if d.Reason == ReasonUpdate || d.Reason == ReasonReplaceFailed {
				if p.Type == v1alpha1.OnDeleteStrategyType {
					t.Fatalf("OnDelete deleted unit %d for an update", d.Index)
				}
				// (an unavailable duplicate also goes for free, as surplus)
				if u.Index < p.Partition || u.Index >= p.Replicas || u.Revision == p.UpdateRevision {
					t.Fatalf("update delete of unit %+v (partition %d, replicas %d)", u, p.Partition, p.Replicas)
				}
				if d.Reason == ReasonReplaceFailed && u.Available {
					t.Fatalf("replace-failed of an available unit %d", d.Index)
				}
			}
			// superseded: an outdated unit beside a live unit of the update
			// revision at its index, which is available unless the outdated one is not
			if d.Reason == ReasonSuperseded {
				succ := slices.ContainsFunc(at(d.Index), func(o *Unit) bool {
					return o != u && !o.Terminating && o.Revision == p.UpdateRevision && (o.Available || !u.Available)
				})
				if p.Type == v1alpha1.OnDeleteStrategyType || u.Revision == p.UpdateRevision || !succ {
					t.Fatalf("superseded delete of %+v beside %v", *u, at(d.Index))
				}
			}
		}
		if lost > 0 && available-lost < p.Replicas-fp.MaxUnavailable {
			t.Fatalf("deleting %d available of %d goes below %d - %d", lost, available, p.Replicas, fp.MaxUnavailable)
		}
		// the cap: units at the new revision below replicas never exceed MaxUpdated
		if p.MaxUpdated != nil && newCreates > 0 {
			if plan.Status.UpdatedReplicas+newCreates > max(*p.MaxUpdated, plan.Status.UpdatedReplicas) {
				t.Fatalf("updated %d + new creates %d exceed cap %d", plan.Status.UpdatedReplicas, newCreates, *p.MaxUpdated)
			}
		}
		// determinism: the same input in another order gives the same plan
		shuffled := slices.Clone(units)
		slices.Reverse(shuffled)
		again, _ := PlanLevel(p, shuffled)
		if fmt.Sprint(again) != fmt.Sprint(plan) {
			t.Fatalf("plan depends on input order:\n%v\n%v", plan, again)
		}
	})
}

// Driving a level with ticks from any starting state reaches exactly [0, replicas)
// on the update revision when every unit becomes ready, within a bounded number
// of ticks, and never dips below the floor it did not start below.
func TestRollingUpdate_AlwaysConvergesWhenUnitsBecomeReady(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := drawPolicy(rt)
		p.Type, p.MaxUpdated, p.Partition = v1alpha1.RollingUpdateStrategyType, nil, 0
		units := drawSharedUnits(rt)
		for i := range units {
			units[i].Terminating = false
			if !units[i].Available {
				units[i].Scheduled, units[i].Ready = false, false // becomes available on the next tick
			}
		}
		k := newTicker(&testing.T{}, p, units)
		k.run(200)
		var want []string
		for i := range p.Replicas {
			want = append(want, fmt.Sprintf("%d@new", i))
		}
		slices.Sort(want)
		if got := k.indices(); !slices.Equal(got, want) {
			rt.Fatalf("ended with %v, want %v after %v", got, want, k.actions)
		}
	})
}
