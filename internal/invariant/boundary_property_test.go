package invariant

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// boundarySpec is the user's shape, small: a clique api of 3 pods beside a
// scaling group kv of 2 replicas of one leader pod, with maxSurge 1 on both.
func boundarySpec(replicas int32, pods v1alpha1.PodReplacementPolicy, groups v1alpha1.ReplicaReplacementPolicy) *v1alpha1.PodCliqueSetSpec {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	obj := v1alpha1.PodCliqueSet{Spec: v1alpha1.PodCliqueSetSpec{Replicas: &replicas, PodReplacementPolicy: pods, ReplicaReplacementPolicy: groups,
		Template: v1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []v1alpha1.PodCliqueTemplateSpec{{Name: "api", Replicas: 3, UpdateStrategy: &v1alpha1.ComponentUpdateStrategy{MaxSurge: &one, MaxUnavailable: &zero}},
				{Name: "kv-leader", Replicas: 1}},
			PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{{Name: "kv", Replicas: 2, CliqueNames: []string{"kv-leader"},
				UpdateStrategy: &v1alpha1.ComponentUpdateStrategy{MaxSurge: &one, MaxUnavailable: &zero}}},
		}}}
	obj.Default()
	return &obj.Spec
}

func boundaryRevision(name string) rollout.SetRevision {
	s := rollout.SetRevision{Name: name}
	for _, r := range []string{"api", "kv", "kv-leader"} {
		s.Roles = append(s.Roles, rollout.RoleRevision{Role: r, Revision: r + "@" + name})
	}
	return s
}

// PlanSet never starts a PCS replica while another one still has a surge
// unit that holds it back (CheckReplicaBoundary), over random replicas at
// random revisions with random surge units left, both replacement policies
// and with or without the progress of the last plan.
func TestPlanSet_NeverStartsAReplicaBesideASurgeUnitThatHoldsIt(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		podPolicy := rapid.SampledFrom([]v1alpha1.PodReplacementPolicy{v1alpha1.TerminationStarted, v1alpha1.TerminationComplete}).Draw(t, "podReplacementPolicy")
		groupPolicy := rapid.SampledFrom([]v1alpha1.ReplicaReplacementPolicy{v1alpha1.Immediate, v1alpha1.PostTermination}).Draw(t, "replicaReplacementPolicy")
		n := int32(rapid.IntRange(2, 3).Draw(t, "replicas"))
		spec := boundarySpec(n, podPolicy, groupPolicy)
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		pod := func(index int32, rev string, surge bool) rollout.Unit {
			u := rollout.Unit{Index: index, Revision: rev, Surge: surge, CreatedAt: epoch, Scheduled: true}
			switch rapid.IntRange(0, 3).Draw(t, "pod state") {
			case 0:
				u.Terminating = true
			case 1:
			default:
				u.Ready, u.Available = true, true
			}
			return u
		}
		var obs []rollout.ReplicaObservation
		var left []SurgeLeft
		// only the replica updating surges: at most one holds surge units
		holder := int32(rapid.IntRange(-1, int(n)-1).Draw(t, "replica with surge units"))
		for r := range n {
			rev := rapid.SampledFrom([]string{"v1", "v2"}).Draw(t, "revision")
			o := rollout.ReplicaObservation{Index: r, Revision: rev, CreatedAt: epoch}
			api := rollout.CliqueObservation{Name: "api"}
			for i := range int32(3) {
				u := pod(i, "api@"+rev, false)
				u.Terminating, u.Ready, u.Available = false, true, true
				api.Pods = append(api.Pods, u)
			}
			kv := rollout.GroupObservation{Name: "kv"}
			for j := range int32(2) {
				kv.Replicas = append(kv.Replicas, rollout.GroupReplicaObservation{Index: j, Revision: "kv@" + rev, CreatedAt: epoch,
					Cliques: []rollout.CliqueObservation{{Name: "kv-leader", Pods: []rollout.Unit{{Index: 0, Revision: "kv-leader@" + rev, Scheduled: true, Ready: true, Available: true, CreatedAt: epoch}}}}})
			}
			if r == holder && rapid.Bool().Draw(t, "a surge pod left") {
				u := pod(3, "api@v2", true)
				api.Pods = append(api.Pods, u)
				left = append(left, surgeLeftOf(r, "surge pod 3 of api", []rollout.Unit{u}, podPolicy == v1alpha1.TerminationComplete))
			}
			if r == holder && rapid.Bool().Draw(t, "a surge group replica left") {
				var pods []rollout.Unit
				for range rapid.IntRange(1, 2).Draw(t, "its pods") {
					pods = append(pods, pod(int32(len(pods)), "kv-leader@v2", false))
				}
				kv.Replicas = append(kv.Replicas, rollout.GroupReplicaObservation{Index: 2, Revision: "kv@v2", Surge: true, CreatedAt: epoch,
					Terminating: rapid.Bool().Draw(t, "its PodCliques terminating"),
					Cliques:     []rollout.CliqueObservation{{Name: "kv-leader", Pods: pods}}})
				left = append(left, surgeLeftOf(r, "surge replica 2 of kv", pods, groupPolicy == v1alpha1.PostTermination))
			}
			o.Cliques, o.Groups = []rollout.CliqueObservation{api}, []rollout.GroupObservation{kv}
			obs = append(obs, o)
		}
		var prev rollout.Progress
		if rapid.Bool().Draw(t, "progress kept") {
			prev = rollout.Progress{UpdateRevision: "v2", UpdatingReplicas: []rollout.ReplicaProgress{{Index: int32(rapid.IntRange(0, int(n)-1).Draw(t, "updating")), StartedAt: epoch}}}
		}
		plan, err := rollout.PlanSet(rollout.SetInput{Spec: spec, Revisions: rollout.Revisions{Current: boundaryRevision("v1"), Update: boundaryRevision("v2")},
			Replicas: obs, Previous: prev, Now: epoch})
		if err != nil {
			t.Fatal(err)
		}
		for _, rp := range plan.Replicas {
			kept := slices.ContainsFunc(prev.UpdatingReplicas, func(p rollout.ReplicaProgress) bool { return p.Index == rp.Index })
			if !rp.Updating || kept {
				continue
			}
			if vs := CheckReplicaBoundary(rp.Index, "selected to update", left); len(vs) > 0 {
				t.Fatalf("%v", vs)
			}
		}
	})
}

