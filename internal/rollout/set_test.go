package rollout

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// threeRoles is a PodCliqueSet of frontend (3 pods), prefill (3 pods) and decode
// (a scaling group of 2 replicas of one leader pod).
func threeRoles(replicas int32, mutate func(s *v1alpha1.PodCliqueSetSpec)) *v1alpha1.PodCliqueSetSpec {
	obj := v1alpha1.PodCliqueSet{Spec: v1alpha1.PodCliqueSetSpec{Replicas: &replicas, Template: v1alpha1.PodCliqueSetTemplateSpec{
		Cliques: []v1alpha1.PodCliqueTemplateSpec{{Name: "frontend", Replicas: 3}, {Name: "prefill", Replicas: 3}, {Name: "decode-leader", Replicas: 1}},
		PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
			{Name: "decode", Replicas: 2, CliqueNames: []string{"decode-leader"}},
		},
	}}}
	if mutate != nil {
		mutate(&obj.Spec)
	}
	obj.Default()
	return &obj.Spec
}

func setRevision(name string) SetRevision {
	s := SetRevision{Name: name}
	for _, r := range []string{"frontend", "prefill", "decode", "decode-leader"} {
		s.Roles = append(s.Roles, RoleRevision{Role: r, Revision: r + "@" + name})
	}
	return s
}

// steadyReplicas observes every replica of spec running rev, all ready.
func steadyReplicas(spec *v1alpha1.PodCliqueSetSpec, rev string) []ReplicaObservation {
	pods := func(role string, n int32) []Unit {
		return steadyUnits(n, role+"@"+rev)
	}
	target := func(role string) *Target {
		return &Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: rev, UpdateRevision: role + "@" + rev, CurrentRevision: role + "@" + rev}
	}
	var out []ReplicaObservation
	for i := range *spec.Replicas {
		o := ReplicaObservation{Index: i, Revision: rev, CreatedAt: epoch,
			Cliques: []CliqueObservation{{Name: "frontend", Target: target("frontend"), Pods: pods("frontend", 3)},
				{Name: "prefill", Target: target("prefill"), Pods: pods("prefill", 3)}}}
		g := GroupObservation{Name: "decode", Target: target("decode")}
		for j := range int32(2) {
			g.Replicas = append(g.Replicas, GroupReplicaObservation{Index: j, Revision: "decode@" + rev, CreatedAt: epoch,
				Cliques: []CliqueObservation{{Name: "decode-leader", Pods: pods("decode-leader", 1)}}})
		}
		o.Groups = []GroupObservation{g}
		out = append(out, o)
	}
	return out
}

func planSet(t *testing.T, in SetInput) SetPlan {
	t.Helper()
	if in.Now.IsZero() {
		in.Now = epoch
	}
	plan, err := PlanSet(in)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func updatingIndices(p SetPlan) []int32 {
	var out []int32
	for _, r := range p.Replicas {
		if r.Updating {
			out = append(out, r.Index)
		}
	}
	return out
}

func condition(p SetPlan, typ v1alpha1.ConditionType) Condition {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return Condition{}
}

func targetOf(p SetPlan, replica int32, role string) *Target {
	for _, r := range p.Replicas {
		if r.Index != replica {
			continue
		}
		for _, c := range append(slices.Clone(r.Cliques), r.Groups...) {
			if c.Role == role {
				return c.Target
			}
		}
	}
	return nil
}

func capString(t *Target) string {
	if t == nil {
		return "no target"
	}
	if t.MaxUpdated == nil {
		return t.UpdateRevision + " uncapped"
	}
	return t.UpdateRevision + " cap " + strconv.Itoa(int(*t.MaxUpdated))
}

func TestRollingUpdate_SelectsUnscheduledThenBelowMinAvailableThenLowestIndex(t *testing.T) {
	spec := threeRoles(3, nil)
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	for _, tc := range []struct {
		name          string
		breakReplicas func(rs []ReplicaObservation)
		want          []int32
	}{
		{"all healthy: lowest index", func([]ReplicaObservation) {}, []int32{0}},
		{"replica 1 below minAvailable", func(rs []ReplicaObservation) {
			rs[1].Cliques[0].Pods[0].Available = false
		}, []int32{1}},
		{"replica 2 unscheduled beats replica 1 below minAvailable", func(rs []ReplicaObservation) {
			rs[1].Cliques[0].Pods[0].Available = false
			for i := range rs[2].Cliques[1].Pods {
				rs[2].Cliques[1].Pods[i].Scheduled, rs[2].Cliques[1].Pods[i].Ready, rs[2].Cliques[1].Pods[i].Available = false, false, false
			}
		}, []int32{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := steadyReplicas(spec, "v1")
			tc.breakReplicas(obs)
			plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs})
			if got := updatingIndices(plan); !slices.Equal(got, tc.want) {
				t.Fatalf("updating %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRollingUpdate_KeepsTheReplicaAlreadyUpdatingUntilItIsDone(t *testing.T) {
	spec := threeRoles(3, nil)
	obs := steadyReplicas(spec, "v1")
	obs[0].Cliques[0].Pods[0].Available = false // replica 0 would win a fresh selection
	prev := Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 2, StartedAt: epoch.Add(-time.Minute)}}}
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs, Previous: prev})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{2}) {
		t.Fatalf("updating %v, want [2]", got)
	}
	if got := plan.Status.Progress.UpdatingReplicas[0].StartedAt; !got.Equal(epoch.Add(-time.Minute)) {
		t.Fatalf("start time %s not kept", got)
	}
}

