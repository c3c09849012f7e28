package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// midRolloutPods is a PodClique of n pods half way through an update: the lower
// half updated, one pod terminating, one pod not ready.
func midRolloutPods(n int32) []Unit {
	units := make([]Unit, n)
	for i := range n {
		rev := "old"
		if i < n/2 {
			rev = "new"
		}
		units[i] = Unit{Index: i, Revision: rev, Scheduled: true, Ready: true, Available: true, CreatedAt: epoch.Add(time.Duration(n-i) * time.Second)}
	}
	units[n/2].Terminating = true
	units[n-1].Ready, units[n-1].Available = false, false
	return units
}

func BenchmarkPlanLevel_PodClique(b *testing.B) {
	for _, limits := range []struct {
		name               string
		unavailable, surge intstr.IntOrString
	}{
		{"maxUnavailable=1,maxSurge=0", intstr.FromInt32(1), intstr.FromInt32(0)},
		{"maxUnavailable=25%,maxSurge=25%", intstr.FromString("25%"), intstr.FromString("25%")},
	} {
		for _, n := range []int32{10, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/pods=%d", limits.name, n), func(b *testing.B) {
				units := midRolloutPods(n)
				p := Policy{Replicas: n, MaxUnavailable: limits.unavailable, MaxSurge: limits.surge, UpdateRevision: "new", CurrentRevision: "old"}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := PlanLevel(p, units); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPlanTree_PodCliqueSet plans a PodCliqueSet of 100 replicas with three
// roles (a frontend clique of 3 pods, prefill and decode scaling groups of 2
// replicas of a leader and 2 workers), replica 0 half way through its update.
func BenchmarkPlanTree_PodCliqueSet(b *testing.B) {
	replicas := int32(100)
	group := func(name string) v1alpha1.PodCliqueScalingGroupConfig {
		return v1alpha1.PodCliqueScalingGroupConfig{Name: name, Replicas: 2, MinAvailable: ptr.To[int32](1), CliqueNames: []string{name + "-leader", name + "-worker"}}
	}
	obj := v1alpha1.PodCliqueSet{Spec: v1alpha1.PodCliqueSetSpec{Replicas: &replicas, Template: v1alpha1.PodCliqueSetTemplateSpec{
		Cliques: []v1alpha1.PodCliqueTemplateSpec{{Name: "frontend", Replicas: 3},
			{Name: "prefill-leader", Replicas: 1}, {Name: "prefill-worker", Replicas: 2},
			{Name: "decode-leader", Replicas: 1}, {Name: "decode-worker", Replicas: 2}},
		PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{group("prefill"), group("decode")},
	}}}
	obj.Default()
	rev := func(name string) SetRevision {
		s := SetRevision{Name: name}
		for _, r := range []string{"frontend", "prefill", "decode", "prefill-leader", "prefill-worker", "decode-leader", "decode-worker"} {
			s.Roles = append(s.Roles, RoleRevision{Role: r, Revision: r + "@" + name})
		}
		return s
	}
	v1, v2 := rev("v1"), rev("v2")
	pods := func(role, r string, n int32) []Unit {
		var out []Unit
		for i := range n {
			out = append(out, Unit{Index: i, Revision: role + "@" + r, Scheduled: true, Ready: true, Available: true, CreatedAt: epoch})
		}
		return out
	}
	target := func(role string) *Target {
		return &Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: "v1", UpdateRevision: role + "@v1", CurrentRevision: role + "@v1"}
	}
	var obs []ReplicaObservation
	for i := range replicas {
		r := "v1"
		o := ReplicaObservation{Index: i, Revision: "v1", CreatedAt: epoch,
			Cliques: []CliqueObservation{{Name: "frontend", Target: target("frontend"), Pods: pods("frontend", r, 3)}}}
		for _, g := range []string{"prefill", "decode"} {
			gobs := GroupObservation{Name: g, Target: target(g)}
			for j := range int32(2) {
				gr := r
				if i == 0 && j == 0 {
					gr = "v2"
				}
				gobs.Replicas = append(gobs.Replicas, GroupReplicaObservation{Index: j, Revision: g + "@" + gr, CreatedAt: epoch,
					Cliques: []CliqueObservation{{Name: g + "-leader", Pods: pods(g+"-leader", gr, 1)}, {Name: g + "-worker", Pods: pods(g+"-worker", gr, 2)}}})
			}
			o.Groups = append(o.Groups, gobs)
		}
		obs = append(obs, o)
	}
	in := SetInput{Spec: &obj.Spec, Revisions: Revisions{Current: v1, Update: v2}, Replicas: obs, Now: epoch,
		Previous: Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 0, StartedAt: epoch}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PlanTree(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaseline_SortPodsOldestFirst is the yardstick for the planner figures:
// sorting the same pods oldest-first, which any controller choosing pods to
// replace does at least once per reconcile. `make bench` prints the planner's
// time as a multiple of it.
func BenchmarkBaseline_SortPodsOldestFirst(b *testing.B) {
	for _, n := range []int32{10, 1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			units := midRolloutPods(n)
			work := make([]Unit, len(units))
			b.ReportAllocs()
			for b.Loop() {
				copy(work, units)
				slices.SortFunc(work, func(x, y Unit) int { return x.CreatedAt.Compare(y.CreatedAt) })
			}
		})
	}
}
