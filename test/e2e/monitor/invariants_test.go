package monitor

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

const fe = "frontend"

// cliqueSurge is a PodClique surging one pod: replicas 3, maxSurge 1,
// maxUnavailable 0.
func cliqueSurge() v1alpha1.PodCliqueSetSpec {
	return setSpec(1, []v1alpha1.PodCliqueTemplateSpec{withLimits(clique(fe, 3), "1", "0")})
}

// cliqueSurgeRollout is the example's sequence: surge 3, then replace 0,
// 1 and 2 one by one, then remove the surge pod.
func cliqueSurgeRollout() []step {
	return []step{
		create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"),
		ready(sp(0, fe, 0)), ready(sp(0, fe, 1)), ready(sp(0, fe, 2)),
		rollTo("v2"),
		create(sp(0, fe, 3), "v2"), ready(sp(0, fe, 3)),
		replace(sp(0, fe, 0), "v2"),
		replace(sp(0, fe, 1), "v2"),
		replace(sp(0, fe, 2), "v2"),
		del(sp(0, fe, 3)), gone(sp(0, fe, 3)),
	}
}

// groupSurge is a scaling group surging one group replica: replicas 3,
// minAvailable 3, maxSurge 1, maxUnavailable 0; a group replica is a leader and
// two workers.
func groupSurge() v1alpha1.PodCliqueSetSpec {
	return setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 2)},
		groupWithLimits(group("model", 3, 3, "leader", "worker"), "1", "0"))
}

func groupSurgeRollout() []step {
	return []step{
		upGroupReplica(0, "model", 0, "v1"), upGroupReplica(0, "model", 1, "v1"), upGroupReplica(0, "model", 2, "v1"),
		rollTo("v2"),
		upGroupReplica(0, "model", 3, "v2"),
		replaceGroupReplica(0, "model", 0, "v2"),
		replaceGroupReplica(0, "model", 1, "v2"),
		replaceGroupReplica(0, "model", 2, "v2"),
		downGroupReplica(0, "model", 3),
	}
}

// recreateWithSurge is ReplicaRecreate surging one PCS replica: replicas 2,
// maxUnavailable 0, maxSurge 1.
func recreateWithSurge() v1alpha1.PodCliqueSetSpec {
	return recreate(setSpec(2, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)}), "1", "0")
}

func downReplica(replica int32) step {
	return steps(eachPod(inReplica(replica), del), eachPod(inReplica(replica), gone))
}

func recreateWithSurgeRollout() []step {
	return []step{
		upReplica(0, "v1"), upReplica(1, "v1"),
		rollTo("v2"),
		upReplica(2, "v2"),
		downReplica(0), upReplica(0, "v2"),
		downReplica(1), upReplica(1, "v2"),
		downReplica(2),
	}
}

func TestUnitsWithinSurge(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "a PodClique surging one pod holds", spec: cliqueSurge(), steps: cliqueSurgeRollout()},
		{
			name:     "a second surge pod breaks it",
			spec:     cliqueSurge(),
			steps:    cliqueSurgeRollout()[:8], // surge pod 3 created
			breaking: []step{create(sp(0, fe, 4), "v2")},
			want:     UnitsWithinSurge,
		},
		{
			name: "under TerminationComplete a terminating pod still counts",
			spec: withReplacement(setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)}), v1alpha1.TerminationComplete), // maxSurge 0
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), rollTo("v2"), del(sp(0, fe, 1)),
			},
			breaking: []step{create(sp(0, fe, 2), "v2")},
			want:     UnitsWithinSurge,
		},
		{
			name: "under TerminationStarted a terminating pod does not count, and its replacement may start",
			spec: setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)}), // maxSurge 0, the default policy
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), rollTo("v2"), del(sp(0, fe, 1)),
				replacementOf(sp(0, fe, 1)),
			},
			breaking: []step{create(sp(0, fe, 2), "v2")},
			want:     UnitsWithinSurge,
		},
		{
			// Another writer deleted the PodClique in the background: its pods
			// are the garbage collector's, and the PodClique made again starts
			// their replacements while they run.
			name: "under TerminationStarted the pods of a PodClique another writer deleted do not count",
			spec: setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)}), // maxSurge 0
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), ready(sp(0, fe, 0)), ready(sp(0, fe, 1)),
				announceClique(sp(0, fe, 0)), removeCliqueOf(sp(0, fe, 0)),
				replacementOf(sp(0, fe, 0)), replacementOf(sp(0, fe, 1)),
			},
			breaking: []step{create(sp(0, fe, 2), "v2")},
			want:     UnitsWithinSurge,
		},
		{
			name: "a scale-in leaves units above replicas without breaking it",
			spec: cliqueSurge(),
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"),
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Cliques[0].Replicas = 1 }),
				del(sp(0, fe, 2)), gone(sp(0, fe, 2)),
			},
		},
		{name: "a scaling group surging one group replica holds", spec: groupSurge(), steps: groupSurgeRollout()},
		{
			name:     "a second surge group replica breaks it",
			spec:     groupSurge(),
			steps:    groupSurgeRollout()[:5], // surge replica 3 up
			breaking: []step{create(gp(0, "model", 4, "leader", 0), "v2")},
			want:     UnitsWithinSurge,
		},
		{
			name: "member cliques never surge",
			spec: groupSurge(),
			steps: []step{
				upGroupReplica(0, "model", 0, "v1"),
			},
			breaking: []step{create(gp(0, "model", 0, "worker", 2), "v1")},
			want:     UnitsWithinSurge,
		},
		{
			// The operator deletes a group replica's PodCliques once the surge
			// replica is up; a fault takes the surge replica down before the
			// garbage collector deletes the old pods. The deletion was judged
			// when the PodCliques' began, not blamed on the operator later.
			name: "a group replica's deletion is judged when its PodCliques' begins, not when the pods go",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:5],
				deleteCliqueOf(gp(0, "model", 0, "leader", 0)), deleteCliqueOf(gp(0, "model", 0, "worker", 0)),
				unready(gp(0, "model", 3, "worker", 1)),
				downGroupReplica(0, "model", 0)),
		},
		{
			// The PodClique watch ran ahead of the pod watch: the surge
			// replica's pods turned Ready before the deletion, and the
			// monitor hears of that after it. It judges the deletion once the
			// pod watch has passed it.
			name: "a PodClique deletion seen before the pod changes made ahead of it is judged after them",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:4], eachPod(inGroupReplica(0, "model", 3), at("v2")),
				deleteCliqueAhead(gp(0, "model", 0, "leader", 0), 3),
				eachPod(inGroupReplica(0, "model", 3), ready),
				del(gp(0, "model", 0, "leader", 0))),
		},
		{
			name:     "deleting a group replica's PodClique before the surge replica is up breaks it",
			spec:     groupSurge(),
			steps:    append(groupSurgeRollout()[:4], eachPod(inGroupReplica(0, "model", 3), at("v2"))),
			breaking: []step{deleteCliqueOf(gp(0, "model", 0, "leader", 0)), del(gp(0, "model", 0, "leader", 0))},
			want:     AvailabilityFloor,
		},
		{
			// Another writer deletes a member PodClique in the background (it
			// goes at once, its pods later); the operator then deletes the rest
			// of that group replica, which is no longer whole: that costs
			// nothing.
			name: "a group replica that lost a PodClique to another writer is deleted freely",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:3],
				announceClique(gp(0, "model", 0, "worker", 0)), removeCliqueOf(gp(0, "model", 0, "worker", 0)),
				deleteCliqueOf(gp(0, "model", 0, "leader", 0)),
				downGroupReplica(0, "model", 0)),
		},
		{name: "ReplicaRecreate with a surge replica holds", spec: recreateWithSurge(), steps: recreateWithSurgeRollout()},
		{
			name:     "a second surge PCS replica breaks it",
			spec:     recreateWithSurge(),
			steps:    recreateWithSurgeRollout()[:4], // surge replica 2 up
			breaking: []step{create(sp(3, fe, 0), "v2")},
			want:     UnitsWithinSurge,
		},
		{
			name:     "RollingUpdate never surges PCS replicas",
			spec:     setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 1)}),
			steps:    []step{upReplica(0, "v1"), rollTo("v2")},
			breaking: []step{create(sp(1, fe, 0), "v2")},
			want:     UnitsWithinSurge,
		},
	})
}

