package invariant

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// level is a RollingUpdate level of replicas 3, maxSurge 1, maxUnavailable 0
// with the given units.
func level(units ...Unit) Level {
	return Level{Name: "replica 0 clique frontend", Strategy: v1alpha1.RollingUpdateStrategyType,
		Sizes: []Size{{Replicas: 3, Fenceposts: rollout.Fenceposts{MaxSurge: 1}}}, Units: units}
}

func up(i int32) Unit    { return Unit{Index: i, Available: true} }
func down(i int32) Unit  { return Unit{Index: i} }
func going(i int32) Unit { return Unit{Index: i, Terminating: true} }

// wantRule asserts vs is exactly one violation of rule, or none for rule "".
func wantRule(t *testing.T, vs []Violation, rule Name) {
	t.Helper()
	switch {
	case rule == "" && len(vs) > 0:
		t.Fatalf("want no violation, got %v", vs)
	case rule != "" && (len(vs) != 1 || vs[0].Rule != rule):
		t.Fatalf("want one %s violation, got %v", rule, vs)
	}
}

func TestUnitsWithinSurge_CatchesACreationPastReplicasPlusMaxSurge(t *testing.T) {
	tests := []struct {
		name          string
		before, after Level
		want          Name
	}{
		{"the surge unit fits", level(up(0), up(1), up(2)), level(up(0), up(1), up(2), down(3)), ""},
		{"a second surge unit breaks it", level(up(0), up(1), up(2), up(3)), level(up(0), up(1), up(2), up(3), down(4)), UnitsWithinSurge},
		{"a terminating unit still counts", level(going(0), up(1), up(2), up(3)), level(going(0), up(1), up(2), up(3), down(0)), UnitsWithinSurge},
		{"a scale-in leaves the excess without breaking it", level(up(0), up(1), up(2), up(3), up(4)), level(up(0), up(1), up(2), up(3), going(4)), ""},
		{"under every size: a child scaled to 4 may hold 5", level(up(0), up(1), up(2), up(3)),
			func() Level {
				l := level(up(0), up(1), up(2), up(3), down(4))
				l.Sizes = append(l.Sizes, Size{Replicas: 4, Fenceposts: rollout.Fenceposts{MaxSurge: 1}})
				return l
			}(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantRule(t, CheckUnitsWithinSurge(tt.before, tt.after), tt.want) })
	}
}

func TestAvailabilityFloor_CatchesDeletingBelowReplicasMinusMaxUnavailable(t *testing.T) {
	tests := []struct {
		name          string
		before, after Level
		deleted       []int32
		want          Name
	}{
		{"deleting once the surge unit is available", level(up(0), up(1), up(2), up(3)), level(going(0), up(1), up(2), up(3)), []int32{0}, ""},
		{"deleting before the surge unit is available breaks it", level(up(0), up(1), up(2), down(3)), level(going(0), up(1), up(2), down(3)), []int32{0}, AvailabilityFloor},
		{"an unavailable unit is free", level(down(0), up(1), up(2)), level(going(0), up(1), up(2)), []int32{0}, ""},
		{"no deletion, no judgement", level(up(0), down(1), down(2)), level(up(0), down(1), down(2)), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRule(t, CheckAvailabilityFloor(tt.before, tt.after, tt.deleted), tt.want)
		})
	}
}

