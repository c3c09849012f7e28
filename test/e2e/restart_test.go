//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// podsDeletingSince counts the pods that began terminating from from on, by name.
func podsDeletingSince(events []monitor.Event, from time.Time) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		if e.Kind == monitor.PodDeleting && !e.Time.Before(from) && !e.Announced {
			out[e.Name]++
		}
	}
	return out
}

// The operator is killed (SIGKILL) twice during the default rollout of the
// disaggregated example, once inside PCS replica 0 and once inside replica 1,
// and started again each time. The rollout finishes under the invariant
// monitor, with every pod replaced exactly once and indices without holes: a
// new run rebuilds what it needs from the cluster, nothing from memory.
func TestRestart_KilledMidRolloutFinishes(t *testing.T) {
	s := newScene(t, disaggNodes, loadExample(t, "disaggregated.yaml"))
	ctx := t.Context()
	s.awaitLayout("the example to become Available", 2*time.Minute, disaggLayout("v1"))

	start := time.Now()
	s.update(setImageTag("v2"))
	// Replica 0 has 15 pods: after 2 replacements the rollout is inside it, after
	// 17 inside replica 1.
	for _, k := range []int{2, disaggPodsPerReplica + 2} {
		s.mustAwait(fmt.Sprintf("%d pods replaced", k), 2*time.Minute, func(context.Context) (bool, string, error) {
			n := len(podsDeletingSince(s.m.Timeline(), start))
			return n >= k, fmt.Sprintf("%d pods replaced", n), nil
		})
		if err := testOperator.restart(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("operator killed and restarted after %d replacements, %s into the rollout", k, time.Since(start).Round(100*time.Millisecond))
	}
	after := s.awaitLayout("the rollout to finish after two restarts", 4*time.Minute, disaggLayout("v2"))

	for name, n := range podsDeletingSince(s.m.Timeline(), start) {
		if n > 1 {
			t.Errorf("pod %s was deleted %d times", name, n)
		}
	}
	if err := s.indicesWithoutHoles(ctx); err != nil {
		t.Error(err)
	}
	if st := &after.pcs.Status; st.UpdatedReplicas != 2 || st.AvailableReplicas != 2 {
		t.Errorf("status after the rollout: %s", statusLine(after.pcs))
	}
}

// fingerprint is what a restart must not change: every pod (by UID), every
// child's spec (by generation) and the revision history.
type fingerprint struct {
	pods, children, revisions map[string]string
}

func takeFingerprint(ctx context.Context, ns string) (fingerprint, error) {
	f := fingerprint{pods: map[string]string{}, children: map[string]string{}, revisions: map[string]string{}}
	var pods corev1.PodList
	var cliques v1alpha1.PodCliqueList
	var groups v1alpha1.PodCliqueScalingGroupList
	var revs appsv1.ControllerRevisionList
	for _, l := range []client.ObjectList{&pods, &cliques, &groups, &revs} {
		if err := testCluster.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			return f, err
		}
	}
	for _, p := range pods.Items {
		f.pods[p.Name] = string(p.UID)
	}
	for _, c := range cliques.Items {
		f.children["PodClique "+c.Name] = fmt.Sprintf("%s gen %d", c.UID, c.Generation)
	}
	for _, g := range groups.Items {
		f.children["PodCliqueScalingGroup "+g.Name] = fmt.Sprintf("%s gen %d", g.UID, g.Generation)
	}
	for _, r := range revs.Items {
		f.revisions[r.Name] = fmt.Sprint(r.Revision)
	}
	return f, nil
}

func diffMaps(what string, before, after map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] {
			out = append(out, fmt.Sprintf("%s %s: %q became %q", what, k, before[k], after[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s is new", what, k))
		}
	}
	return out
}

// A restart after a finished rollout changes nothing: the new run reconciles
// every object (measured from its own metrics) and leaves every pod, every
// child's spec and the revision history as they were. Revisions hash the same
// templates the same way in every run.
func TestRestart_AfterARolloutChangesNothing(t *testing.T) {
	s := newScene(t, disaggNodes, loadExample(t, "disaggregated.yaml"))
	ctx := t.Context()
	s.awaitLayout("the example to become Available", 2*time.Minute, disaggLayout("v1"))
	s.update(setImageTag("v2"))
	s.awaitLayout("the rollout to finish", 3*time.Minute, disaggLayout("v2"))
	// The status says complete one write before the children stop naming the
	// old revision; the fingerprint is of the state after both.
	s.mustAwait("the children to name no older revision", time.Minute, func(ctx context.Context) (bool, string, error) {
		var cliques v1alpha1.PodCliqueList
		var groups v1alpha1.PodCliqueScalingGroupList
		for _, l := range []client.ObjectList{&cliques, &groups} {
			if err := testCluster.Client.List(ctx, l, client.InNamespace(s.ns)); err != nil {
				return false, "", err
			}
		}
		var stale []string
		for _, c := range cliques.Items {
			if c.Spec.UpdateStrategy.CurrentRevision != "" && c.Labels[v1alpha1.LabelPodCliqueScalingGroup] == "" {
				stale = append(stale, c.Name)
			}
		}
		for _, g := range groups.Items {
			if g.Spec.UpdateStrategy.CurrentRevision != "" {
				stale = append(stale, g.Name)
			}
		}
		return len(stale) == 0, "still naming an older revision: " + strings.Join(stale, ", "), nil
	})

	before, err := takeFingerprint(ctx, s.ns)
	if err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	if err := testOperator.restart(ctx); err != nil {
		t.Fatal(err)
	}
	// Every PodClique, group and the PodCliqueSet of this test seen by the new run.
	nCliques, nGroups := 0, 0
	for k := range before.children {
		if strings.HasPrefix(k, "PodClique ") {
			nCliques++
		} else {
			nGroups++
		}
	}
	s.mustAwait("the new run to reconcile everything", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		return testOperator.settled(ctx, map[string]int{"podcliqueset": 1, "podcliquescalinggroup": nGroups, "podclique": nCliques})
	})

	after, err := takeFingerprint(ctx, s.ns)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	changes = append(changes, diffMaps("pod", before.pods, after.pods)...)
	changes = append(changes, diffMaps("child", before.children, after.children)...)
	changes = append(changes, diffMaps("revision", before.revisions, after.revisions)...)
	for _, e := range s.m.Timeline() {
		if !e.Time.Before(restarted) && (e.Kind == monitor.PodCreated || e.Kind == monitor.PodDeleting) {
			changes = append(changes, fmt.Sprintf("%s %s after the restart", e.Kind, e.Name))
		}
	}
	if len(changes) > 0 {
		t.Errorf("the restart changed the workload:\n%s", strings.Join(changes, "\n"))
	}
	o, err := s.observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !o.settled() {
		t.Errorf("after the restart the PodCliqueSet no longer reports a finished rollout: %s", o.describe())
	}
}