func TestAvailabilityFloor(t *testing.T) {
	replicas2 := func() v1alpha1.PodCliqueSetSpec {
		return setSpec(1, []v1alpha1.PodCliqueTemplateSpec{withMinAvailable(clique(fe, 2), 1)}) // maxUnavailable 1
	}
	runScenarios(t, []scenario{
		{name: "a PodClique surging one pod holds", spec: cliqueSurge(), steps: cliqueSurgeRollout()},
		{
			name:     "deleting before the surge pod is ready breaks it",
			spec:     cliqueSurge(),
			steps:    cliqueSurgeRollout()[:8], // surge pod 3 created, not ready
			breaking: []step{del(sp(0, fe, 0))},
			want:     AvailabilityFloor,
		},
		{
			name:  "a failure too recent for the operator to have seen does not count against its deletion",
			spec:  cliqueSurge(),
			steps: append(cliqueSurgeRollout()[:9], failsJustBefore(sp(0, fe, 3), sp(0, fe, 0), 20*time.Millisecond)),
		},
		{
			name:  "deleting a pod that failed a moment ago is free, the operator having seen it fail",
			spec:  cliqueSurge(),
			steps: append(cliqueSurgeRollout()[:8], failsJustBefore(sp(0, fe, 0), sp(0, fe, 0), 20*time.Millisecond)),
		},
		{
			name:  "replacing a failed pod that recovered a moment ago is free, the operator not having seen it recover",
			spec:  cliqueSurge(),
			steps: append(cliqueSurgeRollout()[:8], unready(sp(0, fe, 0)), recoversJustBefore(sp(0, fe, 0), sp(0, fe, 0), 20*time.Millisecond)),
		},
		{
			name:     "replacing a pod that recovered long enough ago breaks it",
			spec:     cliqueSurge(),
			steps:    append(cliqueSurgeRollout()[:8], unready(sp(0, fe, 0))),
			breaking: []step{recoversJustBefore(sp(0, fe, 0), sp(0, fe, 0), 300*time.Millisecond)},
			want:     AvailabilityFloor,
		},
		{
			// the operator saw the surge pod ready (it acted on that) but not
			// yet the failure 19 ms later: a moment between the two
			name: "a deletion is judged by the moment the operator may have seen",
			spec: cliqueSurge(),
			steps: append(cliqueSurgeRollout()[:8],
				ready(sp(0, fe, 3)), within(19*time.Millisecond, unready(sp(0, fe, 1))), within(20*time.Millisecond, del(sp(0, fe, 0)))),
		},
		{
			name:     "no moment of the last 100 ms allows the deletion: it breaks",
			spec:     cliqueSurge(),
			steps:    append(cliqueSurgeRollout()[:8], ready(sp(0, fe, 3)), within(19*time.Millisecond, unready(sp(0, fe, 1)))),
			breaking: []step{within(150*time.Millisecond, del(sp(0, fe, 0)))},
			want:     AvailabilityFloor,
		},
		{
			name:     "a failure the operator had time to see counts",
			spec:     cliqueSurge(),
			steps:    cliqueSurgeRollout()[:9],
			breaking: []step{failsJustBefore(sp(0, fe, 3), sp(0, fe, 0), 300*time.Millisecond)},
			want:     AvailabilityFloor,
		},
		{
			name:  "a deletion the test announced is not the operator's",
			spec:  cliqueSurge(),
			steps: append(cliqueSurgeRollout()[:8], announce(sp(0, fe, 0)), del(sp(0, fe, 0))),
		},
		{
			name: "an announcement covers only the pod that existed",
			spec: cliqueSurge(),
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"),
				ready(sp(0, fe, 0)), ready(sp(0, fe, 1)), ready(sp(0, fe, 2)),
				announce(sp(0, fe, 0)), wait(time.Second), replace(sp(0, fe, 0), "v1"),
			},
			breaking: []step{del(sp(0, fe, 0))},
			want:     AvailabilityFloor,
		},
		{
			name: "replicas 2, minAvailable 1: replacing the unready old pod first is free",
			spec: replicas2(),
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), unready(sp(0, fe, 1)),
				del(sp(0, fe, 1)), gone(sp(0, fe, 1)), create(sp(0, fe, 1), "v2"), ready(sp(0, fe, 1)),
				replace(sp(0, fe, 0), "v2"),
			},
		},
		{
			name: "replicas 2, minAvailable 1: losing both pods breaks it, even with one old pod unready",
			spec: replicas2(),
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), unready(sp(0, fe, 1)),
				del(sp(0, fe, 1)), gone(sp(0, fe, 1)), create(sp(0, fe, 1), "v2"),
			},
			breaking: []step{del(sp(0, fe, 0))},
			want:     AvailabilityFloor,
		},
		{
			name: "a pod ready for less than minReadySeconds is not yet available",
			spec: func() v1alpha1.PodCliqueSetSpec { s := cliqueSurge(); s.MinReadySeconds = 30; return s }(),
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"),
				ready(sp(0, fe, 0)), ready(sp(0, fe, 1)), ready(sp(0, fe, 2)),
				rollTo("v2"), create(sp(0, fe, 3), "v2"), ready(sp(0, fe, 3)),
				del(sp(0, fe, 0)), // pod 0 ready 8s: deleting it costs nothing
			},
			breaking: []step{wait(30 * time.Second), del(sp(0, fe, 1))},
			want:     AvailabilityFloor,
		},
		{name: "a scaling group surging one group replica holds", spec: groupSurge(), steps: groupSurgeRollout()},
		{
			name: "two group replicas down at once break it",
			spec: setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 2)}, group("model", 3, 1, "leader", "worker")),
			steps: []step{
				upGroupReplica(0, "model", 0, "v1"), upGroupReplica(0, "model", 1, "v1"), upGroupReplica(0, "model", 2, "v1"),
				rollTo("v2"), del(gp(0, "model", 0, "worker", 1)),
			},
			breaking: []step{del(gp(0, "model", 1, "leader", 0))},
			want:     AvailabilityFloor,
		},
		{
			name: "a group replica the test deleted is not the operator's",
			spec: setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 2)}, group("model", 2, 1, "leader", "worker")),
			steps: []step{
				upGroupReplica(0, "model", 0, "v1"), upGroupReplica(0, "model", 1, "v1"),
				rollTo("v2"), del(gp(0, "model", 0, "leader", 0)),
				announceGroupReplica(0, "model", 1), downGroupReplica(0, "model", 1),
			},
		},
		{
			// The operator deletes a group replica's PodCliques once the surge
			// replica is up; a fault takes the surge replica down before the
			// garbage collector deletes the old pods. The deletion was judged
			// when the PodCliques' began, not blamed on the operator later.
			name: "a group replica's deletion is judged when its PodCliques' begins, not when the pods go",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:5],
				deleteCliqueOf(gp(0, "model", 0, "leader", 0)), deleteCliqueOf(gp(0, "model", 0, "worker", 0)),
				unready(gp(0, "model", 3, "worker", 1)),
				downGroupReplica(0, "model", 0)),
		},
		{
			// The PodClique watch ran ahead of the pod watch: the surge
			// replica's pods turned Ready before the deletion, and the
			// monitor hears of that after it. It judges the deletion once the
			// pod watch has passed it.
			name: "a PodClique deletion seen before the pod changes made ahead of it is judged after them",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:4], eachPod(inGroupReplica(0, "model", 3), at("v2")),
				deleteCliqueAhead(gp(0, "model", 0, "leader", 0), 3),
				eachPod(inGroupReplica(0, "model", 3), ready),
				del(gp(0, "model", 0, "leader", 0))),
		},
		{
			name:     "deleting a group replica's PodClique before the surge replica is up breaks it",
			spec:     groupSurge(),
			steps:    append(groupSurgeRollout()[:4], eachPod(inGroupReplica(0, "model", 3), at("v2"))),
			breaking: []step{deleteCliqueOf(gp(0, "model", 0, "leader", 0)), del(gp(0, "model", 0, "leader", 0))},
			want:     AvailabilityFloor,
		},
		{
			// Another writer deletes a member PodClique in the background (it
			// goes at once, its pods later); the operator then deletes the rest
			// of that group replica, which is no longer whole: that costs
			// nothing.
			name: "a group replica that lost a PodClique to another writer is deleted freely",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:3],
				announceClique(gp(0, "model", 0, "worker", 0)), removeCliqueOf(gp(0, "model", 0, "worker", 0)),
				deleteCliqueOf(gp(0, "model", 0, "leader", 0)),
				downGroupReplica(0, "model", 0)),
		},
		{name: "ReplicaRecreate with a surge replica holds", spec: recreateWithSurge(), steps: recreateWithSurgeRollout()},
		{
			name:     "ReplicaRecreate taking a replica down before the surge one is up breaks it",
			spec:     recreateWithSurge(),
			steps:    append(recreateWithSurgeRollout()[:3], eachPod(inReplica(2), at("v2"))),
			breaking: []step{del(sp(0, fe, 1))},
			want:     AvailabilityFloor,
		},
		{
			name: "a scaled-in PCS replica takes its cliques down freely",
			spec: setSpec(2, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)}),
			steps: []step{
				upReplica(0, "v1"), upReplica(1, "v1"),
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Replicas = new(int32(1)) }),
				downReplica(1),
			},
		},
	})
}