func TestOnDeleteNoUpdate_AllowsOnlyScaleIn(t *testing.T) {
	onDelete := func(units ...Unit) *Level {
		l := level(units...)
		l.Strategy, l.Sizes[0].MaxSurge = v1alpha1.OnDeleteStrategyType, 0
		return &l
	}
	three := onDelete(up(0), up(1), up(2))
	four := onDelete(up(0), up(1), up(2), up(3))
	groups := onDelete(up(0), up(1), up(2), up(3)) // a group level scaled in from 4 to 3
	tests := []struct {
		name string
		d    Deletion
		at   []Placement
		want Name
	}{
		{"deleting an outdated unit with no scale-in breaks it", Deletion{Index: 1}, []Placement{{three, 1}}, OnDeleteNoUpdate},
		{"a unit above replicas goes", Deletion{Index: 3}, []Placement{{four, 3}}, ""},
		{"more live units than replicas: any may go", Deletion{Index: 0}, []Placement{{four, 0}}, ""},
		{"a scale-in of an outer level explains it", Deletion{Index: 0}, []Placement{{groups, 3}, {three, 0}}, ""},
		{"a planner deletion for an update breaks it", Deletion{Index: 3, Reason: rollout.ReasonUpdate}, []Placement{{four, 3}}, OnDeleteNoUpdate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRule(t, CheckOnDeleteNoUpdate(v1alpha1.OnDeleteStrategyType, tt.d, tt.at...), tt.want)
		})
	}
	if vs := CheckOnDeleteNoUpdate(v1alpha1.RollingUpdateStrategyType, Deletion{Index: 1}, Placement{three, 1}); len(vs) > 0 {
		t.Fatalf("RollingUpdate judged by the OnDelete rule: %v", vs)
	}
}

func TestOneRevisionPerReplica_CatchesAMixUnderReplicaRecreate(t *testing.T) {
	recreate := v1alpha1.ReplicaRecreateStrategyType
	wantRule(t, CheckOneRevisionPerReplica(recreate, 0, []string{"v2", "v2"}, ""), "")
	wantRule(t, CheckOneRevisionPerReplica(recreate, 0, []string{"v1", "v2"}, "pod 0 created at v2"), OneRevisionPerReplica)
	wantRule(t, CheckOneRevisionPerReplica(v1alpha1.RollingUpdateStrategyType, 0, []string{"v1", "v2"}, ""), "")
}

func TestHeld_PartitionAndPauseKeepReplicasWhereTheyAre(t *testing.T) {
	wantRule(t, CheckHeld(Hold{Partition: 1}, 0, "pod created on the target"), PartitionHolds)
	wantRule(t, CheckHeld(Hold{Partition: 1}, 1, "pod created on the target"), "")
	wantRule(t, CheckHeld(Hold{Paused: true}, 1, "pod created on the target"), PauseHolds)
	wantRule(t, CheckHeld(Hold{Partition: 1, Paused: true}, 0, ""), "")
}

// prefill and decode scaling groups of 2: decode 1 → prefill 1 → prefill all → decode all.
func disaggregated() *v1alpha1.PodCliqueSetSpec {
	step := func(role, to string) v1alpha1.RoleUpgradeStep {
		return v1alpha1.RoleUpgradeStep{Role: role, UpdateTo: intstr.Parse(to)}
	}
	return &v1alpha1.PodCliqueSetSpec{
		Template: v1alpha1.PodCliqueSetTemplateSpec{PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
			{Name: "prefill", Replicas: 2}, {Name: "decode", Replicas: 2},
		}},
		UpdateStrategy: v1alpha1.PodCliqueSetUpdateStrategy{RoleUpgrade: &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
			step("decode", "1"), step("prefill", "50%"), step("prefill", "100%"), step("decode", "100%"),
		}}},
	}
}

func TestRoleStepOrder_ARoleMovesOnlyAtItsStep(t *testing.T) {
	steps, err := Steps(disaggregated())
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{"decode", 1}, {"prefill", 1}, {"prefill", 2}, {"decode", 2}}
	if len(steps) != len(want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("steps %v, want %v", steps, want)
		}
	}
	done := StepsDone(steps, 0, []Role{{Name: "decode", UpdatedReady: 1}})
	if done != 1 {
		t.Fatalf("steps done %d after decode 1 ready, want 1", done)
	}
	wantRule(t, CheckRoleStepOrder(steps, done, 0, "prefill", 1), "")
	wantRule(t, CheckRoleStepOrder(steps, done, 0, "prefill", 2), RoleStepOrder)
	wantRule(t, CheckRoleStepOrder(steps, done, 0, "decode", 2), RoleStepOrder)
	wantRule(t, CheckRoleStepOrder(steps, 0, 0, "prefill", 1), RoleStepOrder)
	if d := StepsDone(steps, 1, nil); d != 1 {
		t.Fatalf("a step once passed must stay passed; done %d", d)
	}
	if d := StepsDone(steps, 0, []Role{{Name: "decode", UpdatedReady: 2}, {Name: "prefill", UpdatedReady: 2}}); d != 4 {
		t.Fatalf("steps done %d with every role updated and ready, want 4", d)
	}
	recreate := disaggregated()
	recreate.UpdateStrategy.Type = v1alpha1.ReplicaRecreateStrategyType
	if s, _ := Steps(recreate); s != nil {
		t.Fatalf("ReplicaRecreate honours no role steps, got %v", s)
	}
}

