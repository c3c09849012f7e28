package rollout

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Scaling while a rollout runs: the tables of issue 28 item 3. The rapid
// property beside them (scale_rolling_property_test.go) drives whole rollouts.

// A replica that finished its update and is then scaled out (its clique
// through /scale, as an HPA does) while another replica updates makes its new
// pods on the new revision: it is not held back to the old one, and the
// rollout does not come back to it.
func TestScaleRolling_AFinishedReplicaScaledOutMakesNewPodsOnTheNewRevision(t *testing.T) {
	spec := threeRoles(2, nil)
	obs := steadyReplicas(spec, "v1")
	obs[0] = steadyReplicas(spec, "v2")[0]
	obs[0].Cliques[0].SpecReplicas = 5 // frontend scaled 3 → 5, pods 3 and 4 not made yet
	plan := planSet(t, SetInput{Spec: spec, Revisions: Revisions{Current: setRevision("v1"), Update: setRevision("v2")}, Replicas: obs})
	if got := updatingIndices(plan); !slices.Equal(got, []int32{1}) {
		t.Fatalf("updating replicas %v, want [1]", got)
	}
	if got := capString(targetOf(plan, 0, "frontend")); got != "frontend@v2 uncapped" {
		t.Fatalf("finished replica 0's frontend: %s, want frontend@v2 uncapped (its new pods run v2)", got)
	}
	// replica 1 waits its turn: its frontend is held where it is
	if got := capString(targetOf(plan, 1, "prefill")); got != "prefill@v2 uncapped" {
		t.Fatalf("updating replica 1's prefill: %s", got)
	}
}

// Like a Deployment, a PodCliqueSet keeps reporting the updated replicas that
// exist while a role scales in: a replica whose every unit runs the update
// revision counts as updated though its role still has units above its new
// replicas.
func TestScaleRolling_UpdatedReplicasHoldDuringARoleScaleIn(t *testing.T) {
	spec := threeRoles(2, nil)
	revs := Revisions{Current: setRevision("v1"), Update: setRevision("v2")}
	obs := steadyReplicas(spec, "v2")
	obs[0].Cliques[0].SpecReplicas = 2 // frontend scaled 3 → 2: pod 2 is still there
	obs[1].Groups[0].SpecReplicas = 1  // decode scaled 2 → 1: group replica 1 still there
	plan := planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs})
	if got := plan.Status.UpdatedReplicas; got != 2 {
		t.Fatalf("updatedReplicas %d during the scale-in, want 2: every unit runs v2", got)
	}
	if plan.Status.Complete {
		t.Fatal("complete while units above the new replicas remain")
	}
	// an outdated unit above the new replicas is not updated
	obs[0].Cliques[0].Pods[2].Revision = "frontend@v1"
	plan = planSet(t, SetInput{Spec: spec, Revisions: revs, Replicas: obs})
	if got := plan.Status.UpdatedReplicas; got != 1 {
		t.Fatalf("updatedReplicas %d with an outdated pod above the new replicas, want 1", got)
	}
}

// Scale-in during a rolling update removes outdated units above the new
// replicas before updated ones, at every level: units that must go anyway
// are the outdated ones, and an updated unit kept above the replicas serves
// as surge while the rollout can use it.
func TestScaleRolling_ScaleInRemovesOutdatedUnitsAboveReplicasFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order ScaleInOrder
	}{{"clique", OutdatedFirst}, {"scaling group", HighestIndexFirst}} {
		t.Run(tc.name, func(t *testing.T) {
			// 5 → 3 while index 4 runs new (made by an earlier scale-out) and 3 old
			units := steadyUnits(5, "old")
			units[4].Revision = "new"
			p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(1), UpdateRevision: "new", CurrentRevision: "old",
				UpdateOrder: LowestIndexFirst, ScaleIn: tc.order}
			plan, err := PlanLevel(p, units)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(plan.Deletes, func(d Delete) bool { return d.Index == 4 }) {
				t.Fatalf("deletes %v: the updated unit 4 goes while outdated 3 is there", plan.Deletes)
			}
			if !slices.ContainsFunc(plan.Deletes, func(d Delete) bool { return d.Index == 3 && d.Reason == ReasonScaleIn }) {
				t.Fatalf("deletes %v: want the outdated unit 3 scaled in", plan.Deletes)
			}
			// the updated unit 4 is the surge in use: no second surge unit is made
			if slices.ContainsFunc(plan.Creates, func(c Create) bool { return c.Surge }) {
				t.Fatalf("creates %v: a surge unit beside the updated unit 4", plan.Creates)
			}
		})
	}
}

// An outdated unit above the replicas is no surge: it never stands in the
// way of a real surge unit on the new revision.
func TestScaleRolling_AnOutdatedUnitAboveReplicasIsNotSurge(t *testing.T) {
	units := steadyUnits(4, "old") // 4 → 3, maxSurge 1, maxUnavailable 0
	p := Policy{Replicas: 3, MaxSurge: intstr.FromInt32(1), MaxUnavailable: intstr.FromInt32(0), UpdateRevision: "new", CurrentRevision: "old",
		UpdateOrder: LowestIndexFirst, ScaleIn: HighestIndexFirst}
	k := newTicker(t, p, units)
	k.run(40)
	assertIndices(t, k, "0@new", "1@new", "2@new")
	if k.actions[0] != "delete 3 scale-in" {
		t.Fatalf("actions %v: want the outdated unit 3 scaled in first", k.actions)
	}
	if k.minAvl < 3 {
		t.Fatalf("availability fell to %d, below 3 - 0", k.minAvl)
	}
}