func TestOnDeleteNoUpdate(t *testing.T) {
	// OnDelete on a standalone clique and a scaling group
	spec := func() v1alpha1.PodCliqueSetSpec {
		return onDelete(setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 3), clique("leader", 1), clique("worker", 1)},
			group("model", 2, 1, "leader", "worker")))
	}
	started := []step{upReplica(0, "v1"), rollTo("v2")}
	runScenarios(t, []scenario{
		{
			name: "a pod the node agent deleted on its own is not the operator's",
			spec: onDelete(setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)})),
			steps: []step{
				create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), rollTo("v2"),
				nodeAgentDeletes(sp(0, fe, 1)), del(sp(0, fe, 1)),
			},
			breaking: []step{del(sp(0, fe, 0))},
			want:     OnDeleteNoUpdate,
		},
		{
			name: "nothing deleted for an update, hand-deleted units come back new, scale-in removes outdated first",
			spec: spec(),
			steps: append(started,
				wait(time.Minute),
				announce(sp(0, fe, 1)), replace(sp(0, fe, 1), "v2"),
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Cliques[0].Replicas = 2 }),
				del(sp(0, fe, 0)), gone(sp(0, fe, 0)), // outdated first, although index 0 < replicas
				announceGroupReplica(0, "model", 0), downGroupReplica(0, "model", 0), upGroupReplica(0, "model", 0, "v2"),
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Template.PodCliqueScalingGroups[0].Replicas = 1 }),
				downGroupReplica(0, "model", 1),
			),
		},
		{
			name:     "deleting an outdated pod with no scale-in breaks it",
			spec:     spec(),
			steps:    started,
			breaking: []step{del(sp(0, fe, 0))},
			want:     OnDeleteNoUpdate,
		},
		{
			name:     "deleting an outdated group replica with no scale-in breaks it",
			spec:     spec(),
			steps:    started,
			breaking: []step{del(gp(0, "model", 1, "leader", 0))},
			want:     OnDeleteNoUpdate,
		},
	})
}

