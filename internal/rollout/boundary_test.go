package rollout

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// replicaZeroUpdated is the user's case one moment after replica 0 finished
// its units: every unit of replica 0 runs v2 and is available, replica 1 still
// runs v1, and replica 0 still has a surge unit whose objects are going.
func replicaZeroUpdated(spec *v1alpha1.PodCliqueSetSpec) []ReplicaObservation {
	obs := steadyReplicas(spec, "v1")
	for i := range obs[0].Cliques {
		c := &obs[0].Cliques[i]
		for j := range c.Pods {
			c.Pods[j].Revision = c.Name + "@v2"
		}
	}
	for i := range obs[0].Groups[0].Replicas {
		g := &obs[0].Groups[0].Replicas[i]
		g.Revision = "decode@v2"
		g.Cliques[0].Pods[0].Revision = "decode-leader@v2"
	}
	return obs
}

// surgeGroupReplica is decode's surge replica 2 of replica 0, its member
// PodCliques terminating, with its pods live or terminating.
func surgeGroupReplica(podsTerminating bool) GroupReplicaObservation {
	pod := Unit{Index: 0, Revision: "decode-leader@v2", Scheduled: true, Ready: !podsTerminating, Available: !podsTerminating, Terminating: podsTerminating}
	return GroupReplicaObservation{Index: 2, Revision: "decode@v2", Surge: true, Terminating: true, CreatedAt: epoch,
		Cliques: []CliqueObservation{{Name: "decode-leader", Pods: []Unit{pod}}}}
}

// surgePod is frontend's surge pod 3 of replica 0.
func surgePod(terminating bool) Unit {
	return Unit{Index: 3, Revision: "frontend@v2", Surge: true, Scheduled: true, Ready: !terminating, Available: !terminating, Terminating: terminating, CreatedAt: epoch}
}

// The boundary rule at the PodCliqueSet level: replica 1 starts only when
// replica 0 has no surge unit left with a live pod, and, where the policy
// waits for termination, no terminating one. Before the rule, replica 1 started
// as soon as replica 0's surge unit was marked for deletion (its objects
// terminating), while its pods still ran.
func TestRollingUpdate_NextReplicaStartsOnlyWhenTheSurgeUnitsPodsAreGone(t *testing.T) {
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	prev := Progress{UpdateRevision: "v2", UpdatingReplicas: []ReplicaProgress{{Index: 0, StartedAt: epoch}}}
	for _, tc := range []struct {
		name   string
		mutate func(s *v1alpha1.PodCliqueSetSpec)
		left   func(o *ReplicaObservation)
		want   int32 // the replica updating
	}{
		{"nothing left: replica 1", nil, func(*ReplicaObservation) {}, 1},
		{"surge group replica terminating, its pods live: replica 0", nil, func(o *ReplicaObservation) {
			o.Groups[0].Replicas = append(o.Groups[0].Replicas, surgeGroupReplica(false))
		}, 0},
		{"surge group replica's pods terminating, Immediate: replica 1", nil, func(o *ReplicaObservation) {
			o.Groups[0].Replicas = append(o.Groups[0].Replicas, surgeGroupReplica(true))
		}, 1},
		{"surge group replica's pods terminating, PostTermination: replica 0", func(s *v1alpha1.PodCliqueSetSpec) {
			s.ReplicaReplacementPolicy = v1alpha1.PostTermination
		}, func(o *ReplicaObservation) {
			o.Groups[0].Replicas = append(o.Groups[0].Replicas, surgeGroupReplica(true))
		}, 0},
		{"surge pod terminating, TerminationStarted: replica 1", nil, func(o *ReplicaObservation) {
			o.Cliques[0].Pods = append(o.Cliques[0].Pods, surgePod(true))
		}, 1},
		{"surge pod terminating, TerminationComplete: replica 0", func(s *v1alpha1.PodCliqueSetSpec) {
			s.PodReplacementPolicy = v1alpha1.TerminationComplete
		}, func(o *ReplicaObservation) {
			o.Cliques[0].Pods = append(o.Cliques[0].Pods, surgePod(true))
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := threeRoles(2, tc.mutate)
			obs := replicaZeroUpdated(spec)
			tc.left(&obs[0])
			for _, p := range []Progress{prev, {}} { // with and without the progress kept
				plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs, Previous: p})
				if got := updatingIndices(plan); !slices.Equal(got, []int32{tc.want}) {
					t.Fatalf("previous %+v: updating %v, want [%d]", p.UpdatingReplicas, got, tc.want)
				}
				if got := capString(targetOf(plan, 1, "decode")); tc.want == 0 && got != "decode@v2 cap 0" {
					t.Fatalf("replica 1 decode %s while replica 0 ends, want cap 0", got)
				}
				c := condition(plan, v1alpha1.ConditionProgressing)
				if tc.want == 0 && !strings.Contains(c.Message, "replica 0 waits for surge") {
					t.Fatalf("progressing %+v does not say what replica 0 waits for", c)
				}
			}
		})
	}
}

// The boundary rule between role steps: the step after decode → 1 starts
// only when decode's surge replica has no live pod.
func TestRoleSteps_NextStepStartsOnlyWhenTheSurgeUnitsPodsAreGone(t *testing.T) {
	spec := threeRoles(1, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
			{Role: "decode", UpdateTo: intstr.FromInt32(1)}, {Role: "prefill", UpdateTo: intstr.FromInt32(1)}}}
		s.ReplicaReplacementPolicy = v1alpha1.PostTermination
	})
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	for _, tc := range []struct {
		name    string
		surge   []GroupReplicaObservation
		prefill string
		reason  v1alpha1.ConditionReason
	}{
		{"surge replica's pods live", []GroupReplicaObservation{surgeGroupReplica(false)}, "prefill@v2 cap 0", v1alpha1.ReasonRoleStepWaiting},
		{"surge replica's pods terminating (PostTermination)", []GroupReplicaObservation{surgeGroupReplica(true)}, "prefill@v2 cap 0", v1alpha1.ReasonRoleStepWaiting},
		{"surge replica gone", nil, "prefill@v2 cap 1", v1alpha1.ReasonRollingUpdateInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := steadyReplicas(spec, "v1")
			g := &obs[0].Groups[0]
			g.Replicas[0].Revision, g.Replicas[0].Cliques[0].Pods[0].Revision = "decode@v2", "decode-leader@v2"
			g.Replicas = append(g.Replicas, tc.surge...)
			plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs})
			if got := capString(targetOf(plan, 0, "prefill")); got != tc.prefill {
				t.Fatalf("prefill %s, want %s", got, tc.prefill)
			}
			if c := condition(plan, v1alpha1.ConditionProgressing); c.Reason != tc.reason {
				t.Fatalf("progressing %+v, want %s", c, tc.reason)
			}
		})
	}
}
