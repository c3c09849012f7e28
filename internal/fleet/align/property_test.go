package align

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/internal/fleet/division"
)

// Over random fleets (kinds, shares), global strategies, members that see
// their grants late, members the hub loses for a while, statuses that trail,
// terminating units that outlast new ones' start-up, a pause of a few rounds,
// and the replicas re-divided mid-rollout (new weights, a member leaving, a
// member joining), the fleet-wide invariants hold after every action of every
// member (units counted as SimMember.Counted says: a Deployment's terminating
// pods are not, as its own controller and the e2e tests' watcher do not count
// them): at least
// replicas − maxUnavailable available, at most replicas + maxSurge units, at
// most replicas − partition units on the new revision (plus the surge: units
// above a member's replicas, members' replicas above the global ones while
// shares move); a partition rises only with the share of a member holding
// every unit; and once every member is reachable and current, the shares
// reach their targets (unless no path keeps the invariants, which the plan
// reports) and the rollout completes with exactly replicas − partition units
// updated (Deployment members take their whole share or none, so with them
// the count is the most that fits).
func TestAlign_FleetInvariantsHoldAndRolloutsComplete(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "members")
		var fleet []*SimMember
		var desired int32
		partitioned := false
		for i := range n {
			kind := rapid.SampledFrom([]Kind{Deployment, Partitioned}).Draw(t, "kind")
			partitioned = partitioned || kind == Partitioned
			share := int32(rapid.IntRange(0, 6).Draw(t, "share"))
			fleet = append(fleet, NewSimMember(fmt.Sprintf("m%d", i), kind, share))
			desired += share
		}
		// A partitioned member updates a unit by taking it down: it needs some
		// unavailability budget (validation asks for it).
		leastUnavailable := 0
		if partitioned {
			leastUnavailable = 1
		}
		s := Strategy{Replicas: desired,
			MaxUnavailable: intstr.FromInt32(int32(rapid.IntRange(leastUnavailable, 3).Draw(t, "maxUnavailable"))),
			MaxSurge:       intstr.FromInt32(int32(rapid.IntRange(0, 2).Draw(t, "maxSurge"))),
			Partition:      int32(rapid.IntRange(0, int(desired)).Draw(t, "partition"))}
		plan, err := Align(s, members(fleet))
		if err != nil {
			t.Fatal(err)
		}
		u, sg := plan.MaxUnavailable, plan.MaxSurge
		var lostShare int32
		type held struct{ partition, desired int32 }
		partitions := map[string]held{}
		check := func(when string) {
			var available, units, scales, updated int32
			for _, f := range fleet {
				u, a, up := f.Counted()
				available += a
				units += u
				scales += f.Scale
				updated += min(up, f.Scale) // a member's units above its replicas are surge
			}
			// So are members' replicas above the global ones while shares
			// move; the rest keep to the partition.
			mostUpdated := desired - s.Partition + max(0, scales-desired)
			if available < desired-u-lostShare || units > desired+sg || updated > mostUpdated {
				t.Fatalf("%s: %d available (floor %d), %d units (ceiling %d), %d updated (at most %d): %s\n%+v",
					when, available, desired-u-lostShare, units, desired+sg, updated, mostUpdated, states(fleet), members(fleet))
			}
		}
		faulty := rapid.IntRange(0, 8).Draw(t, "faulty rounds")
		redivideAt := rapid.IntRange(-1, 6).Draw(t, "re-division round")
		// The rollout may be paused for a few rounds (a paused Deployment
		// member still scales, in proportion).
		pauseAt := rapid.IntRange(-1, 6).Draw(t, "pause round")
		pauseFor := rapid.IntRange(1, 3).Draw(t, "rounds paused")
		// Rollout stages hold some members back for a while (their stage
		// has not started); the budgets must hold all the same.
		heldUntil := map[string]int{}
		for _, f := range fleet {
			heldUntil[f.Name] = rapid.IntRange(0, 8).Draw(t, "held until round")
		}
		var last Plan
		for round := range 200 {
			s.Paused = pauseAt >= 0 && round >= pauseAt && round < pauseAt+pauseFor
			if round == redivideAt {
				fleet = newDivision(t, fleet, desired)
			}
			// The hub's round: align on what it sees, write the grants.
			ms := members(fleet)
			for i := range ms {
				ms[i].Held = round < heldUntil[ms[i].Name]
			}
			plan, err := Align(s, ms)
			last = plan
			t.Logf("round %d: %s\n  plan %+v", round, states(fleet), plan.Members)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Done && round > faulty {
				if plan.Granted+plan.WholeShareShortfall != plan.AllowedUpdated {
					t.Fatalf("done with %d units allowed and %d short, want %d", plan.Granted, plan.WholeShareShortfall, plan.AllowedUpdated)
				}
				var available int32
				for _, f := range fleet {
					available += f.Member().Status.Available
				}
				if available > desired || available < desired-plan.SharesHeld || (plan.SharesHeld == 0 && available != desired) {
					t.Fatalf("done with %d of %d units available, %d held", available, desired, plan.SharesHeld)
				}
				if plan.SharesHeld == 0 {
					for _, f := range fleet {
						if f.Desired != f.Target {
							t.Fatalf("done with %s holding %d replicas for a share of %d", f.Name, f.Desired, f.Target)
						}
					}
				}
				if plan.WholeShareShortfall > 0 && !onlyDeploymentsLeft(fleet, plan) {
					t.Fatalf("done %d short, but a partitioned member could take them", plan.WholeShareShortfall)
				}
				return
			}
			for _, mp := range plan.Members {
				f := find(fleet, mp.Name)
				if f.Lost {
					continue
				}
				if f.Kind == Partitioned {
					if last, ok := partitions[f.Name]; ok && mp.Grant.Partition > last.partition && last.partition < last.desired {
						t.Fatalf("round %d: %s partition rose %d -> %d with %d of %d units allowed to update",
							round, f.Name, last.partition, mp.Grant.Partition, last.desired-last.partition, last.desired)
					}
					partitions[f.Name] = held{mp.Grant.Partition, mp.Replicas}
				}
				f.Write(mp)
			}
			// A member the hub saw lost after it left the placement it takes
			// as gone for good (as it does once memberLostTimeoutSeconds have
			// passed): here its cluster and units are gone. Its units leave
			// every budget: the floor is lowered by exactly its share, no more,
			// and the fleet must still end whole. (Under a partition the units
			// lost may be ones no other member can make up on the old
			// revision; such a rollout may wait for the partition to be
			// lowered, so it need not end.)
			fleet = slices.DeleteFunc(fleet, func(f *SimMember) bool {
				if f.Lost && f.Target == 0 {
					lostShare += f.Desired
					return true
				}
				return false
			})
			// The members: each may miss the write for a round, or be lost, in
			// the faulty rounds; each acts a random number of passes.
			for _, f := range fleet {
				if round >= faulty || rapid.Bool().Draw(t, "reports") {
					f.Report()
				}
				f.Lost = round < faulty && rapid.IntRange(0, 9).Draw(t, "lost") == 0
				if round >= faulty || rapid.IntRange(0, 2).Draw(t, "delay") != 0 {
					f.Observe()
				}
			}
			passes := rapid.IntRange(1, 4).Draw(t, "passes")
			for p := range passes {
				for _, f := range fleet {
					if f.Lost {
						continue
					}
					if round < faulty && rapid.IntRange(0, 3).Draw(t, "status lags") == 0 {
						f.LagStatus()
					}
					if err := f.Act(); err != nil {
						t.Fatal(err)
					}
					check(fmt.Sprintf("round %d pass %d after %s acted", round, p, f.Name))
				}
				for _, f := range fleet {
					switch {
					case round >= faulty:
						f.Settle()
					case rapid.Bool().Draw(t, "settles"):
						// Terminating units may outlast the start-up of new ones.
						if rapid.Bool().Draw(t, "terminating linger") {
							f.StartUnits()
						} else {
							f.Settle()
						}
					}
				}
				check(fmt.Sprintf("round %d pass %d settled", round, p))
			}
		}
		if lostShare > 0 && s.Partition > 0 {
			return
		}
		t.Fatalf("no rollout end after 200 rounds: %s\nlast plan %+v\nmembers %+v", layouts(fleet), last, members(fleet))
	})
}