func TestOneRevisionPerReplica(t *testing.T) {
	defaults := func() v1alpha1.PodCliqueSetSpec {
		return recreate(setSpec(2, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)}), "0", "1")
	}
	runScenarios(t, []scenario{
		{
			// The operator deletes a group replica's PodCliques once the surge
			// replica is up; a fault takes the surge replica down before the
			// garbage collector deletes the old pods. The deletion was judged
			// when the PodCliques' began, not blamed on the operator later.
			name: "a group replica's deletion is judged when its PodCliques' begins, not when the pods go",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:5],
				deleteCliqueOf(gp(0, "model", 0, "leader", 0)), deleteCliqueOf(gp(0, "model", 0, "worker", 0)),
				unready(gp(0, "model", 3, "worker", 1)),
				downGroupReplica(0, "model", 0)),
		},
		{
			// The PodClique watch ran ahead of the pod watch: the surge
			// replica's pods turned Ready before the deletion, and the
			// monitor hears of that after it. It judges the deletion once the
			// pod watch has passed it.
			name: "a PodClique deletion seen before the pod changes made ahead of it is judged after them",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:4], eachPod(inGroupReplica(0, "model", 3), at("v2")),
				deleteCliqueAhead(gp(0, "model", 0, "leader", 0), 3),
				eachPod(inGroupReplica(0, "model", 3), ready),
				del(gp(0, "model", 0, "leader", 0))),
		},
		{
			name:     "deleting a group replica's PodClique before the surge replica is up breaks it",
			spec:     groupSurge(),
			steps:    append(groupSurgeRollout()[:4], eachPod(inGroupReplica(0, "model", 3), at("v2"))),
			breaking: []step{deleteCliqueOf(gp(0, "model", 0, "leader", 0)), del(gp(0, "model", 0, "leader", 0))},
			want:     AvailabilityFloor,
		},
		{
			// Another writer deletes a member PodClique in the background (it
			// goes at once, its pods later); the operator then deletes the rest
			// of that group replica, which is no longer whole: that costs
			// nothing.
			name: "a group replica that lost a PodClique to another writer is deleted freely",
			spec: groupSurge(),
			steps: append(groupSurgeRollout()[:3],
				announceClique(gp(0, "model", 0, "worker", 0)), removeCliqueOf(gp(0, "model", 0, "worker", 0)),
				deleteCliqueOf(gp(0, "model", 0, "leader", 0)),
				downGroupReplica(0, "model", 0)),
		},
		{name: "ReplicaRecreate with a surge replica holds", spec: recreateWithSurge(), steps: recreateWithSurgeRollout()},
		{
			name: "a replica recreated whole holds, its old pods still terminating",
			spec: defaults(),
			steps: []step{
				upReplica(0, "v1"), upReplica(1, "v1"), rollTo("v2"),
				eachPod(inReplica(0), del), gone(sp(0, fe, 0)), create(sp(0, fe, 0), "v2"),
			},
		},
		{
			name: "a pod of the new revision next to a live old one breaks it",
			spec: defaults(),
			steps: []step{
				upReplica(0, "v1"), upReplica(1, "v1"), rollTo("v2"),
				del(sp(0, fe, 0)), gone(sp(0, fe, 0)),
			},
			breaking: []step{create(sp(0, fe, 0), "v2")},
			want:     OneRevisionPerReplica,
		},
	})
}

