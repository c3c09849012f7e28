package align

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/internal/fleet/division"
)

// A fleet at scale: members of 10 units each, budgets of 1% of the units,
// statuses that arrive a round late and members lost for a while in the first
// rounds, and the replicas re-divided three rounds in (members leaving,
// joining and changing weight). The fleet-wide floor and ceiling hold after
// every pass, every member ends on its new share and the rollout
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
	// Re-division three rounds in: 1% of the members leave, as many
	// Deployment members join with nothing yet, and 2% change weight (half
	// to 12, half to 8 units), under the same budgets.
	const redivideAt = 3
	moves := 0
	var alignTime time.Duration
	var maxAlign time.Duration
	rounds := 0
	for round := range 100000 {
		if round == redivideAt {
			fleet, moves = redivideFleet(fleet, replicas, rng)
			for _, f := range fleet {
				byName[f.Name] = f
			}
		}
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
			for _, f := range fleet {
				if f.Desired != f.Target || f.Member().Status.UpdatedAvailable != f.Target {
					t.Fatalf("done with %s at %d replicas (%d updated and available) for a share of %d", f.Name, f.Desired, f.Member().Status.UpdatedAvailable, f.Target)
				}
			}
			break
		}
		for _, mp := range plan.Members {
			f := byName[mp.Name]
			if !f.Lost {
				f.Write(mp)
			}
		}
		for _, f := range fleet {
			f.Lost = round < faulty && rng.IntN(100) == 0
			if round >= faulty || rng.IntN(3) != 0 {
				f.Observe()
			}
		}
		var available, units int32
		for _, f := range fleet {
			if !f.Lost {
				if err := f.actUntilStill(); err != nil {
					t.Fatal(err)
				}
			}
			u, a, _ := f.Counted()
			available += a
			units += u
		}
		if available < replicas-plan.MaxUnavailable || units > replicas+plan.MaxSurge {
			t.Fatalf("round %d: %d available (floor %d), %d units (ceiling %d)", round, available, replicas-plan.MaxUnavailable, units, replicas+plan.MaxSurge)
		}
		for _, f := range fleet {
			if err := f.settleAndReact(); err != nil {
				t.Fatal(err)
			}
		}
	}
	ideal := (replicas + budget - 1) / budget
	t.Logf("%d members, %d units, budget %d unavailable + %d surge, %d units re-divided mid-rollout: %d rounds (ideal %d, %.2fx), Align %v per round on average, %v at most",
		n, replicas, budget, budget, moves, rounds, ideal, float64(rounds)/float64(ideal), alignTime/time.Duration(rounds), maxAlign)
}

// redivideFleet gives the fleet new targets: 1% of the members leave (weight
// 0), as many new Deployment members join, 1% go to weight 12 and 1% to 8 (of
// 10). It returns the fleet and how many units change members.
func redivideFleet(fleet []*SimMember, replicas int32, rng *rand.Rand) ([]*SimMember, int) {
	n := len(fleet)
	for i := range max(1, n/100) {
		fleet = append(fleet, NewSimMember(fmt.Sprintf("joined-%05d", i), Deployment, 0))
	}
	names := make([]string, len(fleet))
	weights := make([]int32, len(fleet))
	for i, f := range fleet {
		names[i] = f.Name
		weights[i] = 10
		if i >= n {
			continue
		}
		switch rng.IntN(100) {
		case 0:
			weights[i] = 0
		case 1:
			weights[i] = 12
		case 2:
			weights[i] = 8
		}
	}
	moved := 0
	for i, share := range division.Shares(replicas, names, weights) {
		fleet[i].Target = share
		moved += int(max(0, share-fleet[i].Desired))
	}
	return fleet, moved
}
