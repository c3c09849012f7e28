package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// A level rolling from old to new while its replicas change at random ticks,
// as an autoscaler changes them: every plan keeps replicas + maxSurge and the
// availability floor of the replicas it is made for, every unit it makes runs
// the new revision (the rollout never restarts), a scale-in never takes an
// updated unit above the replicas while an outdated one stays there, no
// updated unit is deleted but as surplus, and once the replicas stop changing
// the rollout completes at exactly [0, replicas) on the new revision.
func TestScaleRolling_ReplicasChangedMidRolloutKeepEveryLimitAndComplete(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := drawPolicy(rt)
		p.Type, p.MaxUpdated, p.Partition = v1alpha1.RollingUpdateStrategyType, nil, 0
		if rapid.Bool().Draw(rt, "scaling group") { // a group's replicas, or PCS replicas under ReplicaRecreate
			p.UpdateOrder, p.ScaleIn, p.ReplaceWhileTerminating, p.SurgeAtReplacedIndex = LowestIndexFirst, HighestIndexFirst, false, false
		} else { // a clique's pods
			p.UpdateOrder, p.ScaleIn = OldestFirst, OutdatedFirst
			p.SurgeAtReplacedIndex = p.SurgeAtReplacedIndex && p.ReplaceWhileTerminating
		}
		p.Replicas = int32(rapid.IntRange(1, 6).Draw(rt, "replicas"))
		units := steadyUnits(p.Replicas, "old")
		for i := range units {
			units[i].Key = fmt.Sprintf("%d@start", i)
		}
		changes := map[int]int32{}
		for range rapid.IntRange(3, 6).Draw(rt, "replica changes") {
			changes[rapid.IntRange(0, 12).Draw(rt, "at tick")] = int32(rapid.IntRange(1, 8).Draw(rt, "to replicas"))
		}
		lastChange := 0
		for at := range changes {
			lastChange = max(lastChange, at)
		}
		idle := 0
		for tick := 0; tick < 200 && (tick <= lastChange || idle < 2); tick++ {
			if n, ok := changes[tick]; ok {
				p.Replicas = n
			}
			now := epoch.Add(time.Duration(tick+1) * time.Minute)
			units = slices.DeleteFunc(units, func(u Unit) bool { return u.Terminating })
			for i := range units {
				if u := &units[i]; !u.Ready {
					u.Scheduled, u.Ready, u.Available, u.ReadySince = true, true, true, now
				}
			}
			plan, err := PlanLevel(p, units)
			if err != nil {
				rt.Fatalf("PlanLevel: %v", err)
			}
			if msg := scaleRollingViolation(p, units, plan); msg != "" {
				rt.Fatalf("tick %d, replicas %d: %s\nunits %v\nplan %+v", tick, p.Replicas, msg, Inputs(p, units), plan)
			}
			for _, d := range plan.Deletes {
				units[slices.IndexFunc(units, func(u Unit) bool { return !u.Terminating && u.Index == d.Index && u.Key == d.Key })].Terminating = true
			}
			for _, c := range plan.Creates {
				units = append(units, Unit{Index: c.Index, Revision: c.Revision, Surge: c.Surge, CreatedAt: now, Key: fmt.Sprintf("%d@%d", c.Index, tick)})
			}
			if len(plan.Creates)+len(plan.Deletes) == 0 {
				idle++
			} else {
				idle = 0
			}
		}
		var got, want []string
		for _, u := range units {
			if !u.Terminating {
				got = append(got, fmt.Sprintf("%d@%s", u.Index, u.Revision))
			}
		}
		for i := range p.Replicas {
			want = append(want, fmt.Sprintf("%d@new", i))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			rt.Fatalf("ended with %v, want %v", got, want)
		}
	})
}

// scaleRollingViolation judges one plan of a level scaled mid-rollout.
func scaleRollingViolation(p Policy, units []Unit, plan LevelPlan) string {
	fp, _ := ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
	deleted := map[string]bool{}
	for _, d := range plan.Deletes {
		deleted[d.Key] = true
	}
	counted, available, lost := int32(0), int32(0), int32(0)
	for i := range units {
		u := &units[i]
		if !p.ReplaceWhileTerminating || !u.Terminating && !deleted[u.Key] {
			counted++
		}
		if u.Available && !u.Terminating {
			available++
			if deleted[u.Key] {
				lost++
			}
		}
	}
	if n := int32(len(plan.Creates)); n > 0 && counted+n > p.Replicas+fp.MaxSurge {
		return fmt.Sprintf("%d units + %d creates > replicas %d + maxSurge %d", counted, n, p.Replicas, fp.MaxSurge)
	}
	if lost > 0 && available-lost < p.Replicas-fp.MaxUnavailable {
		return fmt.Sprintf("deleting %d available of %d leaves fewer than %d - %d", lost, available, p.Replicas, fp.MaxUnavailable)
	}
	for _, c := range plan.Creates {
		if c.Revision != "new" {
			return fmt.Sprintf("create %+v: the rollout went back to the old revision", c)
		}
	}
	outdatedKeptAbove := slices.ContainsFunc(units, func(u Unit) bool {
		return !u.Terminating && u.Index >= p.Replicas && u.Revision != "new" && !deleted[u.Key]
	})
	for _, d := range plan.Deletes {
		u := &units[slices.IndexFunc(units, func(u Unit) bool { return !u.Terminating && u.Index == d.Index && u.Key == d.Key })]
		if u.Revision != "new" {
			continue
		}
		// an updated unit goes only as surplus: above the replicas, or beside
		// another unit of its index; never for an update (replaced twice)
		beside := slices.ContainsFunc(units, func(o Unit) bool { return !o.Terminating && o.Index == u.Index && o.Key != u.Key })
		if d.Reason == ReasonUpdate || d.Reason == ReasonReplaceFailed || d.Reason == ReasonSuperseded || (u.Index < p.Replicas && !beside) {
			return fmt.Sprintf("updated unit %d deleted (%s): replaced twice", d.Index, d.Reason)
		}
		// scale-in takes outdated units first; an unavailable updated unit
		// goes for free while an available outdated one waits for budget
		if u.Index >= p.Replicas && outdatedKeptAbove && u.Available {
			return fmt.Sprintf("updated unit %d scaled in while an outdated unit above replicas %d stays", d.Index, p.Replicas)
		}
	}
	return ""
}