func TestRoleStepOrder(t *testing.T) {
	// prefill and decode scaling groups, decode 1 → prefill 1 →
	// prefill all → decode all, inside every PCS replica
	disaggregated := func() v1alpha1.PodCliqueSetSpec {
		return roleSteps(setSpec(1,
			[]v1alpha1.PodCliqueTemplateSpec{clique("p-leader", 1), clique("p-worker", 1), clique("d-leader", 1), clique("d-worker", 1)},
			group("prefill", 2, 1, "p-leader", "p-worker"), group("decode", 2, 1, "d-leader", "d-worker")),
			"decode", "1", "prefill", "1", "prefill", "100%", "decode", "100%")
	}
	running := []step{
		upGroupReplica(0, "prefill", 0, "v1"), upGroupReplica(0, "prefill", 1, "v1"),
		upGroupReplica(0, "decode", 0, "v1"), upGroupReplica(0, "decode", 1, "v1"),
		rollTo("v2"),
	}
	inOrder := append(append([]step(nil), running...),
		replaceGroupReplica(0, "decode", 0, "v2"),
		replaceGroupReplica(0, "prefill", 0, "v2"),
		replaceGroupReplica(0, "prefill", 1, "v2"),
		replaceGroupReplica(0, "decode", 1, "v2"),
	)
	// a standalone role with a percentage: frontend 50% (2 of 4) → backend all → frontend all
	percent := func() v1alpha1.PodCliqueSetSpec {
		return roleSteps(setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 4), clique("backend", 1)}),
			fe, "50%", "backend", "100%", fe, "100%")
	}
	percentStart := []step{upReplica(0, "v1"), rollTo("v2"), replace(sp(0, fe, 0), "v2"), replace(sp(0, fe, 1), "v2")}
	twoReplicas := func() v1alpha1.PodCliqueSetSpec { s := disaggregated(); s.Replicas = new(int32(2)); return s }
	inReplicaOrder := func(replica int32, image string) step {
		return steps(
			replaceGroupReplica(replica, "decode", 0, image), replaceGroupReplica(replica, "prefill", 0, image),
			replaceGroupReplica(replica, "prefill", 1, image), replaceGroupReplica(replica, "decode", 1, image))
	}
	runScenarios(t, []scenario{
		{name: "the steps in order hold", spec: disaggregated(), steps: inOrder},
		{
			name:  "each PCS replica takes the steps on its own",
			spec:  twoReplicas(),
			steps: []step{upReplica(0, "v1"), upReplica(1, "v1"), rollTo("v2"), inReplicaOrder(0, "v2"), inReplicaOrder(1, "v2")},
		},
		{
			name: "a second template change mid-rollout starts the steps over",
			spec: disaggregated(),
			steps: append(running,
				replaceGroupReplica(0, "decode", 0, "v2"), replaceGroupReplica(0, "prefill", 0, "v2"),
				rollTo("v3"), inReplicaOrder(0, "v3")),
		},
		{
			name: "after a second template change the earlier steps no longer count",
			spec: disaggregated(),
			steps: append(running,
				replaceGroupReplica(0, "decode", 0, "v2"), replaceGroupReplica(0, "prefill", 0, "v2"),
				rollTo("v3"), downGroupReplica(0, "prefill", 1)),
			breaking: []step{create(gp(0, "prefill", 1, "p-leader", 0), "v3")},
			want:     RoleStepOrder,
		},
		{
			name:     "prefill before decode 1 is ready breaks it",
			spec:     disaggregated(),
			steps:    append(running, downGroupReplica(0, "decode", 0), eachPod(inGroupReplica(0, "decode", 0), at("v2")), downGroupReplica(0, "prefill", 0)),
			breaking: []step{create(gp(0, "prefill", 0, "p-leader", 0), "v2")},
			want:     RoleStepOrder,
		},
		{
			name: "decode all before prefill all is ready breaks it",
			spec: disaggregated(),
			steps: append(running,
				replaceGroupReplica(0, "decode", 0, "v2"), replaceGroupReplica(0, "prefill", 0, "v2"),
				downGroupReplica(0, "prefill", 1), eachPod(inGroupReplica(0, "prefill", 1), at("v2")),
				downGroupReplica(0, "decode", 1)),
			breaking: []step{create(gp(0, "decode", 1, "d-leader", 0), "v2")},
			want:     RoleStepOrder,
		},
		{
			name: "a rollback to the first template takes the steps again",
			spec: disaggregated(),
			steps: append(append([]step(nil), inOrder...),
				rollTo("v1"), downGroupReplica(0, "decode", 0), eachPod(inGroupReplica(0, "decode", 0), at("v1")),
				downGroupReplica(0, "prefill", 0)),
			breaking: []step{create(gp(0, "prefill", 0, "p-leader", 0), "v1")},
			want:     RoleStepOrder,
		},
		{
			name:  "a brand-new PodCliqueSet is not held to the steps",
			spec:  disaggregated(),
			steps: []step{upReplica(0, "v1")},
		},
		{
			name:  "percent steps round up and hold",
			spec:  percent(),
			steps: append(percentStart, replace(sp(0, "backend", 0), "v2"), replace(sp(0, fe, 2), "v2"), replace(sp(0, fe, 3), "v2")),
		},
		{
			name:     "a role past its percent step before the next step breaks it",
			spec:     percent(),
			steps:    append(percentStart, del(sp(0, fe, 2)), gone(sp(0, fe, 2))),
			breaking: []step{create(sp(0, fe, 2), "v2")},
			want:     RoleStepOrder,
		},
	})
}

func TestPartitionHolds(t *testing.T) {
	spec := func() v1alpha1.PodCliqueSetSpec {
		return withPartition(setSpec(2, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2), clique("router", 1)}), 1)
	}
	updatedAbove := []step{
		upReplica(0, "v1"), upReplica(1, "v1"), rollTo("v2"),
		replace(sp(1, fe, 0), "v2"), replace(sp(1, fe, 1), "v2"), replace(sp(1, "router", 0), "v2"),
	}
	runScenarios(t, []scenario{
		{
			name:  "replicas at or above the partition update; a pod below it comes back on its revision",
			spec:  spec(),
			steps: append(updatedAbove, announce(sp(0, fe, 0)), replace(sp(0, fe, 0), "v1")),
		},
		{
			name:     "a pod below the partition recreated on the target breaks it",
			spec:     spec(),
			steps:    append(updatedAbove, announce(sp(0, fe, 0)), del(sp(0, fe, 0)), gone(sp(0, fe, 0))),
			breaking: []step{create(sp(0, fe, 0), "v2")},
			want:     PartitionHolds,
		},
		{
			name:     "a lone pod below the partition is remembered after it is gone",
			spec:     spec(),
			steps:    append(updatedAbove, announce(sp(0, "router", 0)), del(sp(0, "router", 0)), gone(sp(0, "router", 0))),
			breaking: []step{create(sp(0, "router", 0), "v2")},
			want:     PartitionHolds,
		},
		{
			name: "lowering the partition lets the rest update",
			spec: spec(),
			steps: append(updatedAbove,
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.UpdateStrategy.RollingUpdate.Partition = new(int32(0)) }),
				replace(sp(0, fe, 0), "v2"), replace(sp(0, fe, 1), "v2"), replace(sp(0, "router", 0), "v2")),
		},
	})
}