func TestRollingUpdate_TargetsLetOnlyTheSelectedReplicaMove(t *testing.T) {
	spec := threeRoles(2, nil)
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: steadyReplicas(spec, "v1")})
	for _, tc := range []struct {
		replica int32
		role    string
		want    string
	}{
		{0, "frontend", "frontend@v2 uncapped"},
		{0, "decode", "decode@v2 uncapped"},
		{1, "frontend", "frontend@v2 cap 0"},
		{1, "decode", "decode@v2 cap 0"},
	} {
		if got := capString(targetOf(plan, tc.replica, tc.role)); got != tc.want {
			t.Errorf("replica %d %s: %s, want %s", tc.replica, tc.role, got, tc.want)
		}
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonRollingUpdateInProgress {
		t.Fatalf("progressing %+v", c)
	}
}

// Role steps as targets: decode 1 -> prefill 1 -> prefill 100% -> decode 100%.
func TestRoleSteps_CapsFollowTheCurrentStep(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
			{Role: "decode", UpdateTo: intstr.FromInt32(1)},
			{Role: "prefill", UpdateTo: intstr.FromInt32(1)},
			{Role: "prefill", UpdateTo: intstr.FromString("100%")},
			{Role: "decode", UpdateTo: intstr.FromString("100%")},
		}}
	})
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	type caps struct{ frontend, prefill, decode string }
	for _, tc := range []struct {
		name       string
		decodeNew  int // decode group replicas at v2 and ready
		prefillNew int // prefill pods at v2 and ready
		step       int32
		reason     v1alpha1.ConditionReason
		want       caps
	}{
		{"start: one decode replica", 0, 0, 0, v1alpha1.ReasonRollingUpdateInProgress, caps{"frontend@v2 cap 0", "prefill@v2 cap 0", "decode@v2 cap 1"}},
		{"decode canary ready: one prefill pod", 1, 0, 1, v1alpha1.ReasonRollingUpdateInProgress, caps{"frontend@v2 cap 0", "prefill@v2 cap 1", "decode@v2 cap 1"}},
		{"prefill canary ready: all prefill", 1, 1, 2, v1alpha1.ReasonRollingUpdateInProgress, caps{"frontend@v2 cap 0", "prefill@v2 cap 3", "decode@v2 cap 1"}},
		{"prefill done: all decode", 1, 3, 3, v1alpha1.ReasonRollingUpdateInProgress, caps{"frontend@v2 cap 0", "prefill@v2 cap 3", "decode@v2 cap 2"}},
		{"all steps done: roles named in no step go", 2, 3, 4, v1alpha1.ReasonRollingUpdateInProgress, caps{"frontend@v2 uncapped", "prefill@v2 uncapped", "decode@v2 uncapped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := steadyReplicas(spec, "v1")
			for i := range tc.prefillNew {
				obs[0].Cliques[1].Pods[i].Revision = "prefill@v2"
			}
			for i := range tc.decodeNew {
				obs[0].Groups[0].Replicas[i].Revision = "decode@v2"
				obs[0].Groups[0].Replicas[i].Cliques[0].Pods[0].Revision = "decode-leader@v2"
			}
			plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs})
			got := caps{capString(targetOf(plan, 0, "frontend")), capString(targetOf(plan, 0, "prefill")), capString(targetOf(plan, 0, "decode"))}
			if got != tc.want {
				t.Fatalf("caps %+v, want %+v", got, tc.want)
			}
			if st := plan.Replicas[0].RoleStep; st == nil || st.Index != tc.step {
				t.Fatalf("role step %+v, want index %d", st, tc.step)
			}
		})
	}
}

