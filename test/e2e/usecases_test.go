//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// recreateRoles is one replica of examples/disaggregated-recreate*.yaml: two
// frontend pods and one replica each of the prefill and decode groups (a
// leader and two workers with a GPU apiece): 8 pods, 6 GPUs.
func recreateRoles(version string) layout {
	return layout{
		"frontend": fmt.Sprintf("0=%[1]s 1=%[1]s", version),
		"prefill":  "0=" + version,
		"decode":   "0=" + version,
	}
}

// useCase is one of the four use cases the examples show.
type useCase struct {
	example string
	// nodes leaves room for the rollout's peak (8 GPUs a node).
	nodes int
	want  func(version string) layout
	// check asserts what the strategy promises, from the timeline of a
	// rollout that began at start.
	check func(t *testing.T, s *scene, pcs *v1alpha1.PodCliqueSet, events []monitor.Event, start time.Time)
}

// The four use cases of the examples, each rolled to a new image from its example under
// the invariant monitor. Every one ends with every pod on the new template at
// indices without holes, every replica counted updated and Progressing
// RolloutComplete; each also shows what its strategy is chosen for.
func TestUseCases_EachExampleRollsToANewImageUnderItsStrategy(t *testing.T) {
	cases := []useCase{{
		// 3 workers of 1 GPU, plus one surging.
		example: "single-node-aggregated.yaml",
		nodes:   1,
		want: func(v string) layout {
			return layout{"0/frontend": fmt.Sprintf("0=%[1]s 1=%[1]s", v), "0/agg-worker": fmt.Sprintf("0=%[1]s 1=%[1]s 2=%[1]s", v)}
		},
		check: func(t *testing.T, _ *scene, pcs *v1alpha1.PodCliqueSet, events []monitor.Event, start time.Time) {
			least := leastAvailable(events, &pcs.Spec, start)
			if n := least["0/agg-worker"]; n < 3 {
				t.Errorf("agg-worker: %d of 3 pods available at one moment; maxUnavailable 0 with maxSurge 1 keeps all", n)
			}
			if n := least["0/frontend"]; n < 1 {
				t.Errorf("frontend: %d pods available at one moment, want at least its minAvailable 1", n)
			}
			checkSurged(t, events, start, func(e monitor.Event) bool { return e.Clique == "agg-worker" && e.Index == 3 }, "agg-worker pod 3")
		},
	}, {
		// 2 replicas of 6 GPUs; one is recreated at a time.
		example: "disaggregated-recreate.yaml",
		nodes:   2,
		want:    func(v string) layout { return everyReplica(2, recreateRoles(v)) },
		check: func(t *testing.T, s *scene, pcs *v1alpha1.PodCliqueSet, events []monitor.Event, start time.Time) {
			checkReplicaRecreate(t, s, pcs, events, start)
			if n, at := fewestAvailableReplicas(events, &pcs.Spec, start); n < 1 {
				t.Errorf("%d PCS replicas available at %s, want at least replicas - maxUnavailable = 1", n, sinceStart(at, start))
			}
		},
	}, {
		// 2 replicas of 6 GPUs and a third one surging: 18 GPUs.
		example: "disaggregated-recreate-surge.yaml",
		nodes:   3,
		want:    func(v string) layout { return everyReplica(2, recreateRoles(v)) },
		check: func(t *testing.T, s *scene, pcs *v1alpha1.PodCliqueSet, events []monitor.Event, start time.Time) {
			checkReplicaRecreate(t, s, pcs, events, start)
			if n, at := fewestAvailableReplicas(events, &pcs.Spec, start); n < 2 {
				t.Errorf("%d PCS replicas available at %s; maxUnavailable 0 keeps both", n, sinceStart(at, start))
			}
			checkSurged(t, events, start, func(e monitor.Event) bool { return e.Replica == 2 }, "PCS replica 2")
		},
	}, {
		// Per replica 3 prefill and 2 decode group replicas of 2 GPUs, plus a
		// surging decode one: 22 GPUs at the peak.
		example: "multinode-aggregated.yaml",
		nodes:   3,
		want: func(v string) layout {
			return everyReplica(2, layout{"prefill": fmt.Sprintf("0=%[1]s 1=%[1]s 2=%[1]s", v), "decode": fmt.Sprintf("0=%[1]s 1=%[1]s", v)})
		},
		check: func(t *testing.T, _ *scene, pcs *v1alpha1.PodCliqueSet, events []monitor.Event, start time.Time) {
			least := leastAvailable(events, &pcs.Spec, start)
			for r := range 2 {
				if n := least[fmt.Sprintf("%d/decode", r)]; n < 2 {
					t.Errorf("replica %d decode: %d of 2 group replicas available at one moment; maxUnavailable 0 keeps both", r, n)
				}
				if n := least[fmt.Sprintf("%d/prefill", r)]; n < 2 {
					t.Errorf("replica %d prefill: %d of 3 group replicas available at one moment, want at least 2 (maxUnavailable 1)", r, n)
				}
			}
			checkSurged(t, events, start, func(e monitor.Event) bool { return e.Group == "decode" && e.GroupReplica == 2 }, "decode group replica 2")
		},
	}}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.example, ".yaml"), func(t *testing.T) {
			s := newScene(t, c.nodes, loadExampleAsApplied(t, c.example))
			first := s.awaitLayout("the example to become Available", 2*time.Minute, c.want("v1"))
			start := time.Now()
			pcs := s.update(setImageTag("v2"))
			end := s.awaitLayout("the rollout to v2 to finish", 4*time.Minute, c.want("v2"))
			s.assertRolledOut(end, pcs)
			if end.pcs.Status.UpdateRevision == first.pcs.Status.UpdateRevision {
				t.Errorf("the revision did not change: %s", statusLine(end.pcs))
			}
			c.check(t, s, pcs, s.m.Timeline(), start)
			up := startupOf(s.m.Timeline(), start)
			t.Logf("%s rolled out in %s (to the last replacement Ready); %d pods started", c.example,
				sinceStart(up.lastReady, start), up.pods)
		})
	}
}