// One pod per index: under TerminationComplete a replacement never runs beside
// its terminating predecessor; under TerminationStarted it may, but two live
// pods at one index break it either way.
func TestOneUnitPerIndex(t *testing.T) {
	up := []step{create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"), rollTo("v2")}
	runScenarios(t, []scenario{
		{
			name:     "under TerminationComplete a replacement beside its terminating predecessor breaks it",
			spec:     withReplacement(cliqueSurge(), v1alpha1.TerminationComplete),
			steps:    append(slices.Clone(up), del(sp(0, fe, 0))),
			breaking: []step{replacementOf(sp(0, fe, 0))},
			want:     OneUnitPerIndex,
		},
		{
			name:  "under TerminationStarted a replacement beside its terminating predecessor holds",
			spec:  cliqueSurge(),
			steps: append(slices.Clone(up), del(sp(0, fe, 0)), replacementOf(sp(0, fe, 0))),
		},
		{
			name:     "under TerminationStarted two live pods at one index break it",
			spec:     cliqueSurge(),
			steps:    slices.Clone(up),
			breaking: []step{replacementOf(sp(0, fe, 0))},
			want:     OneUnitPerIndex,
		},
		{
			name:  "with surgePlacement ReplacedIndex a surge pod beside its outdated pod holds",
			spec:  withSurgeAtReplacedIndex(cliqueSurge()),
			steps: append(slices.Clone(up), replacementOf(sp(0, fe, 0)), ready(sp(0, fe, 0).beside()), del(sp(0, fe, 0)), gone(sp(0, fe, 0))),
		},
		{
			name:     "with surgePlacement ReplacedIndex two live pods of one revision at an index break it",
			spec:     withSurgeAtReplacedIndex(cliqueSurge()),
			steps:    slices.Clone(up),
			breaking: []step{create(sp(0, fe, 0).beside(), "v1")},
			want:     OneUnitPerIndex,
		},
	})
}

func withSurgeAtReplacedIndex(s v1alpha1.PodCliqueSetSpec) v1alpha1.PodCliqueSetSpec {
	s.SurgePlacement = v1alpha1.ReplacedIndex
	return s
}

// With a surge pod beside the pod it replaces, the floor counts pods, not
// indices: the outdated pod may go once its surge pod is available, not before.
func TestAvailabilityFloor_CountsPodsBesideEachOther(t *testing.T) {
	up := []step{
		create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"),
		ready(sp(0, fe, 0)), ready(sp(0, fe, 1)), ready(sp(0, fe, 2)),
		rollTo("v2"), replacementOf(sp(0, fe, 0)),
	}
	runScenarios(t, []scenario{
		{
			name:  "the outdated pod goes once its surge pod is available",
			spec:  withSurgeAtReplacedIndex(cliqueSurge()),
			steps: append(slices.Clone(up), ready(sp(0, fe, 0).beside()), del(sp(0, fe, 0)), gone(sp(0, fe, 0))),
		},
		{
			name:     "the outdated pod deleted before its surge pod is available breaks it",
			spec:     withSurgeAtReplacedIndex(cliqueSurge()),
			steps:    slices.Clone(up),
			breaking: []step{del(sp(0, fe, 0))},
			want:     AvailabilityFloor,
		},
		{
			name:     "the outdated pod deleted while another pod is down breaks it, though its index still serves",
			spec:     withSurgeAtReplacedIndex(cliqueSurge()),
			steps:    append(slices.Clone(up), ready(sp(0, fe, 0).beside()), unready(sp(0, fe, 1))),
			breaking: []step{del(sp(0, fe, 0))},
			want:     AvailabilityFloor,
		},
	})
}

func withReplacement(s v1alpha1.PodCliqueSetSpec, p v1alpha1.PodReplacementPolicy) v1alpha1.PodCliqueSetSpec {
	s.PodReplacementPolicy = p
	return s
}

func TestPauseHolds(t *testing.T) {
	spec := func() v1alpha1.PodCliqueSetSpec {
		return setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)})
	}
	pausedMidRollout := []step{
		upReplica(0, "v1"), rollTo("v2"), replace(sp(0, fe, 0), "v2"),
		change(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
	}
	scaleTo3 := change(func(s *v1alpha1.PodCliqueSetSpec) { s.Template.Cliques[0].Replicas = 3 })
	runScenarios(t, []scenario{
		{
			name:  "scaling while paused uses the revisions in place",
			spec:  spec(),
			steps: append(pausedMidRollout, scaleTo3, create(sp(0, fe, 2), "v1"), ready(sp(0, fe, 2))),
		},
		{
			name:     "a new pod on the target while paused breaks it",
			spec:     spec(),
			steps:    append(pausedMidRollout, scaleTo3),
			breaking: []step{create(sp(0, fe, 2), "v2")},
			want:     PauseHolds,
		},
		{
			name:  "an updated pod deleted while paused comes back updated",
			spec:  setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 3)}),
			steps: append(pausedMidRollout, announce(sp(0, fe, 0)), del(sp(0, fe, 0)), gone(sp(0, fe, 0)), create(sp(0, fe, 0), "v2")),
		},
		{
			name:     "an outdated pod deleted by hand while paused comes back on the current revision",
			spec:     setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 3)}),
			steps:    append(pausedMidRollout, announce(sp(0, fe, 1)), del(sp(0, fe, 1)), gone(sp(0, fe, 1))),
			breaking: []step{create(sp(0, fe, 1), "v2")},
			want:     PauseHolds,
		},
		{
			name: "a replacement under way when the pause began finishes on the target",
			spec: setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 3)}),
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), replace(sp(0, fe, 0), "v2"), del(sp(0, fe, 1)),
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
				wait(10 * time.Second), gone(sp(0, fe, 1)), create(sp(0, fe, 1), "v2"),
			},
		},
		{
			name: "an index the operator empties after it saw the pause does not come back on the target",
			spec: setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 3)}),
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), replace(sp(0, fe, 0), "v2"),
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
				wait(10 * time.Second), del(sp(0, fe, 1)), gone(sp(0, fe, 1)),
			},
			breaking: []step{create(sp(0, fe, 1), "v2")},
			want:     PauseHolds,
		},
		{
			name: "paused with nothing to roll, scaling creates pods on the target",
			spec: spec(),
			steps: []step{
				upReplica(0, "v1"), change(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
				scaleTo3, create(sp(0, fe, 2), "v1"),
			},
		},
		{
			name: "resuming continues the rollout",
			spec: spec(),
			steps: append(pausedMidRollout,
				change(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = false }),
				replace(sp(0, fe, 1), "v2")),
		},
	})
}