func TestRoleSteps_WaitingForReadinessIsReported(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{{Role: "prefill", UpdateTo: intstr.FromInt32(1)}}}
	})
	obs := steadyReplicas(spec, "v1")
	obs[0].Cliques[1].Pods[0].Revision = "prefill@v2"
	obs[0].Cliques[1].Pods[0].Ready, obs[0].Cliques[1].Pods[0].Available = false, false
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs})
	c := condition(plan, v1alpha1.ConditionProgressing)
	if c.Reason != v1alpha1.ReasonRoleStepWaiting || !strings.Contains(c.Message, "role prefill") {
		t.Fatalf("progressing %+v, want RoleStepWaiting on prefill", c)
	}
}

func TestRoleSteps_APassedStepStaysPassedWhenAUnitFailsLater(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
			{Role: "decode", UpdateTo: intstr.FromInt32(1)}, {Role: "prefill", UpdateTo: intstr.FromInt32(1)}}}
	})
	obs := steadyReplicas(spec, "v1")
	obs[0].Groups[0].Replicas[0].Revision = "decode@v2"
	obs[0].Groups[0].Replicas[0].Cliques[0].Pods[0].Ready = false // the decode canary crashed after passing
	prev := Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 0, StartedAt: epoch, RoleStep: &RoleStepStatus{Index: 1}}}}
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs, Previous: prev})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 1" {
		t.Fatalf("prefill %s, want cap 1", got)
	}
}

func TestPartition_EqualToReplicasUpdatesNothing(t *testing.T) {
	spec := threeRoles(2, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: ptr.To[int32](2)}
	})
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: steadyReplicas(spec, "v1")})
	if got := updatingIndices(plan); len(got) != 0 {
		t.Fatalf("updating %v, want none", got)
	}
	for _, r := range []int32{0, 1} {
		if got := capString(targetOf(plan, r, "prefill")); got != "prefill@v2 cap 0" {
			t.Fatalf("replica %d prefill %s, want cap 0", r, got)
		}
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonPartitionReached {
		t.Fatalf("progressing %+v, want PartitionReached", c)
	}
	if plan.Status.CurrentRevision != "v1" {
		t.Fatalf("current revision %s must stay v1 while a partition holds replicas back", plan.Status.CurrentRevision)
	}
}

func TestPaused_FreezesUpdatedCountsAndReportsPaused(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true })
	obs := steadyReplicas(spec, "v1")
	obs[0].Cliques[1].Pods[0].Revision = "prefill@v2"
	obs[0].Cliques[1].Target = &Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: "v2", UpdateRevision: "prefill@v2", CurrentRevision: "prefill@v1"}
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 1" {
		t.Fatalf("prefill %s, want frozen at 1", got)
	}
	if got := capString(targetOf(plan, 0, "frontend")); got != "frontend@v1 cap 3" {
		t.Fatalf("frontend %s, want held at v1", got)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonPaused || c.Status != "Unknown" {
		t.Fatalf("progressing %+v, want Unknown/Paused", c)
	}
	if len(updatingIndices(plan)) != 0 {
		t.Fatal("nothing updates while paused")
	}
}

