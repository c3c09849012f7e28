package invariant

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// FuzzPlanLevel feeds the planner whatever a level can look like, percentages,
// holes, duplicate and negative indices included: it never panics, and when it
// plans, the plan keeps the level rules. `make test` runs the seeds;
// `go test -fuzz FuzzPlanLevel ./internal/invariant/` searches further.
func FuzzPlanLevel(f *testing.F) {
	f.Add(byte(0), int8(3), "1", "0", int8(0), []byte{0x01, 0x13, 0x22})
	f.Add(byte(1), int8(4), "25%", "25%", int8(1), []byte{0x00, 0x10, 0x21, 0x37, 0x44})
	f.Add(byte(6), int8(3), "1", "0", int8(0), []byte{0x20, 0x21, 0x22})
	f.Add(byte(0), int8(0), "0", "0", int8(0), []byte{})
	f.Add(byte(0), int8(2), "150%", "-1", int8(-3), []byte{0xff, 0x80})
	f.Fuzz(func(t *testing.T, kind byte, replicas int8, surge, unavailable string, partition int8, raw []byte) {
		strategy := v1alpha1.RollingUpdateStrategyType
		if kind%2 == 1 {
			strategy = v1alpha1.OnDeleteStrategyType
		}
		// the next bits: a clique's TerminationStarted, then its surge at the replaced index
		p := rollout.Policy{Type: strategy, Replicas: int32(replicas), MaxSurge: intstr.Parse(surge), MaxUnavailable: intstr.Parse(unavailable),
			UpdateRevision: "v2", CurrentRevision: "v1", Partition: int32(partition),
			ReplaceWhileTerminating: kind&2 != 0, SurgeAtReplacedIndex: kind&4 != 0}
		// each byte is a unit: index (low nibble, signed), revision, terminating, available
		units := make([]rollout.Unit, 0, len(raw))
		for _, b := range raw {
			u := rollout.Unit{Index: int32(int8(b<<4) >> 4), Revision: "v1", Terminating: b&0x40 != 0}
			if b&0x10 != 0 {
				u.Revision = "v2"
			}
			u.Available = b&0x20 != 0 && !u.Terminating
			u.Ready = u.Available
			units = append(units, u)
		}
		plan, err := rollout.PlanLevel(p, units)
		if err != nil {
			return // bad limits are an error, not a panic
		}
		fp, err := rollout.ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
		if err != nil || p.Replicas < 0 || hasDuplicateOrNegative(units) {
			return // the rules below describe well-formed levels only
		}
		if strategy == v1alpha1.OnDeleteStrategyType {
			fp.MaxSurge = 0
		}
		before := Level{Name: "level", Strategy: strategy, Sizes: []Size{{Replicas: p.Replicas, Fenceposts: fp}},
			ReplaceWhileTerminating: p.ReplaceWhileTerminating, SurgeAtReplacedIndex: p.SurgeAtReplacedIndex}
		for _, u := range units {
			before.Units = append(before.Units, Unit{Index: u.Index, Available: u.Available, Terminating: u.Terminating, Revision: u.Revision})
		}
		if vs := CheckLevelPlan(before, plan.Creates, plan.Deletes); len(vs) > 0 {
			t.Fatalf("plan %+v of %+v under %+v breaks %v", plan, units, p, vs)
		}
	})
}

func hasDuplicateOrNegative(units []rollout.Unit) bool {
	seen := map[int32]bool{}
	for _, u := range units {
		if u.Index < 0 || seen[u.Index] {
			return true
		}
		seen[u.Index] = true
	}
	return false
}