// The operator acts on the spec it has seen; a change it has not seen yet (or
// whose children have not caught up) is not held against it. (The deletions are
// the test's own: an index the operator emptied before the pause may come back
// on the target.)
func TestSpecChange_OperatorGetsTimeToSeeIt(t *testing.T) {
	spec := setSpec(1, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 2)})
	runScenarios(t, []scenario{
		{
			name: "a pod created on the target just after a pause the operator has not seen",
			spec: spec,
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), announce(sp(0, fe, 0)), del(sp(0, fe, 0)), gone(sp(0, fe, 0)),
				changeUnseen(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
				wait(10 * time.Second), create(sp(0, fe, 0), "v2"),
			},
		},
		{
			name: "once the operator reports the pause, and the grace passed, it holds",
			spec: spec,
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), announce(sp(0, fe, 0)), del(sp(0, fe, 0)), gone(sp(0, fe, 0)),
				changeUnseen(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
				wait(10 * time.Second), operatorSees(),
			},
			breaking: []step{wait(3 * time.Second), create(sp(0, fe, 0), "v2")},
			want:     PauseHolds,
		},
		{
			name: "an operator that never reports the new generation gets at most MaxSpecLag",
			spec: spec,
			steps: []step{
				upReplica(0, "v1"), rollTo("v2"), announce(sp(0, fe, 0)), del(sp(0, fe, 0)), gone(sp(0, fe, 0)),
				changeUnseen(func(s *v1alpha1.PodCliqueSetSpec) { s.Paused = true }),
			},
			breaking: []step{wait(31 * time.Second), create(sp(0, fe, 0), "v2")},
			want:     PauseHolds,
		},
	})
}

// A violation against the watched spec is confirmed with a fresh read: the
// watch of pods may run ahead of the watch of the PodCliqueSet.
func TestFreshSpecRead_ClearsAViolationTheWatchHadNotCaughtUpWith(t *testing.T) {
	spec := withPartition(setSpec(2, []v1alpha1.PodCliqueTemplateSpec{clique(fe, 1)}), 2)
	w := newWorld(t, spec)
	w.run(upReplica(0, "v1"), upReplica(1, "v1"), rollTo("v2"), del(sp(1, fe, 0)), gone(sp(1, fe, 0)))

	// The user lowered the partition; the monitor's watch has not delivered it.
	fresh := w.pcs.DeepCopy()
	fresh.Generation++
	fresh.Spec.UpdateStrategy.RollingUpdate.Partition = new(int32(1))
	fresh.Status.ObservedGeneration = fresh.Generation
	reads := 0
	w.rec.readSpec = func() (*v1alpha1.PodCliqueSet, error) { reads++; return fresh.DeepCopy(), nil }

	w.run(create(sp(1, fe, 0), "v2"))
	if len(w.rec.violations) > 0 {
		t.Fatalf("violation despite the fresh spec:\n%s", w.rec.violations[0].Report())
	}
	if reads != 1 {
		t.Fatalf("fresh reads = %d, want 1 (only to confirm a violation)", reads)
	}

	// Below the new partition the rule still holds, fresh read or not.
	w.run(wait(5*time.Second), del(sp(0, fe, 0)), gone(sp(0, fe, 0)), create(sp(0, fe, 0), "v2"))
	if len(w.rec.violations) == 0 || w.rec.violations[0].Invariant != PartitionHolds {
		t.Fatalf("want %s broken below the new partition; timeline:\n%s", PartitionHolds, w.timelineText())
	}
}

// Nothing is checked once the PodCliqueSet is being deleted: its children go
// all at once.
func TestDeletingThePodCliqueSet_StopsTheChecks(t *testing.T) {
	w := newWorld(t, cliqueSurge())
	w.run(upReplica(0, "v1"))
	w.pcs.DeletionTimestamp = new(metav1.NewTime(w.now))
	w.rec.observeSet(w.now, w.pcs.DeepCopy())
	w.run(eachPod(inReplica(0), del))
	if len(w.rec.violations) > 0 {
		t.Fatalf("violation during deletion:\n%s", w.rec.violations[0].Report())
	}
}

// twoReplicaGroupSurge is groupSurge over two PCS replicas.
func twoReplicaGroupSurge(policy v1alpha1.ReplicaReplacementPolicy) v1alpha1.PodCliqueSetSpec {
	s := groupSurge()
	s.Replicas = ptrTo(int32(2))
	s.ReplicaReplacementPolicy = policy
	return s
}

// replicaZeroRolledWithGroupSurge rolls PCS replica 0 of twoReplicaGroupSurge
// up to the end of its update: surge group replica 3 is up, replicas 0, 1, 2
// run v2, and the surge replica's PodCliques are being deleted (its pods are
// doomed, not yet terminating).
func replicaZeroRolledWithGroupSurge() []step {
	return []step{
		upGroupReplica(0, "model", 0, "v1"), upGroupReplica(0, "model", 1, "v1"), upGroupReplica(0, "model", 2, "v1"),
		upGroupReplica(1, "model", 0, "v1"), upGroupReplica(1, "model", 1, "v1"), upGroupReplica(1, "model", 2, "v1"),
		rollTo("v2"),
		upGroupReplica(0, "model", 3, "v2"),
		replaceGroupReplica(0, "model", 0, "v2"),
		replaceGroupReplica(0, "model", 1, "v2"),
		replaceGroupReplica(0, "model", 2, "v2"),
		deleteCliqueOf(gp(0, "model", 3, "leader", 0)), deleteCliqueOf(gp(0, "model", 3, "worker", 0)),
	}
}