func TestReplicaRecreate_KeepsEveryChildOnItsReplicaRevision(t *testing.T) {
	spec := threeRoles(2, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.ReplicaRecreateStrategyType}
	})
	obs := steadyReplicas(spec, "v1")
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs})
	if want := []Delete{{Index: 0, Reason: ReasonUpdate}}; !slices.Equal(plan.Deletes, want) {
		t.Fatalf("deletes %v, want %v", plan.Deletes, want)
	}
	if got := capString(targetOf(plan, 1, "prefill")); got != "prefill@v1 uncapped" {
		t.Fatalf("replica 1 prefill %s: a ReplicaRecreate replica keeps its own revision", got)
	}
	// and its children replace nothing for an update: a pod whose revision label
	// someone else edited waits for its replica's turn, within the
	// PodCliqueSet's budget, instead of going within the clique's own
	if tg := targetOf(plan, 1, "prefill"); tg.Type != v1alpha1.OnDeleteStrategyType {
		t.Fatalf("replica 1 prefill target type %s, want OnDelete", tg.Type)
	}
	pol := Policy{Type: targetOf(plan, 1, "prefill").Type, Replicas: 2, UpdateRevision: "prefill-v1"}
	level, err := PlanLevel(pol, []Unit{
		{Index: 0, Revision: "prefill-v1", Scheduled: true, Ready: true, Available: true},
		{Index: 1, Revision: "relabelled", Scheduled: true, Ready: true, Available: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(level.Deletes) != 0 {
		t.Fatalf("the child deletes %v for an edited revision label", level.Deletes)
	}
}

// A ReplicaRecreate replica deleted for the update just before the pause is
// recreated on the update revision, not the old one, and stays in the progress
// until it is up; nothing else starts.
func TestReplicaRecreate_PauseLetsARecreationUnderWayFinish(t *testing.T) {
	spec := threeRoles(3, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.ReplicaRecreateStrategyType}
		s.Paused = true
	})
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	before := Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 0, StartedAt: epoch}}}
	obs := steadyReplicas(spec, "v1")
	obs[0].Terminating = true // deleted by the last plan before the pause
	plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs, Previous: before})
	if len(plan.Deletes) != 0 || len(plan.Creates) != 0 {
		t.Fatalf("while replica 0 terminates: creates %v deletes %v, want none", plan.Creates, plan.Deletes)
	}
	if got := plan.Status.Progress.UpdatingReplicas; len(got) != 1 || got[0].Index != 0 {
		t.Fatalf("updating replicas %+v, want replica 0 still under way", got)
	}
	// replica 0 is gone: it comes back on v2, and only it
	plan = planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs[1:], Previous: plan.Status.Progress})
	if want := []Create{{Index: 0, Revision: "v2"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
	if len(plan.Deletes) != 0 {
		t.Fatalf("deletes %v while paused", plan.Deletes)
	}
	// without a recreation under way the pause creates nothing on v2
	plan = planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs[1:], Previous: Progress{UpdateRevision: "v2", Paused: true}})
	if want := []Create{{Index: 0, Revision: "v1"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v (a replica deleted by hand while paused)", plan.Creates, want)
	}
}

func TestOnDelete_TargetsMoveAndTheOperatorsPartEndsAtOnce(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy = v1alpha1.PodCliqueSetUpdateStrategy{Type: v1alpha1.OnDeleteStrategyType}
	})
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: steadyReplicas(spec, "v1")})
	tg := targetOf(plan, 0, "prefill")
	if tg.Type != v1alpha1.OnDeleteStrategyType || capString(tg) != "prefill@v2 uncapped" {
		t.Fatalf("prefill target %+v", tg)
	}
	p := plan.Status.Progress
	if p.UpdateStartedAt.IsZero() || !p.UpdateEndedAt.Equal(p.UpdateStartedAt) {
		t.Fatalf("OnDelete progress %+v: want ended == started", p)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonWaitingForDeletion {
		t.Fatalf("progressing %+v", c)
	}
}

func TestPlanSet_CompleteRolloutMovesCurrentRevision(t *testing.T) {
	spec := threeRoles(2, nil)
	started := epoch.Add(-time.Hour)
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: steadyReplicas(spec, "v2"),
		Previous: Progress{UpdateRevision: "v2", UpdateStartedAt: started}})
	s := plan.Status
	if !s.Complete || s.CurrentRevision != "v2" || s.UpdatedReplicas != 2 || s.AvailableReplicas != 2 {
		t.Fatalf("status %+v", s)
	}
	if !s.Progress.UpdateStartedAt.Equal(started) || !s.Progress.UpdateEndedAt.Equal(epoch) {
		t.Fatalf("progress %+v", s.Progress)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonRolloutComplete {
		t.Fatalf("progressing %+v", c)
	}
	if c := condition(plan, v1alpha1.ConditionAvailable); c.Status != "True" || c.Reason != v1alpha1.ReasonMinimumReplicasAvailable {
		t.Fatalf("available %+v", c)
	}
}