// newDivision draws new weights for the fleet (a member may drop to 0, as one
// leaving the placement does) and maybe a member joining with nothing yet,
// and sets every member's target to its new share of replicas. A partitioned
// member that joins starts on the current template (nothing holds the old
// one for it), so its units count against the partition.
func newDivision(t *rapid.T, fleet []*SimMember, replicas int32) []*SimMember {
	if rapid.Bool().Draw(t, "a member joins") || len(fleet) == 0 {
		kind := rapid.SampledFrom([]Kind{Deployment, Partitioned}).Draw(t, "joining kind")
		fleet = append(fleet, NewSimMember("joined", kind, 0))
	}
	names := make([]string, len(fleet))
	weights := make([]int32, len(fleet))
	for i, f := range fleet {
		names[i] = f.Name
		weights[i] = int32(rapid.IntRange(0, 4).Draw(t, "weight"))
	}
	if !slices.ContainsFunc(weights, func(w int32) bool { return w > 0 }) {
		weights[0] = 1
	}
	for i, share := range division.Shares(replicas, names, weights) {
		fleet[i].Target = share
	}
	return fleet
}

// states draws every member: its layout and a Deployment's ReplicaSets.
func states(fleet []*SimMember) string {
	var b strings.Builder
	for _, f := range fleet {
		fmt.Fprintf(&b, "\n  %s", f.Layout())
		if f.Deployment != nil {
			fmt.Fprintf(&b, ": %s", f.Deployment)
		}
	}
	return b.String()
}

func members(fleet []*SimMember) []Member {
	out := make([]Member, 0, len(fleet))
	for _, f := range fleet {
		out = append(out, f.Member())
	}
	return out
}

func find(fleet []*SimMember, name string) *SimMember {
	for _, f := range fleet {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// onlyDeploymentsLeft: every partitioned member is fully allowed, so a
// shortfall can only come from Deployments' whole shares.
func onlyDeploymentsLeft(fleet []*SimMember, plan Plan) bool {
	for _, mp := range plan.Members {
		if find(fleet, mp.Name).Kind == Partitioned && mp.Grant.Partition > 0 {
			return false
		}
	}
	return true
}