// checkSurged checks that a surge unit was created during the rollout and was
// on its way out at its end (the layout the rollout waited for has no
// terminating pods; the monitor has checked every creation against maxSurge).
func checkSurged(t *testing.T, events []monitor.Event, start time.Time, isSurge func(monitor.Event) bool, what string) {
	t.Helper()
	created, deleted := false, false
	for _, e := range events {
		if e.Time.Before(start) || !isSurge(e) {
			continue
		}
		switch e.Kind {
		case monitor.PodCreated:
			created = true
		case monitor.PodDeleting, monitor.PodDeleted:
			deleted = true
		}
	}
	if !created || !deleted {
		t.Errorf("%s: created during the rollout %t, deleted by its end %t; want a surge unit that came and went", what, created, deleted)
	}
}

// checkReplicaRecreate checks what ReplicaRecreate promises, from the
// timeline of a rollout to pcs's spec that began at start: no PCS replica ever
// ran two revisions at once, and each went down whole before coming back.
func checkReplicaRecreate(t *testing.T, s *scene, pcs *v1alpha1.PodCliqueSet, events []monitor.Event, start time.Time) []teardown {
	t.Helper()
	o, err := s.observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	newRevision := o.pcs.Status.UpdateRevision
	if mixed := mixedRevisions(events, start); len(mixed) > 0 {
		t.Errorf("a PCS replica ran two revisions at once:\n%s", joinLines(mixed))
	}
	tds := checkWholeReplicaTeardowns(t, events, start, *pcs.Spec.Replicas, newRevision)
	for _, td := range tds {
		t.Logf("PCS replica %d: %d old pods began terminating from %s to %s (within %s); first new pod %s",
			td.replica, td.oldPods, sinceStart(td.firstGone, start), sinceStart(td.lastGone, start),
			td.lastGone.Sub(td.firstGone).Round(time.Millisecond), sinceStart(td.firstNew, start))
	}
	return tds
}