// A rollout is complete once every live pod runs the update revision, with
// outdated pods still terminating: the operator has nothing left to do for
// them, and a Deployment's rollout completes the same way. Waiting for them
// held the end of every rollout with a surge back by the pods' grace period.
func TestPlanSet_RolloutCompletesWhileOutdatedPodsTerminate(t *testing.T) {
	spec := threeRoles(2, nil)
	obs := steadyReplicas(spec, "v2")
	frontend := &obs[0].Cliques[0]
	frontend.Pods = append(frontend.Pods,
		Unit{Index: 3, Revision: "frontend@v1", Surge: true, Terminating: true, Key: "surge"},
		Unit{Index: 1, Revision: "frontend@v1", Terminating: true, Key: "outdated"})
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs,
		Previous: Progress{UpdateRevision: "v2", UpdateStartedAt: epoch.Add(-time.Minute)}})
	if s := plan.Status; !s.Complete || s.CurrentRevision != "v2" || !s.Progress.UpdateEndedAt.Equal(epoch) {
		t.Fatalf("status %+v, want the rollout complete at v2 now", s)
	}
	units := frontend.Pods
	if s := levelStatus(3, "frontend@v2", units); !s.Complete || s.Replicas != 3 || s.SurgeReplicas != 0 {
		t.Fatalf("the frontend's status %+v, want complete with 3 live pods", s)
	}
	units[0].Terminating = false // an outdated pod still live is another matter
	units[0].Revision = "frontend@v1"
	if s := levelStatus(3, "frontend@v2", units); s.Complete {
		t.Fatalf("the frontend's status %+v, complete with a live outdated pod", s)
	}
}

func TestPlanSet_ScalesReplicasWithoutStartingARollout(t *testing.T) {
	spec := threeRoles(3, nil)
	obs := steadyReplicas(threeRoles(1, nil), "v1")
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v1")}, Replicas: obs})
	if want := []Create{{Index: 1, Revision: "v1"}, {Index: 2, Revision: "v1"}}; !slices.Equal(plan.Creates, want) {
		t.Fatalf("creates %v, want %v", plan.Creates, want)
	}
	if got := capString(targetOf(plan, 2, "frontend")); got != "frontend@v1 uncapped" {
		t.Fatalf("new replica frontend %s", got)
	}
}

func TestPlanSet_AvailableConditionFollowsMinAvailable(t *testing.T) {
	spec := threeRoles(3, nil)
	obs := steadyReplicas(spec, "v1")
	for _, r := range []int{0, 1} {
		obs[r].Cliques[0].Pods[0].Available = false // frontend minAvailable defaults to 3
	}
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v1")}, Replicas: obs})
	if c := condition(plan, v1alpha1.ConditionAvailable); c.Status != "False" || c.Reason != v1alpha1.ReasonMinimumReplicasUnavailable {
		t.Fatalf("available %+v", c)
	}
	// One replica with maxUnavailable 1 (the default): nothing available is not Available.
	one := threeRoles(1, nil)
	plan = planSet(t, SetInput{Spec: one, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v1")}})
	if c := condition(plan, v1alpha1.ConditionAvailable); c.Status != "False" {
		t.Fatalf("a PodCliqueSet of one replica with nothing running: available %+v", c)
	}
}

func TestPlanSet_ProgressDeadlineExceededAfterNoChange(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) { s.ProgressDeadlineSeconds = ptr.To[int32](60) })
	obs := steadyReplicas(spec, "v1")
	obs[0].Cliques[0].Pods[0].Revision = "frontend@v2"
	obs[0].Cliques[0].Pods[0].Ready, obs[0].Cliques[0].Pods[0].Available = false, false // never comes up
	in := SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs, Now: epoch}
	first := planSet(t, in)
	in.Previous, in.Now = first.Status.Progress, epoch.Add(61*time.Second)
	second := planSet(t, in)
	if c := condition(second, v1alpha1.ConditionProgressing); c.Status != "False" || c.Reason != v1alpha1.ReasonProgressDeadlineExceeded {
		t.Fatalf("progressing %+v, want ProgressDeadlineExceeded", c)
	}
}

