package rollout

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// reported gives every child of obs the status it would have written once
// it caught up with its pods: every unit updated and available.
func reported(obs []ReplicaObservation, spec *v1alpha1.PodCliqueSetSpec) {
	for i := range obs {
		for j := range obs[i].Cliques {
			c := &obs[i].Cliques[j]
			n := int32(len(c.Pods))
			c.Report = &Report{Revision: c.Target.UpdateRevision, Template: c.Target.UpdateRevision, Replicas: n, Updated: n, Ready: n, Available: n}
		}
		for j := range obs[i].Groups {
			g := &obs[i].Groups[j]
			n := spec.Template.PodCliqueScalingGroups[0].Replicas
			g.Report = &Report{Revision: g.Target.UpdateRevision, Template: g.Target.UpdateRevision, Replicas: n, Updated: n, Ready: n, Available: n}
		}
	}
}

// A PodCliqueSet says RolloutComplete, and counts a replica ready, available
// or updated, only when the children's own statuses say so too; what it
// decides does not change.
func TestPlanSet_SaysNoMoreThanItsChildrenReport(t *testing.T) {
	spec := threeRoles(2, nil)
	input := func(obs []ReplicaObservation) SetInput {
		return SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs,
			Previous: Progress{UpdateRevision: "v2", UpdateStartedAt: epoch.Add(-time.Minute)}}
	}
	agreeing := func() []ReplicaObservation {
		obs := steadyReplicas(spec, "v2")
		reported(obs, spec)
		return obs
	}
	unreported := planSet(t, input(steadyReplicas(spec, "v2")))
	type want struct {
		complete                  bool
		ready, available, updated int32
		available2                string // the Available condition's status
		progressing               v1alpha1.ConditionReason
	}
	inProgress := v1alpha1.ReasonRollingUpdateInProgress
	cases := []struct {
		name string
		lag  func(obs []ReplicaObservation)
		want want
	}{
		{"every child agrees", func([]ReplicaObservation) {}, want{true, 2, 2, 2, "True", v1alpha1.ReasonRolloutComplete}},
		{"a group has not written its last available replica", func(obs []ReplicaObservation) {
			r := obs[1].Groups[0].Report
			r.Ready, r.Available = 1, 1 // at its minimum (1): available, not settled
		}, want{false, 2, 2, 2, "True", inProgress}},
		{"a clique's status is of its old template", func(obs []ReplicaObservation) {
			obs[0].Cliques[1].Report.Revision = "prefill@v1"
		}, want{false, 2, 2, 1, "True", inProgress}},
		{"a clique has not written its updated pods", func(obs []ReplicaObservation) {
			obs[0].Cliques[0].Report.Updated = 2
		}, want{false, 2, 2, 1, "True", inProgress}},
		{"a clique says it is below its minimum", func(obs []ReplicaObservation) {
			r := obs[0].Cliques[0].Report
			r.Ready, r.Available = 2, 2 // minAvailable 3
		}, want{false, 1, 1, 2, "True", inProgress}},
		{"a clique says its pods are ready, not yet available", func(obs []ReplicaObservation) {
			obs[0].Cliques[0].Report.Available = 2
		}, want{false, 2, 1, 2, "True", inProgress}},
		{"no child of either replica has written a status yet", func(obs []ReplicaObservation) {
			for i := range obs {
				for j := range obs[i].Cliques {
					obs[i].Cliques[j].Report = &Report{Template: obs[i].Cliques[j].Target.UpdateRevision, Replicas: 3}
				}
			}
		}, want{false, 0, 0, 0, "False", inProgress}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := agreeing()
			c.lag(obs)
			plan := planSet(t, input(obs))
			s := plan.Status
			got := want{s.Complete, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas,
				condition(plan, v1alpha1.ConditionAvailable).Status, condition(plan, v1alpha1.ConditionProgressing).Reason}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if !c.want.complete && (s.CurrentRevision != "v1" || !s.Progress.UpdateEndedAt.IsZero()) {
				t.Errorf("current revision %s, ended at %v: the rollout must not read finished", s.CurrentRevision, s.Progress.UpdateEndedAt)
			}
			// The statuses only hold back what the PodCliqueSet says, and with it
			// the moment the children's targets stop naming the old revision
			// (they agree with the status written); every unit's fate is the
			// pods'.
			if got, want := decisions(plan), decisions(unreported); !reflect.DeepEqual(got, want) {
				t.Errorf("the plan changed with the children's statuses:\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// decisions is what a set plan does to units: creates, deletes, which
// replicas update, and how far each child may go.
func decisions(p SetPlan) []string {
	out := []string{fmt.Sprint(p.Creates), fmt.Sprint(p.Deletes)}
	for _, r := range p.Replicas {
		out = append(out, fmt.Sprintf("replica %d updating %v step %+v", r.Index, r.Updating, r.RoleStep))
		for _, c := range append(slices.Clone(r.Cliques), r.Groups...) {
			out = append(out, fmt.Sprintf("  %s: %s %s %s", c.Role, c.Target.Type, c.Target.UpdateRevision, capString(c.Target)))
		}
	}
	return out
}

// memberGroup is a scaling group of two replicas of a leader (1 pod) and
// workers (2 pods, minimum 1), every pod ready at rev, with the members'
// statuses agreeing.
func memberGroup(rev string) ([]MemberMinimum, []GroupReplicaObservation) {
	members := []MemberMinimum{{Clique: "leader", MinAvailable: 1}, {Clique: "worker", MinAvailable: 1}}
	var reps []GroupReplicaObservation
	for i := range int32(2) {
		reps = append(reps, GroupReplicaObservation{Index: i, Revision: rev, CreatedAt: epoch, Cliques: []CliqueObservation{
			{Name: "leader", Pods: steadyUnits(1, "l"), Report: &Report{Revision: "l", Template: "l", Replicas: 1, Updated: 1, Ready: 1, Available: 1}},
			{Name: "worker", Pods: steadyUnits(2, "w"), Report: &Report{Revision: "w", Template: "w", Replicas: 2, Updated: 2, Ready: 2, Available: 2}},
		}})
	}
	return members, reps
}

// A scaling group counts a replica ready, available or updated, and reads
// UpdateComplete, only when its member PodCliques' statuses say so too.
func TestConfirmedByMembers(t *testing.T) {
	p := Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: 2, UpdateRevision: "g2", CurrentRevision: "g2"}
	type want struct {
		ready, available, updated, updatedReady int32
		complete                                bool
	}
	cases := []struct {
		name string
		lag  func(reps []GroupReplicaObservation)
		want want
	}{
		{"every member agrees", func([]GroupReplicaObservation) {}, want{2, 2, 2, 2, true}},
		{"a worker says it is below its minimum", func(reps []GroupReplicaObservation) {
			r := reps[1].Cliques[1].Report
			r.Ready, r.Available = 0, 0
		}, want{1, 1, 2, 1, true}},
		{"a worker says it is ready, not yet available", func(reps []GroupReplicaObservation) {
			reps[1].Cliques[1].Report.Available = 0
		}, want{2, 1, 2, 2, true}},
		{"a worker above its minimum, not all available", func(reps []GroupReplicaObservation) {
			reps[1].Cliques[1].Report.Available = 1
		}, want{2, 2, 2, 2, true}},
		{"a leader has not written its pod", func(reps []GroupReplicaObservation) {
			reps[0].Cliques[0].Report.Updated = 0
		}, want{2, 2, 1, 1, false}},
		{"a new member with no status yet", func(reps []GroupReplicaObservation) {
			reps[0].Cliques[1].Report = &Report{Template: "w", Replicas: 2}
		}, want{1, 1, 1, 1, false}},
		// (the pods say it is unavailable too)
		{"a member missing", func(reps []GroupReplicaObservation) { reps[1].Cliques = reps[1].Cliques[:1] }, want{1, 1, 1, 1, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			members, reps := memberGroup("g2")
			c.lag(reps)
			byPods := levelStatus(2, "g2", GroupUnits(members, reps))
			got := ConfirmedByMembers(p, members, reps, byPods)
			if g := (want{got.ReadyReplicas, got.AvailableReplicas, got.UpdatedReplicas, got.UpdatedReadyReplicas, got.Complete}); g != c.want {
				t.Errorf("got %+v, want %+v", g, c.want)
			}
			if got.Replicas != byPods.Replicas || got.ScheduledReplicas != byPods.ScheduledReplicas || got.SurgeReplicas != byPods.SurgeReplicas {
				t.Errorf("%+v: only what the members confirm may change from %+v", got, byPods)
			}
		})
	}
	// Without statuses to wait for (nil reports), nothing changes.
	members, reps := memberGroup("g2")
	for i := range reps {
		for j := range reps[i].Cliques {
			reps[i].Cliques[j].Report = nil
		}
	}
	byPods := levelStatus(2, "g2", GroupUnits(members, reps))
	if got := ConfirmedByMembers(p, members, reps, byPods); !reflect.DeepEqual(got, byPods) {
		t.Errorf("nil reports changed %+v into %+v", byPods, got)
	}
}