// A history where replica 1 starts while replica 0's surge pod still lives
// breaks the boundary rule; once the pod terminates it does not, unless the
// policy waits for termination.
func TestReplicaBoundary_CatchesTheNextReplicaStartingBesideALiveSurgeUnit(t *testing.T) {
	tests := []struct {
		name string
		left []SurgeLeft
		want Name
	}{
		{"nothing left", nil, ""},
		{"replica 0's surge group replica has live pods", []SurgeLeft{{Replica: 0, Unit: "surge replica 2 of kv", Live: 2, Terminating: 1}}, ReplicaBoundary},
		{"its pods terminate, Immediate", []SurgeLeft{{Replica: 0, Unit: "surge replica 2 of kv", Terminating: 3}}, ""},
		{"its pods terminate, PostTermination", []SurgeLeft{{Replica: 0, Unit: "surge replica 2 of kv", Terminating: 3, WaitsForTermination: true}}, ReplicaBoundary},
		{"a surge pod terminating under TerminationComplete", []SurgeLeft{{Replica: 0, Unit: "surge pod 5 of api", Terminating: 1, WaitsForTermination: true}}, ReplicaBoundary},
		{"the starting replica's own surge unit", []SurgeLeft{{Replica: 1, Unit: "surge replica 2 of kv", Live: 3}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRule(t, CheckReplicaBoundary(1, "pod kv-0 created on the target", tt.left), tt.want)
		})
	}
}

// With steps decode 1, prefill 1, prefill 100%, decode 100%: prefill's first
// updated unit starts step 1, which decode's live surge unit holds back; a
// role's own surge unit never holds its next step, and another replica's
// units hold nothing.
func TestRoleStepBoundary_CatchesAStepStartingBesideTheLastStepsSurgeUnit(t *testing.T) {
	steps := []Step{{"decode", 1}, {"prefill", 1}, {"prefill", 2}, {"decode", 2}}
	decodeSurge := SurgeLeft{Replica: 0, Role: "decode", Unit: "surge replica 2 of decode", Live: 2}
	tests := []struct {
		name    string
		role    string
		updated int32
		left    []SurgeLeft
		want    Name
	}{
		{"prefill starts beside decode's live surge replica", "prefill", 1, []SurgeLeft{decodeSurge}, ReplicaBoundary},
		{"decode's surge replica terminating, Immediate", "prefill", 1, []SurgeLeft{{Replica: 0, Role: "decode", Unit: "surge replica 2 of decode", Terminating: 2}}, ""},
		{"decode's surge replica terminating, PostTermination", "prefill", 1,
			[]SurgeLeft{{Replica: 0, Role: "decode", Unit: "surge replica 2 of decode", Terminating: 2, WaitsForTermination: true}}, ReplicaBoundary},
		{"another replica's surge replica", "prefill", 1, []SurgeLeft{{Replica: 1, Role: "decode", Unit: "surge replica 2 of decode", Live: 2}}, ""},
		{"decode's own first step", "decode", 1, []SurgeLeft{decodeSurge}, ""},
		{"prefill's second step after its own first", "prefill", 2, []SurgeLeft{{Replica: 0, Role: "prefill", Unit: "surge replica 2 of prefill", Live: 2}}, ""},
		{"decode's last step beside prefill's surge replica", "decode", 2, []SurgeLeft{{Replica: 0, Role: "prefill", Unit: "surge replica 2 of prefill", Live: 1}}, ReplicaBoundary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantRule(t, CheckRoleStepBoundary(steps, 0, tt.role, tt.updated, "pod created on the target", tt.left), tt.want)
		})
	}
}