func TestTrackProgress_OnlyARiseAboveTheHighestIsProgress(t *testing.T) {
	deadline := time.Minute
	best := ProgressCounts{Updated: 1, Ready: 3, Available: 3}
	last := epoch
	for _, tc := range []struct {
		name         string
		cur          ProgressCounts
		now          time.Time
		held         bool
		active       bool
		restart      bool
		wantLast     time.Time
		wantExceeded bool
	}{
		{"a unit updated: progress now", ProgressCounts{Updated: 2, Ready: 3, Available: 3}, epoch.Add(time.Hour), false, true, false, epoch.Add(time.Hour), false},
		{"no change within the deadline", best, epoch.Add(time.Minute), false, true, false, last, false},
		{"no change past the deadline", best, epoch.Add(time.Minute + time.Second), false, true, false, last, true},
		{"a pod lost readiness: no progress", ProgressCounts{Updated: 1, Ready: 2, Available: 2}, epoch.Add(2 * time.Minute), false, true, false, last, true},
		{"held: the clock stands", best, epoch.Add(time.Hour), true, true, false, last, false},
		{"no rollout running: the clock stands", best, epoch.Add(time.Hour), false, false, false, last, false},
		{"going on after a hold: the clock restarts", best, epoch.Add(time.Hour), false, true, true, epoch.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotLast, _, exceeded := TrackProgress(last, best, tc.cur, tc.now, tc.held, tc.active, tc.restart, deadline)
			if !gotLast.Equal(tc.wantLast) || exceeded != tc.wantExceeded {
				t.Fatalf("got %s %v, want %s %v", gotLast, exceeded, tc.wantLast, tc.wantExceeded)
			}
		})
	}
}

// A rollout that has ended, or is paused, plans the same progress each time
// it is looked at: the deadline clock stands, so a settled object's status
// does not change (and is not written) on every reconcile. Going on again
// restarts the clock, so the time paused never counts against the deadline.
func TestPlanSet_TheDeadlineClockStandsWhileNothingRolls(t *testing.T) {
	spec := threeRoles(2, func(s *v1alpha1.PodCliqueSetSpec) { s.ProgressDeadlineSeconds = ptr.To[int32](60) })
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	done := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: steadyReplicas(spec, "v2"), Now: epoch,
		Previous: Progress{UpdateRevision: "v2", UpdateStartedAt: epoch.Add(-time.Minute), LastProgressAt: epoch.Add(-time.Second)}})
	later := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: steadyReplicas(spec, "v2"), Now: epoch.Add(time.Hour), Previous: done.Status.Progress})
	if !reflect.DeepEqual(later.Status.Progress, done.Status.Progress) {
		t.Fatalf("an ended rollout looked at an hour later: progress %+v, was %+v", later.Status.Progress, done.Status.Progress)
	}

	paused := *spec.DeepCopy()
	paused.Paused = true
	obs := firstDone(&paused, 1)
	first := planSet(t, SetInput{Spec: &paused, Revisions: revs, Replicas: obs, Now: epoch,
		Previous: Progress{UpdateRevision: "v2", UpdateStartedAt: epoch.Add(-time.Minute), LastProgressAt: epoch.Add(-time.Second)}})
	second := planSet(t, SetInput{Spec: &paused, Revisions: revs, Replicas: obs, Now: epoch.Add(time.Hour), Previous: first.Status.Progress})
	if !reflect.DeepEqual(second.Status.Progress, first.Status.Progress) {
		t.Fatalf("a paused rollout looked at an hour later: progress %+v, was %+v", second.Status.Progress, first.Status.Progress)
	}
	resumed := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs, Now: epoch.Add(2 * time.Hour), Previous: second.Status.Progress})
	if at := resumed.Status.Progress.LastProgressAt; !at.Equal(epoch.Add(2*time.Hour)) || resumed.Status.DeadlineExceeded {
		t.Fatalf("resumed after an hour paused: last progress %s, exceeded %v; want the clock restarted now", at, resumed.Status.DeadlineExceeded)
	}
}

// A pod flapping between ready and not ready must not keep a stuck rollout
// from reaching its deadline: its readiness coming back is no progress.
func TestPlanSet_AFlappingPodDoesNotHoldOffTheDeadline(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) { s.ProgressDeadlineSeconds = ptr.To[int32](60) })
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	obs := steadyReplicas(spec, "v1")
	var prev Progress
	var exceeded bool
	for i := range 20 { // 20 plans 10 s apart: 200 s, the deadline is 60 s
		pod := &obs[0].Cliques[0].Pods[1]
		pod.Ready, pod.Available = i%2 == 0, i%2 == 0
		plan, err := PlanSet(SetInput{Spec: spec, Revisions: revs, Replicas: obs, Previous: prev, Now: epoch.Add(time.Duration(i) * 10 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		prev, exceeded = plan.Status.Progress, plan.Status.DeadlineExceeded
		if exceeded {
			break
		}
	}
	if !exceeded {
		t.Fatal("a rollout whose only change is a pod flapping never passed its progress deadline")
	}
}

func TestPlanSet_RejectsAStepForAnUnknownRole(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{{Role: "nope", UpdateTo: intstr.FromInt32(1)}}}
	})
	if _, err := PlanSet(SetInput{Spec: spec, Now: epoch}); err == nil {
		t.Fatal("want an error")
	}
}

