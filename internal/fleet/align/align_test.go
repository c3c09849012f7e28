package align

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/internal/fleet/deploysim"
)

// The worked rounds: 10 replicas split 5/5 over two partitioned members,
// partition 3, maxUnavailable 2. Each round the hub aligns, each member's own
// controller acts on its grant until it settles, and the hub looks again. Each
// member replaces one unit at a time, so the budget of 2 goes one to each; the
// fleet never has more than 2 units down and ends with exactly 7 units on the
// new revision and 3 on the old one (1 in member-1, 2 in member-2).
func TestAlign_WorkedRoundsTenSplitFiveFivePartitionThree(t *testing.T) {
	s := Strategy{Replicas: 10, MaxUnavailable: intstr.FromInt32(2), MaxSurge: intstr.FromInt32(0), Partition: 3}
	fleet := []*SimMember{NewSimMember("member-1", Partitioned, 5), NewSimMember("member-2", Partitioned, 5)}
	want := []string{
		"member-1 new 1/5 partition 4 · member-2 new 1/5 partition 4",
		"member-1 new 2/5 partition 3 · member-2 new 2/5 partition 3",
		"member-1 new 3/5 partition 2 · member-2 new 3/5 partition 2",
		"member-1 new 4/5 partition 1 · member-2 new 3/5 partition 2",
	}
	var got []string
	for round := range len(want) + 1 {
		plan := alignRound(t, s, fleet)
		if round == len(want) {
			if !plan.Done {
				t.Fatalf("round %d: not done: %+v", round, plan)
			}
			break
		}
		if plan.Unavailable > 2 {
			t.Fatalf("round %d: grants may cost %d unavailable units, the limit is 2", round, plan.Unavailable)
		}
		settleRound(t, fleet, 2, 0)
		got = append(got, layouts(fleet))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rounds:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The first user story: a Deployment of 10 split 4/6, maxUnavailable 2 and
// maxSurge 1: never fewer than 8 available, never more than 11 pods, and done.
func TestAlign_DeploymentsSplitFourSixKeepOneBudget(t *testing.T) {
	s := Strategy{Replicas: 10, MaxUnavailable: intstr.FromInt32(2), MaxSurge: intstr.FromInt32(1)}
	fleet := []*SimMember{NewSimMember("member-1", Deployment, 4), NewSimMember("member-2", Deployment, 6)}
	for round := range 30 {
		plan := alignRound(t, s, fleet)
		if plan.Done {
			return
		}
		if plan.Unavailable > 2 || plan.Surge > 1 {
			t.Fatalf("round %d: grants may cost %d unavailable and %d surge units", round, plan.Unavailable, plan.Surge)
		}
		settleRound(t, fleet, 2, 1)
	}
	t.Fatalf("not done after 30 rounds: %s", layouts(fleet))
}

// alignRound runs Align on what the members report and hands out the grants.
func alignRound(t *testing.T, s Strategy, fleet []*SimMember) Plan {
	t.Helper()
	var ms []Member
	for _, f := range fleet {
		ms = append(ms, f.Member())
	}
	plan, err := Align(s, ms)
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range plan.Members {
		for _, f := range fleet {
			if f.Name == mp.Name && !f.Lost {
				f.Write(mp)
				f.Observe()
			}
		}
	}
	return plan
}

// settleRound lets every member act on its grant pass by pass until nothing
// moves, checking the fleet-wide floor and ceiling after every pass.
func settleRound(t *testing.T, fleet []*SimMember, maxUnavailable, maxSurge int32) {
	t.Helper()
	var desired int32
	for _, f := range fleet {
		desired += f.Desired
	}
	for range 100 {
		before := fmt.Sprint(layoutsOf(fleet))
		for _, f := range fleet {
			if err := f.Act(); err != nil {
				t.Fatal(err)
			}
		}
		var available, units int32
		for _, f := range fleet {
			u, a, _ := f.Counted()
			available += a
			units += u
		}
		if available < desired-maxUnavailable || units > desired+maxSurge {
			t.Fatalf("%d available (floor %d), %d units (ceiling %d): %s", available, desired-maxUnavailable, units, desired+maxSurge, layouts(fleet))
		}
		for _, f := range fleet {
			f.Settle()
		}
		if fmt.Sprint(layoutsOf(fleet)) == before {
			return
		}
	}
}

func layouts(fleet []*SimMember) string {
	var out []string
	for _, f := range fleet {
		out = append(out, f.Layout())
	}
	return strings.Join(out, " · ")
}

// A Deployment counts only pods that are not terminating against its
// maxSurge, so a grant must not hand it the terminating ones as surge: a
// member with 5 pods for a share of 4 and 2 more terminating keeps a maxSurge
// of 1 (what it runs above its share), while it is charged all 3.
func TestAlign_TerminatingPodsAreChargedButNotGrantedAsSurge(t *testing.T) {
	s := Strategy{Replicas: 10, MaxUnavailable: intstr.FromInt32(2), MaxSurge: intstr.FromInt32(1)}
	a := Member{Name: "a", Kind: Deployment, Desired: 4, Target: 4,
		Status: Status{Replicas: 5, Terminating: 2, Updated: 3, UpdatedAvailable: 2, Available: 3},
		Last:   &Grant{Started: true, MaxUnavailable: 2, MaxSurge: 1}}
	b := Member{Name: "b", Kind: Deployment, Desired: 6, Target: 6, Status: Status{Replicas: 6, Available: 6}, Last: &Grant{}}
	plan, err := Align(s, []Member{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[0].Grant; g.MaxSurge > 1 {
		t.Errorf("a may run %d pods above its share of 4, the fleet's limit is 1: %+v", g.MaxSurge, g)
	}
	if plan.Members[0].Surge != 3 {
		t.Errorf("a is charged %d surge, want its 1 extra pod and 2 terminating", plan.Members[0].Surge)
	}
	if plan.Members[1].Grant.Started {
		t.Errorf("b started while a's pods take all the surge: %+v", plan.Members[1].Grant)
	}
}

// Surge lets a Deployment make new pods above its share; one whose pods are
// all on the new template makes none, so a grant gives it no more surge than
// it runs. Seen on real members: a share of 1 rolled with both limits deletes
// its old pod at once; while that pod terminates it takes the surge (maxSurge
// written as 0), and once it is gone the surge used to come back, a write the
// member could not use that cost it a sync and the hub a round.
func TestAlign_ADeploymentWithEveryPodNewGetsNoSurgeBack(t *testing.T) {
	s := Strategy{Replicas: 3, MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(1)}
	a := Member{Name: "a", Kind: Deployment, Desired: 1, Target: 1,
		Status: Status{Replicas: 1, Updated: 1},
		Last:   &Grant{Started: true, MaxUnavailable: 1}}
	b := Member{Name: "b", Kind: Deployment, Desired: 1, Target: 1, Status: Status{Replicas: 1, Available: 1}, Last: &Grant{}}
	c := Member{Name: "c", Kind: Deployment, Desired: 1, Target: 1, Status: Status{Replicas: 1, Available: 1}, Last: &Grant{}}
	plan, err := Align(s, []Member{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[0].Grant; g != *a.Last {
		t.Errorf("a, with its one pod new and starting, was granted %+v, want what it holds, %+v", g, *a.Last)
	}
	// The surge it does not take is there for a member that can use it.
	if g := plan.Members[1].Grant; !g.Started || g.MaxSurge != 1 {
		t.Errorf("b was granted %+v, want it started with the free surge", g)
	}
}

// A Deployment member done with its grant can spend none of it: the round
// that freezes it hands its budget on, rather than charging it until it has
// seen the freeze (a round later, and on a busy member seconds later).
func TestAlign_ADoneDeploymentFreesItsBudgetInTheRoundThatFreezesIt(t *testing.T) {
	s := Strategy{Replicas: 2, MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(1)}
	a := Member{Name: "a", Kind: Deployment, Desired: 1, Target: 1,
		Status: Status{Replicas: 1, Updated: 1, UpdatedAvailable: 1, Available: 1},
		Last:   &Grant{Started: true, MaxUnavailable: 1, MaxSurge: 1}}
	b := Member{Name: "b", Kind: Deployment, Desired: 1, Target: 1, Status: Status{Replicas: 1, Available: 1}, Last: &Grant{}}
	plan, err := Align(s, []Member{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[0].Grant; !g.Paused {
		t.Errorf("a, done, was granted %+v, want it frozen", g)
	}
	if g := plan.Members[1].Grant; !g.Started || g.MaxUnavailable != 1 || g.MaxSurge != 1 {
		t.Errorf("b was granted %+v, want it started with the whole budget a can no longer spend", g)
	}
	// Not so for a member whose status may trail its ReplicaSets, or that
	// has not seen its grant: it may still spend it.
	for _, m := range []Member{withSettling(a), withReach(a, Stale)} {
		plan, err := Align(s, []Member{m, b})
		if err != nil {
			t.Fatal(err)
		}
		if g := plan.Members[1].Grant; g.Started {
			t.Errorf("b started (%+v) beside a that may still spend its grant: %+v", g, m)
		}
	}
}

func withSettling(m Member) Member       { m.Status.Settling = true; return m }
func withReach(m Member, r Reach) Member { m.Reach = r; return m }

// A member whose pods are all new but whose old pod still terminates can
// spend none of its surge; the grant it holds is left as it is (no write that
// changes nothing it does), and the terminating pod is still charged.
func TestAlign_AGrantDifferingOnlyInWhatTheMemberCannotSpendIsNotRewritten(t *testing.T) {
	s := Strategy{Replicas: 2, MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(1)}
	last := Grant{Started: true, MaxUnavailable: 1, MaxSurge: 1}
	a := Member{Name: "a", Kind: Deployment, Desired: 1, Target: 1,
		Status: Status{Replicas: 1, Terminating: 1, Updated: 1}, Last: &last}
	b := Member{Name: "b", Kind: Deployment, Desired: 1, Target: 1, Status: Status{Replicas: 1, Available: 1}, Last: &Grant{}}
	plan, err := Align(s, []Member{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[0].Grant; g != last {
		t.Errorf("a was granted %+v, want the grant it holds, %+v", g, last)
	}
	if mp := plan.Members[0]; mp.Unavailable != 1 || mp.Surge != 1 {
		t.Errorf("a is charged %d unavailable and %d surge, want its new pod starting and its old one terminating", mp.Unavailable, mp.Surge)
	}
	if g := plan.Members[1].Grant; g.Started {
		t.Errorf("b started (%+v) with no budget left", g)
	}
}

// A new workload's partitioned members start with every unit on the current
// template (a partition of 0), more than replicas − partition allows: the
// planner must leave them so, never raise a partition to make room.
func TestAlign_PartitionNeverRisesWhenMoreThanAllowedRunTheTemplate(t *testing.T) {
	s := Strategy{Replicas: 6, MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(0), Partition: 2}
	fresh := func(name string) Member {
		return Member{Name: name, Kind: Partitioned, Desired: 3, Target: 3, Last: &Grant{Started: true},
			Status: Status{Replicas: 3, Updated: 3, UpdatedAvailable: 3, Available: 3}}
	}
	plan, err := Align(s, []Member{fresh("a"), fresh("b")})
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range plan.Members {
		if mp.Grant.Partition != 0 {
			t.Errorf("%s: partition raised to %d", mp.Name, mp.Grant.Partition)
		}
	}
	if !plan.Done {
		t.Errorf("a workload whose members run their template is not done: %+v", plan)
	}
}

// A Deployment member not started (paused on the old template) that runs
// nothing, such as one that joins mid-rollout, has no ReplicaSet: paused, it
// never makes a pod, so a share moved to it would never come up. Every unit
// it makes will be new: while the partition leaves no room for them, its
// share stays with the others and the rollout ends with it held (found by
// the property test once members were played by the Deployment controller's
// rules: the share moved, and the rollout never ended).
func TestAlign_AnEmptyDeploymentNotStartedTakesNoShareThePartitionHasNoRoomFor(t *testing.T) {
	s := Strategy{Replicas: 1, MaxUnavailable: intstr.FromInt32(2), MaxSurge: intstr.FromInt32(0), Partition: 1}
	fleet := []*SimMember{NewSimMember("a", Deployment, 1), NewSimMember("joined", Deployment, 0)}
	fleet[0].Target, fleet[1].Target = 0, 1
	var plan Plan
	for range 3 {
		if plan = alignRound(t, s, fleet); plan.Done {
			break
		}
		settleRound(t, fleet, 2, 0)
	}
	if !plan.Done || plan.SharesHeld != 1 || fleet[0].Desired != 1 || fleet[1].Desired != 0 {
		t.Errorf("done %v with %d of the shares held: %s", plan.Done, plan.SharesHeld, layouts(fleet))
	}
}

// Such a member is started as soon as what it holds fits the partition,
// even with its whole share not fitting yet (its units all come up new, as
// far as the partition then lets it grow) and with no budget left (it has
// nothing to replace). Here the fleet is 5 units short after a member left
// (no unavailability budget left) and a leaver still holds 2 of the 9 units
// allowed to update: waiting for its whole share of 8 to fit, it never
// would.
func TestAlign_AnEmptyDeploymentStartsWithWhatItHolds(t *testing.T) {
	s := Strategy{Replicas: 9, MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(0)}
	fleet := []*SimMember{NewSimMember("m0", Deployment, 0), NewSimMember("m1", Partitioned, 3), NewSimMember("m2", Partitioned, 1)}
	fleet[0].Target, fleet[1].Target = 8, 0
	// m1 runs 2 of its units new, m2 its one: they hold 3 of the 9 allowed.
	fleet[1].Written = &Grant{Started: true, Partition: 1}
	fleet[2].Written = &Grant{Started: true}
	for _, f := range fleet[1:] {
		f.Observe()
		for range 3 {
			if err := f.Act(); err != nil {
				t.Fatal(err)
			}
			f.Settle()
		}
	}
	plan := alignRound(t, s, fleet)
	if g := plan.Members[0].Grant; !g.Started {
		t.Fatalf("m0 not started: %+v (%s)", plan.Members[0], plan.Members[0].Waiting)
	}
	// 4 units run of 9: never fewer than 3 available, never more than 9 units.
	for round := range 40 {
		for range 3 {
			for _, f := range fleet {
				if err := f.Act(); err != nil {
					t.Fatal(err)
				}
			}
			var units, available int32
			for _, f := range fleet {
				u, a, _ := f.Counted()
				units, available = units+u, available+a
			}
			if available < 3 || units > 9 {
				t.Fatalf("round %d: %d available, %d units: %s", round, available, units, layouts(fleet))
			}
			for _, f := range fleet {
				f.Settle()
			}
		}
		if plan = alignRound(t, s, fleet); plan.Done {
			break
		}
		if round == 39 {
			t.Fatalf("not done: %s", layouts(fleet))
		}
	}
	if f := fleet[0]; f.Desired != 8 || f.Deployment.Of(newTemplate).Pods.Available != 8 {
		t.Errorf("m0 ends with %d replicas: %s", f.Desired, f.Deployment)
	}
}

// A paused Deployment still sizes its ReplicaSets, in proportion, to replicas
// + maxSurge, so a grant that lowered a paused member's maxSurge below the
// surge its ReplicaSets ask for would make it delete pods, available ones
// too, at no charge. Here a is paused mid-rollout (3 old pods, 1 new one
// starting), its counts settling, and b holds the rest of the budget: a
// keeps a maxSurge of 1 (found by the property test once the rollout could
// be paused for a few rounds: a's maxSurge went to 0 and it lost a pod).
func TestAlign_APausedDeploymentKeepsTheSurgeItsReplicaSetsAskFor(t *testing.T) {
	s := Strategy{Replicas: 6, MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(1)}
	a := Member{Name: "a", Kind: Deployment, Desired: 3, Target: 3, Last: &Grant{Started: true, MaxUnavailable: 1, MaxSurge: 1, Paused: true},
		Status: Status{Replicas: 4, Updated: 1, Available: 3, Settling: true}}
	b := Member{Name: "b", Kind: Deployment, Desired: 3, Target: 3, Last: &Grant{Started: true, MaxUnavailable: 1},
		Status: Status{Replicas: 3, Updated: 1, Available: 2}}
	plan, err := Align(s, []Member{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[0].Grant; g.MaxSurge < 1 {
		t.Errorf("a's maxSurge lowered to %d under the 1 pod its ReplicaSets ask for above its share: %+v", g.MaxSurge, g)
	}
	d := deploysim.AtRest(DeploymentSpec(nil, 3))
	d.SetSpec(DeploymentSpec(&Grant{Started: true, MaxSurge: 1}, 3))
	d.Sync()
	d.SyncReplicaSets()
	g := plan.Members[0].Grant
	d.SetSpec(DeploymentSpec(&g, 3))
	d.Sync()
	d.SyncReplicaSets()
	if _, available, _ := d.Counted(newTemplate); available != 3 {
		t.Errorf("a, acting on its grant %+v, has %d pods available: %s", g, available, d)
	}
}

// A member whose stage has not started gets no budget, and the budget goes to
// the others.
func TestAlign_AHeldMemberGetsNothingUntilReleased(t *testing.T) {
	s := Strategy{Replicas: 10, MaxUnavailable: intstr.FromInt32(2), MaxSurge: intstr.FromInt32(0)}
	fleet := []*SimMember{NewSimMember("canary", Partitioned, 5), NewSimMember("rest", Partitioned, 5)}
	ms := members(fleet)
	ms[1].Held = true
	plan, err := Align(s, ms)
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[1]; g.Grant.Partition != 5 || g.Waiting != "its stage has not started" {
		t.Fatalf("held member: %+v", g)
	}
	if g := plan.Members[0]; g.Grant.Partition != 5-PartitionedInFlight {
		t.Fatalf("the canary: %+v, want partition %d (it replaces %d at a time)", g, 5-PartitionedInFlight, PartitionedInFlight)
	}
	if plan.Done {
		t.Fatal("done with a member held")
	}
}
