package invariant

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// The level rules hold for every plan rollout.PlanLevel makes, over random
// limits and random levels: the rules and the planner agree on what a level may
// do, though they are written apart.
func TestPlanLevel_NeverBreaksTheLevelRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		strategy := rapid.SampledFrom([]v1alpha1.UpdateStrategyType{v1alpha1.RollingUpdateStrategyType, v1alpha1.OnDeleteStrategyType}).Draw(t, "strategy")
		p := rollout.Policy{
			Type:           strategy,
			Replicas:       int32(rapid.IntRange(0, 5).Draw(t, "replicas")),
			MaxSurge:       intstr.FromInt(rapid.IntRange(0, 2).Draw(t, "maxSurge")),
			MaxUnavailable: intstr.FromInt(rapid.IntRange(0, 2).Draw(t, "maxUnavailable")),
			UpdateRevision: "v2", CurrentRevision: "v1",
			Partition:               int32(rapid.IntRange(0, 2).Draw(t, "partition")),
			ReplaceWhileTerminating: rapid.Bool().Draw(t, "replace while terminating"),
			SurgeAtReplacedIndex:    rapid.Bool().Draw(t, "surge at replaced index"),
		}
		var units []rollout.Unit
		for k := range rapid.IntRange(0, 7).Draw(t, "units") {
			// mostly one unit per index; now and then a second one beside it
			i := int32(k)
			if k > 0 && rapid.IntRange(0, 4).Draw(t, "share an index") == 0 {
				i = units[k-1].Index
			}
			u := rollout.Unit{Index: i, Revision: rapid.SampledFrom([]string{"v1", "v2"}).Draw(t, "revision"),
				Terminating: rapid.Bool().Draw(t, "terminating"), Key: fmt.Sprintf("u%d", k)}
			u.Available = !u.Terminating && rapid.Bool().Draw(t, "available")
			u.Ready = u.Available
			units = append(units, u)
		}
		plan, err := rollout.PlanLevel(p, units)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := rollout.ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
		if err != nil {
			t.Fatal(err)
		}
		if strategy == v1alpha1.OnDeleteStrategyType {
			fp.MaxSurge = 0
		}
		before := Level{Name: "level", Strategy: strategy, Sizes: []Size{{Replicas: p.Replicas, Fenceposts: fp}},
			ReplaceWhileTerminating: p.ReplaceWhileTerminating, SurgeAtReplacedIndex: p.SurgeAtReplacedIndex}
		for _, u := range units {
			before.Units = append(before.Units, Unit{Index: u.Index, Available: u.Available, Terminating: u.Terminating, Revision: u.Revision, Key: u.Key})
		}
		vs := CheckLevelPlan(before, plan.Creates, plan.Deletes)
		if len(vs) > 0 {
			t.Fatalf("plan %+v of %+v breaks %v", plan, units, vs)
		}
	})
}