// ReplicaRecreate with maxSurge 1 and maxUnavailable 0, on the disaggregated example's own
// example of 3 replicas (the example scaled out): a surge replica at index 3
// comes up on the new revision in a gang of its own before any replica goes;
// replicas 0, 1 and 2 are then recreated whole, one at a time; the surge
// replica goes at the end. At every moment of the rollout at least 3 PCS
// replicas are available, and no replica runs two revisions.
func TestReplicaRecreate_SurgeKeepsEveryReplicaAvailable(t *testing.T) {
	const replicas = 3
	// 4 replicas of 6 GPUs at the peak: 24 of the 32 GPUs.
	s := newScene(t, 4, withReplicas(loadExampleAsApplied(t, "disaggregated-recreate-surge.yaml"), replicas))
	want := func(v string) layout { return everyReplica(replicas, recreateRoles(v)) }
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, want("v1"))

	start := time.Now()
	pcs := s.update(setImageTag("v2"))
	surgeGang := naming.BaseGang(s.name, replicas)
	gangOf := map[string]string{}     // surge pod → the PodGroup it joins
	podGroups := map[string]int32{}   // PodGroups seen: name → minCount
	surgeInStatus := map[int32]bool{} // replicas status called surge
	var end *observed
	s.mustAwait("the rollout to v2 to finish", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		end = o
		for i := range o.pods {
			p := &o.pods[i]
			if p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex] != fmt.Sprint(replicas) {
				continue
			}
			if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
				gangOf[p.Name] = *sg.PodGroupName
			} else {
				gangOf[p.Name] = ""
			}
		}
		var groups schedulingv1alpha2.PodGroupList
		if err := testCluster.Client.List(ctx, &groups, client.InNamespace(s.ns)); err != nil {
			return false, "", err
		}
		for _, pg := range groups.Items {
			if pg.Spec.SchedulingPolicy.Gang != nil {
				podGroups[pg.Name] = pg.Spec.SchedulingPolicy.Gang.MinCount
			}
		}
		if up := o.pcs.Status.UpdateProgress; up != nil {
			for _, u := range up.UpdatingReplicas {
				if u.Surge {
					surgeInStatus[u.ReplicaIndex] = true
				}
			}
		}
		d := o.layout.diff(want("v2"))
		return d == "" && o.settled(), o.describe() + "differences: " + d, nil
	})
	s.assertRolledOut(end, pcs)
	events := s.m.Timeline()

	tds := checkReplicaRecreate(t, s, pcs, events, start)
	if n, at := fewestAvailableReplicas(events, &pcs.Spec, start); n < replicas {
		t.Errorf("only %d PCS replicas were available at %s into the rollout; maxUnavailable 0 keeps %d", n, sinceStart(at, start), replicas)
	}

	// The surge replica: index 3 only, up before the first replica went, in
	// its own gang, gone at the end.
	var surgeCreated, surgeGone time.Time
	for _, e := range events {
		if e.Time.Before(start) || e.Replica < replicas {
			continue
		}
		if e.Replica != replicas {
			t.Errorf("%s %s at PCS replica %d; maxSurge 1 allows only index %d", e.Kind, e.Name, e.Replica, replicas)
		}
		if e.Kind == monitor.PodCreated && surgeCreated.IsZero() {
			surgeCreated = e.Time
		}
	}
	if gone := filterEvents(operatorDeletions(t, events, start), func(e monitor.Event) bool { return e.Replica >= replicas }); len(gone) > 0 {
		surgeGone = gone[0].Time
	}
	switch {
	case surgeCreated.IsZero():
		t.Errorf("no surge replica was created")
	case len(tds) > 0 && !surgeCreated.Before(tds[0].firstGone):
		t.Errorf("the surge replica came at %s, after replica 0 began to go at %s", sinceStart(surgeCreated, start), sinceStart(tds[0].firstGone, start))
	}
	for _, td := range tds {
		if !surgeGone.IsZero() && surgeGone.Before(td.firstNew) {
			t.Errorf("the surge replica began to go at %s, before replica %d was recreated (%s)", sinceStart(surgeGone, start), td.replica, sinceStart(td.firstNew, start))
		}
	}
	if !surgeInStatus[replicas] {
		t.Errorf("status.updateProgress never listed replica %d as a surge replica (saw %v)", replicas, surgeInStatus)
	}
	if len(gangOf) == 0 {
		t.Errorf("no pod of the surge replica was ever seen")
	}
	for pod, g := range gangOf {
		if g != surgeGang {
			t.Errorf("surge pod %s joins PodGroup %q, want the surge replica's own gang %s", pod, g, surgeGang)
		}
	}
	if _, ok := podGroups[surgeGang]; !ok {
		t.Errorf("PodGroup %s of the surge replica was never seen (saw %v)", surgeGang, podGroups)
	}

	// Nothing of the surge replica is left: pods (checked above), children, gang.
	s.mustAwait("the surge replica's objects to be gone", time.Minute, func(ctx context.Context) (bool, string, error) {
		sel := client.MatchingLabels{v1alpha1.LabelPodCliqueSet: s.name, v1alpha1.LabelPodCliqueSetReplicaIndex: fmt.Sprint(replicas)}
		var cliques v1alpha1.PodCliqueList
		var groups v1alpha1.PodCliqueScalingGroupList
		for _, l := range []client.ObjectList{&cliques, &groups} {
			if err := testCluster.Client.List(ctx, l, client.InNamespace(s.ns), sel); err != nil {
				return false, "", err
			}
		}
		err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: surgeGang}, &schedulingv1alpha2.PodGroup{})
		if client.IgnoreNotFound(err) != nil {
			return false, "", err
		}
		gangLeft := err == nil
		state := fmt.Sprintf("%d PodCliques, %d scaling groups, PodGroup left %t", len(cliques.Items), len(groups.Items), gangLeft)
		return len(cliques.Items) == 0 && len(groups.Items) == 0 && !gangLeft, state, nil
	})
	gangs := make([]string, 0, len(podGroups))
	for name := range podGroups {
		gangs = append(gangs, name)
	}
	slices.Sort(gangs)
	up := startupOf(events, start)
	t.Logf("rolled out in %s; PodGroups seen %v; surge up at %s, going at %s", sinceStart(up.lastReady, start), gangs,
		sinceStart(surgeCreated, start), sinceStart(surgeGone, start))
}