func TestReplicaBoundary(t *testing.T) {
	twoReplicaCliqueSurge := func(policy v1alpha1.PodReplacementPolicy) v1alpha1.PodCliqueSetSpec {
		s := cliqueSurge()
		s.Replicas = ptrTo(int32(2))
		s.PodReplacementPolicy = policy
		return s
	}
	replicaZeroRolledWithCliqueSurge := []step{
		create(sp(0, fe, 0), "v1"), create(sp(0, fe, 1), "v1"), create(sp(0, fe, 2), "v1"),
		create(sp(1, fe, 0), "v1"), create(sp(1, fe, 1), "v1"), create(sp(1, fe, 2), "v1"),
		ready(sp(0, fe, 0)), ready(sp(0, fe, 1)), ready(sp(0, fe, 2)), ready(sp(1, fe, 0)), ready(sp(1, fe, 1)), ready(sp(1, fe, 2)),
		rollTo("v2"),
		createSurge(sp(0, fe, 3), "v2"), ready(sp(0, fe, 3)),
		replace(sp(0, fe, 0), "v2"), replace(sp(0, fe, 1), "v2"), replace(sp(0, fe, 2), "v2"),
		del(sp(0, fe, 3)),
	}
	replicaOneStartsWithGroupSurge := []step{upGroupReplica(1, "model", 3, "v2")}
	runScenarios(t, []scenario{
		{
			// The user's report: replica 1's first new pods while replica 0's
			// surge group replica still runs (its PodCliques terminating, its
			// pods not yet).
			name:     "replica 1 starting beside replica 0's surge replica whose pods still live breaks it",
			spec:     twoReplicaGroupSurge(v1alpha1.Immediate),
			steps:    replicaZeroRolledWithGroupSurge(),
			breaking: replicaOneStartsWithGroupSurge,
			want:     ReplicaBoundary,
		},
		{
			name:  "Immediate: replica 1 may start once the surge replica's pods terminate",
			spec:  twoReplicaGroupSurge(v1alpha1.Immediate),
			steps: append(replicaZeroRolledWithGroupSurge(), eachPod(inGroupReplica(0, "model", 3), del), upGroupReplica(1, "model", 3, "v2")),
		},
		{
			name:     "PostTermination: replica 1 starting while the surge replica's pods terminate breaks it",
			spec:     twoReplicaGroupSurge(v1alpha1.PostTermination),
			steps:    append(replicaZeroRolledWithGroupSurge(), eachPod(inGroupReplica(0, "model", 3), del)),
			breaking: replicaOneStartsWithGroupSurge,
			want:     ReplicaBoundary,
		},
		{
			name:  "PostTermination: replica 1 may start once the surge replica's pods are gone",
			spec:  twoReplicaGroupSurge(v1alpha1.PostTermination),
			steps: append(replicaZeroRolledWithGroupSurge(), downGroupReplica(0, "model", 3), upGroupReplica(1, "model", 3, "v2")),
		},
		{
			name:  "TerminationStarted: replica 1 may start while the surge pod terminates",
			spec:  twoReplicaCliqueSurge(v1alpha1.TerminationStarted),
			steps: append(slices.Clone(replicaZeroRolledWithCliqueSurge), createSurge(sp(1, fe, 3), "v2")),
		},
		{
			name:     "TerminationComplete: replica 1 starting while the surge pod terminates breaks it",
			spec:     twoReplicaCliqueSurge(v1alpha1.TerminationComplete),
			steps:    replicaZeroRolledWithCliqueSurge,
			breaking: []step{createSurge(sp(1, fe, 3), "v2")},
			want:     ReplicaBoundary,
		},
	})
}

func ptrTo[T any](v T) *T { return &v }

// A role step ends when its pods say so: prefill's first step may start only
// once decode's surge group replica, made for decode's step, has no live pod.
func TestRoleStepBoundary(t *testing.T) {
	surgingDecode := func(policy v1alpha1.ReplicaReplacementPolicy) v1alpha1.PodCliqueSetSpec {
		s := roleSteps(setSpec(1,
			[]v1alpha1.PodCliqueTemplateSpec{clique("p-leader", 1), clique("d-leader", 1)},
			group("prefill", 2, 1, "p-leader"), groupWithLimits(group("decode", 2, 2, "d-leader"), "1", "0")),
			"decode", "1", "prefill", "1", "prefill", "100%", "decode", "100%")
		s.ReplicaReplacementPolicy = policy
		return s
	}
	decodeStepWithSurge := func() []step {
		return []step{
			upGroupReplica(0, "prefill", 0, "v1"), upGroupReplica(0, "prefill", 1, "v1"),
			upGroupReplica(0, "decode", 0, "v1"), upGroupReplica(0, "decode", 1, "v1"),
			rollTo("v2"),
			upGroupReplica(0, "decode", 2, "v2"),
			replaceGroupReplica(0, "decode", 0, "v2"),
			downGroupReplica(0, "prefill", 0),
		}
	}
	prefillStarts := []step{create(gp(0, "prefill", 0, "p-leader", 0), "v2")}
	runScenarios(t, []scenario{
		{
			name:     "prefill starting beside decode's live surge replica breaks it",
			spec:     surgingDecode(v1alpha1.Immediate),
			steps:    decodeStepWithSurge(),
			breaking: prefillStarts,
			want:     ReplicaBoundary,
		},
		{
			name:  "prefill may start once decode's surge replica is gone",
			spec:  surgingDecode(v1alpha1.Immediate),
			steps: append(decodeStepWithSurge(), downGroupReplica(0, "decode", 2), prefillStarts[0]),
		},
		{
			name:  "Immediate: prefill may start while decode's surge replica terminates",
			spec:  surgingDecode(v1alpha1.Immediate),
			steps: append(decodeStepWithSurge(), eachPod(inGroupReplica(0, "decode", 2), del), prefillStarts[0]),
		},
		{
			name:     "PostTermination: prefill starting while decode's surge replica terminates breaks it",
			spec:     surgingDecode(v1alpha1.PostTermination),
			steps:    append(decodeStepWithSurge(), eachPod(inGroupReplica(0, "decode", 2), del)),
			breaking: prefillStarts,
			want:     ReplicaBoundary,
		},
	})
}