// Creating a PodCliqueSet, or scaling it, is not a rollout: Progressing says so.
func TestPlanSet_CreationAndScalingAreNotReportedAsARollout(t *testing.T) {
	spec := threeRoles(2, nil)
	v1 := setRevision("v1")
	plan, err := PlanSet(SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: v1}, Now: epoch})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonScaling {
		t.Fatalf("Progressing reason on creation = %s, want %s", c.Reason, v1alpha1.ReasonScaling)
	}
	plan, err = PlanSet(SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: setRevision("v2")}, Now: epoch})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonRollingUpdateInProgress {
		t.Fatalf("Progressing reason in a rollout = %s, want %s", c.Reason, v1alpha1.ReasonRollingUpdateInProgress)
	}
}

// An HPA scaling a child through /scale moves the child's spec.replicas away from
// the template: that is scaling, never a rollout, and the child is judged by its
// own replicas.
func TestPlanSet_AChildScaledThroughScaleIsJudgedByItsOwnReplicas(t *testing.T) {
	spec := threeRoles(2, nil)
	v1 := setRevision("v1")
	obs := steadyReplicas(spec, "v1")
	obs[0].Cliques[0].SpecReplicas = 5
	obs[0].Cliques[0].Pods = steadyUnits(4, "frontend@v1") // the fifth is still coming
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: v1}, Replicas: obs})
	if got := updatingIndices(plan); len(got) != 0 || len(plan.Status.Progress.UpdatingReplicas) != 0 {
		t.Fatalf("a replica scaling out is reported updating: %v", got)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason == v1alpha1.ReasonRollingUpdateInProgress {
		t.Fatalf("Progressing %+v while only scaling", c)
	}
	plan = planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: setRevision("v2")}, Replicas: steadyReplicas(spec, "v2")})
	if !plan.Status.Complete {
		t.Fatal("baseline: a rollout with every replica at v2 must be complete")
	}
	all := steadyReplicas(spec, "v2")
	all[1].Cliques[0].SpecReplicas = 5
	all[1].Cliques[0].Pods = steadyUnits(5, "frontend@v2")
	plan = planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: setRevision("v2")}, Replicas: all})
	if !plan.Status.Complete || plan.Status.CurrentRevision != "v2" {
		t.Fatalf("a rollout whose scaled child runs 5 of 5 pods at v2 is not complete: %+v", plan.Status)
	}
}

// The spec goes back to the current revision before a rollout finished (a
// rollback mid-rollout): the units already on the abandoned revision are rolled
// back like any update, not left capped where they are.
func TestRollingUpdate_BackToTheCurrentRevisionMidRolloutRollsTheUpdatedUnitsBack(t *testing.T) {
	spec := threeRoles(2, nil)
	v1 := setRevision("v1")
	obs := steadyReplicas(spec, "v1")
	obs[0] = steadyReplicas(spec, "v2")[0] // replica 0 finished on v2 before the change
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: v1, History: []SetRevision{setRevision("v2")}}, Replicas: obs,
		Previous: Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 1}}}})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{0}) {
		t.Fatalf("updating replicas %v, want [0]: the replica on the abandoned revision", got)
	}
	if got := capString(targetOf(plan, 0, "frontend")); !strings.HasPrefix(got, "frontend@v1") || got == "frontend@v1 cap 0" {
		t.Fatalf("replica 0 frontend target %s: it must be allowed back to v1", got)
	}
	if plan.Status.Complete {
		t.Fatal("complete while replica 0 runs the abandoned revision")
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != v1alpha1.ReasonRollingUpdateInProgress {
		t.Fatalf("Progressing %+v, want %s", c, v1alpha1.ReasonRollingUpdateInProgress)
	}
}

