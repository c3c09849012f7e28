package align

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// A fleet at scale: members of 10 units each, budgets of 1% of the units,
// statuses that arrive a round late and members lost for a while in the first
// rounds. The fleet-wide floor and ceiling hold after every pass, the rollout
// completes, and the figures (rounds against the ideal units/budget, Align time
// per round) are logged. CI runs 300 members; `make bench-fleet` runs 10,000
// (ALIGN_SIM_MEMBERS).
func TestAlign_SimulationAtScale(t *testing.T) {
	n := 300
	if v := os.Getenv("ALIGN_SIM_MEMBERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("ALIGN_SIM_MEMBERS=%q: %v", v, err)
		}
	}
	const share = 10
	rng := rand.New(rand.NewPCG(1, 2))
	fleet := make([]*SimMember, n)
	for i := range fleet {
		kind := Deployment
		if i%2 == 1 {
			kind = Partitioned
		}
		fleet[i] = NewSimMember(fmt.Sprintf("member-%05d", i), kind, share)
	}
	byName := map[string]*SimMember{}
	for _, f := range fleet {
		byName[f.Name] = f
	}
	replicas := int32(n * share)
	budget := max(1, replicas/100)
	s := Strategy{Replicas: replicas, MaxUnavailable: intstr.FromInt32(budget), MaxSurge: intstr.FromInt32(budget)}
	const faulty = 5
	var alignTime time.Duration
	var maxAlign time.Duration
	rounds := 0
	for round := range 100000 {
		start := time.Now()
		plan, err := Align(s, members(fleet))
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		alignTime += took
		maxAlign = max(maxAlign, took)
		rounds = round + 1
		if plan.Done && round > faulty {
			break
		}
		for _, mp := range plan.Members {
			f := byName[mp.Name]
			if !f.Lost {
				g := mp.Grant
				f.Written = &g
			}
		}
		for _, f := range fleet {
			f.Lost = round < faulty && rng.IntN(100) == 0
			if round >= faulty || rng.IntN(3) != 0 {
				f.Applied = f.Written
			}
		}
		var available, units int32
		for _, f := range fleet {
			if !f.Lost {
				if err := f.Act(); err != nil {
					t.Fatal(err)
				}
			}
			m := f.Member()
			available += m.Status.Available
			units += int32(len(f.Units))
		}
		if available < replicas-plan.MaxUnavailable || units > replicas+plan.MaxSurge {
			t.Fatalf("round %d: %d available (floor %d), %d units (ceiling %d)", round, available, replicas-plan.MaxUnavailable, units, replicas+plan.MaxSurge)
		}
		for _, f := range fleet {
			f.Settle()
		}
	}
	ideal := (replicas + budget - 1) / budget
	t.Logf("%d members, %d units, budget %d unavailable + %d surge: %d rounds (ideal %d, %.2fx), Align %v per round on average, %v at most",
		n, replicas, budget, budget, rounds, ideal, float64(rounds)/float64(ideal), alignTime/time.Duration(rounds), maxAlign)
}