func surgeLeftOf(replica int32, unit string, pods []rollout.Unit, wait bool) SurgeLeft {
	s := SurgeLeft{Replica: replica, Unit: unit, WaitsForTermination: wait}
	for _, p := range pods {
		if p.Terminating {
			s.Terminating++
		} else {
			s.Live++
		}
	}
	return s
}

// PlanSet never lets a role step start while the role of the step before it
// still has a surge unit that holds it back (CheckRoleStepBoundary): the
// replica updating has its first step's role all updated and ready, with or
// without a surge unit left (live or terminating pods), under both
// replacement policies, with the steps in either order and with or without
// the progress of the last plan; the second role's cap must not allow an
// updated unit while that unit holds.
func TestPlanSet_NeverStartsARoleStepBesideTheLastStepsSurgeUnit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		podPolicy := rapid.SampledFrom([]v1alpha1.PodReplacementPolicy{v1alpha1.TerminationStarted, v1alpha1.TerminationComplete}).Draw(t, "podReplacementPolicy")
		groupPolicy := rapid.SampledFrom([]v1alpha1.ReplicaReplacementPolicy{v1alpha1.Immediate, v1alpha1.PostTermination}).Draw(t, "replicaReplacementPolicy")
		spec := boundarySpec(1, podPolicy, groupPolicy)
		first, second := "kv", "api"
		if rapid.Bool().Draw(t, "api first") {
			first, second = second, first
		}
		all := intstr.FromString("100%")
		spec.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{{Role: first, UpdateTo: all}, {Role: second, UpdateTo: all}}}
		steps, err := Steps(spec)
		if err != nil {
			t.Fatal(err)
		}
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		ready := func(index int32, rev string) rollout.Unit {
			return rollout.Unit{Index: index, Revision: rev, Scheduled: true, Ready: true, Available: true, CreatedAt: epoch}
		}
		surgePod := func(index int32, rev string) rollout.Unit {
			u := ready(index, rev)
			switch rapid.IntRange(0, 2).Draw(t, "surge pod state") {
			case 0:
				u.Terminating = true
			case 1:
				u.Ready, u.Available = false, false
			}
			return u
		}
		at := func(role string) string {
			if role == first {
				return "v2"
			}
			return "v1"
		}
		api := rollout.CliqueObservation{Name: "api"}
		for i := range int32(3) {
			api.Pods = append(api.Pods, ready(i, "api@"+at("api")))
		}
		kv := rollout.GroupObservation{Name: "kv"}
		for j := range int32(2) {
			kv.Replicas = append(kv.Replicas, rollout.GroupReplicaObservation{Index: j, Revision: "kv@" + at("kv"), CreatedAt: epoch,
				Cliques: []rollout.CliqueObservation{{Name: "kv-leader", Pods: []rollout.Unit{ready(0, "kv-leader@"+at("kv"))}}}})
		}
		var left []SurgeLeft
		if rapid.Bool().Draw(t, "a surge unit left") {
			switch first {
			case "api":
				u := surgePod(3, "api@v2")
				u.Surge = true
				api.Pods = append(api.Pods, u)
				s := surgeLeftOf(0, "surge pod 3 of api", []rollout.Unit{u}, podPolicy == v1alpha1.TerminationComplete)
				s.Role = "api"
				left = append(left, s)
			default:
				var pods []rollout.Unit
				for range rapid.IntRange(1, 2).Draw(t, "its pods") {
					pods = append(pods, surgePod(int32(len(pods)), "kv-leader@v2"))
				}
				kv.Replicas = append(kv.Replicas, rollout.GroupReplicaObservation{Index: 2, Revision: "kv@v2", Surge: true, CreatedAt: epoch,
					Terminating: rapid.Bool().Draw(t, "its PodCliques terminating"),
					Cliques:     []rollout.CliqueObservation{{Name: "kv-leader", Pods: pods}}})
				s := surgeLeftOf(0, "surge replica 2 of kv", pods, groupPolicy == v1alpha1.PostTermination)
				s.Role = "kv"
				left = append(left, s)
			}
		}
		obs := []rollout.ReplicaObservation{{Index: 0, Revision: "v1", CreatedAt: epoch,
			Cliques: []rollout.CliqueObservation{api}, Groups: []rollout.GroupObservation{kv}}}
		var prev rollout.Progress
		if rapid.Bool().Draw(t, "progress kept") {
			step := &rollout.RoleStepStatus{Index: int32(rapid.IntRange(0, 1).Draw(t, "step kept")), Role: first}
			prev = rollout.Progress{UpdateRevision: "v2", UpdatingReplicas: []rollout.ReplicaProgress{{Index: 0, StartedAt: epoch, RoleStep: step}}}
			if step.Index == 1 {
				// a step once passed stays passed: only a plan that saw
				// the boundary clear could have kept it
				left = nil
			}
		}
		plan, err := rollout.PlanSet(rollout.SetInput{Spec: spec, Revisions: rollout.Revisions{Current: boundaryRevision("v1"), Update: boundaryRevision("v2")},
			Replicas: obs, Previous: prev, Now: epoch})
		if err != nil {
			t.Fatal(err)
		}
		for _, rp := range plan.Replicas {
			for _, ct := range slices.Concat(rp.Cliques, rp.Groups) {
				if ct.Role != second || ct.Target == nil {
					continue
				}
				allowed := RoleReplicas(spec, second)
				if ct.Target.MaxUpdated != nil {
					allowed = *ct.Target.MaxUpdated
				}
				if allowed == 0 {
					continue // its step has not started
				}
				if vs := CheckRoleStepBoundary(steps, rp.Index, second, allowed, "allowed by the plan", left); len(vs) > 0 {
					t.Fatalf("%v (step %+v, target %+v)", vs, rp.RoleStep, *ct.Target)
				}
			}
		}
	})
}