// While paused, a pod of an updated role that is deleted by hand comes back on
// the revision it had: the frozen cap does not shrink with the deletion.
func TestPaused_ADeletedUpdatedUnitComesBackUpdated(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true })
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	obs := steadyReplicas(spec, "v1")
	prefill := &obs[0].Cliques[1]
	for i := range prefill.Pods[:2] {
		prefill.Pods[i].Revision = "prefill@v2"
	}
	prefill.Target = &Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: "v2", UpdateRevision: "prefill@v2", CurrentRevision: "prefill@v1", MaxUpdated: ptr.To[int32](2)}
	// pod 0 (updated) was deleted and is gone; the previous plan was paused
	prefill.Pods = prefill.Pods[1:]
	plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs, Previous: Progress{Paused: true, UpdateRevision: "v2"}})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 2" {
		t.Fatalf("prefill %s, want the cap kept at 2 so the deleted pod comes back on v2", got)
	}
	// The first paused plan freezes at what it sees, the empty index included.
	plan = planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs, Previous: Progress{UpdateRevision: "v2"}})
	if got := capString(targetOf(plan, 0, "prefill")); got != "prefill@v2 cap 2" {
		t.Fatalf("prefill %s on the first paused plan, want frozen at 2", got)
	}
	if !plan.Status.Progress.Paused {
		t.Fatal("a paused plan must say so in its progress")
	}
}

// A replacement under way when the pause arrives (an outdated pod deleted for
// the update, its index not refilled yet) finishes on the update revision: the
// first paused plan freezes the cap with that index counted, within the cap it
// was deleted under. An index emptied beyond that cap comes back old.
func TestPaused_AReplacementUnderWayFinishesOnTheUpdateRevision(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true })
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	for _, tc := range []struct {
		name string
		cap  *int32
		want string
	}{
		{"no cap", nil, "prefill@v2 cap 2"},
		{"cap with room", ptr.To[int32](2), "prefill@v2 cap 2"},
		{"cap reached", ptr.To[int32](1), "prefill@v2 cap 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := steadyReplicas(spec, "v1")
			prefill := &obs[0].Cliques[1]
			prefill.Pods[0].Revision = "prefill@v2"
			prefill.Pods[1].Terminating = true // outdated, deleted for the update
			prefill.Target = &Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: "v2", UpdateRevision: "prefill@v2", CurrentRevision: "prefill@v1", MaxUpdated: tc.cap}
			plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs, Previous: Progress{UpdateRevision: "v2"}})
			if got := capString(targetOf(plan, 0, "prefill")); got != tc.want {
				t.Fatalf("prefill %s on the first paused plan, want %s", got, tc.want)
			}
			// The next paused plan keeps the frozen cap while the old pod is gone.
			next := obs
			next[0].Cliques[1].Pods = slices.Delete(slices.Clone(prefill.Pods), 1, 2)
			next[0].Cliques[1].Target = targetOf(plan, 0, "prefill")
			again := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: next, Previous: plan.Status.Progress})
			if got := capString(targetOf(again, 0, "prefill")); got != tc.want {
				t.Fatalf("prefill %s on the next paused plan, want %s", got, tc.want)
			}
		})
	}
}

// A rollout is never reported complete while a pod still runs the old
// revision, even when every child's spec already names the new one (children
// rewritten, pods not yet replaced): completeness is judged from the units.
func TestPlanSet_NotCompleteWhileAnyUnitRunsTheOldRevision(t *testing.T) {
	spec := threeRoles(2, nil)
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	obs := steadyReplicas(spec, "v2")
	// every child names v2; one pod of replica 1 is still on v1
	obs[1].Cliques[1].Pods[2].Revision = "prefill@v1"
	plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs})
	if plan.Status.Complete || plan.Status.CurrentRevision == "v2" {
		t.Fatalf("complete %v, current revision %s with a pod still on v1", plan.Status.Complete, plan.Status.CurrentRevision)
	}
	if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason == v1alpha1.ReasonRolloutComplete {
		t.Fatalf("Progressing %+v with a pod still on v1", c)
	}
}

// A replica coming up on a revision that is both current and update has no
// unit to hold back: its children's targets carry no cap. A cap that followed
// the updated count would change with every pod made, and every change is a
// write of the child's spec.
func TestPlanSet_AReplicaComingUpOnTheCurrentRevisionIsNotCapped(t *testing.T) {
	spec := threeRoles(1, nil)
	v1 := setRevision("v1")
	obs := steadyReplicas(spec, "v1")
	obs[0].Cliques[0].Pods = obs[0].Cliques[0].Pods[:1] // 1 of 3 frontend pods so far
	obs[0].Cliques[0].Pods[0].Ready, obs[0].Cliques[0].Pods[0].Available = false, false
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: v1, Update: v1}, Replicas: obs})
	for _, role := range []string{"frontend", "prefill", "decode"} {
		if got := capString(targetOf(plan, 0, role)); got != role+"@v1 uncapped" {
			t.Errorf("%s: %s, want %s@v1 uncapped", role, got, role)
		}
	}
}
