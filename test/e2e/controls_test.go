//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// Tests of what steers a rollout beyond its strategy: partition, pause, the
// progress deadline and rollback.

// aggRoles is one replica of examples/single-node-aggregated.yaml with the
// given number of frontend pods.
func aggRoles(version string, frontends int) layout {
	units := make([]string, frontends)
	for i := range units {
		units[i] = fmt.Sprintf("%d=%s", i, version)
	}
	return layout{"frontend": strings.Join(units, " "), "agg-worker": fmt.Sprintf("0=%[1]s 1=%[1]s 2=%[1]s", version)}
}

// The single-node example at 4 replicas (GPUs dropped so that all fit one
// node) with partition 2: an image change updates replicas 2 and 3 and stops
// there with Progressing PartitionReached; replicas 0 and 1 keep the old
// revision, even a pod of replica 0 deleted by hand comes back on it; lowering
// the partition to 0 finishes the rollout.
func TestPartition_HoldsLowerReplicasUntilLowered(t *testing.T) {
	pcs := withoutGPUs(withReplicas(loadExampleAsApplied(t, "single-node-aggregated.yaml"), 4))
	pcs.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: new(int32(2))}
	s := newScene(t, 1, pcs)
	first := s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, everyReplica(4, aggRoles("v1", 2)))
	v1Revision := first.pcs.Status.UpdateRevision
	v1Hashes := templateHashes(t, first.pcs)

	split := layout{}
	for r := range 4 {
		v := "v1"
		if r >= 2 {
			v = "v2"
		}
		for role, units := range aggRoles(v, 2) {
			split[fmt.Sprintf("%d/%s", r, role)] = units
		}
	}
	start := time.Now()
	s.update(setImageTag("v2"))
	var held *observed
	s.mustAwait("replicas 2 and 3 to update and the rollout to stop at the partition", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		held = o
		d := o.layout.diff(split)
		return d == "" && progressingIs(o.pcs, v1alpha1.ReasonPartitionReached), o.describe() + "differences: " + d, nil
	})
	st := &held.pcs.Status
	if st.UpdatedReplicas != 2 || st.CurrentRevision != v1Revision || st.UpdateRevision == v1Revision {
		t.Errorf("status at the partition: %s(want 2 updated, current revision still %s)", statusLine(held.pcs), v1Revision)
	}
	if c := progressingOf(held.pcs); c.Status != "True" {
		t.Errorf("Progressing at the partition: %+v, want True PartitionReached", c)
	}

	// A pod of replica 0 deleted by hand comes back at the old revision (under
	// TerminationStarted under a name of its own: it is found by its index).
	victim := s.podName(0, "frontend", 0)
	before := podNamed(held, victim)
	if before == nil {
		t.Fatalf("no pod %s", victim)
	}
	s.deletePod(victim)
	var p *corev1.Pod
	s.mustAwait("the deleted pod of replica 0 to come back", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		p = livePodAt(o, 0, "frontend", 0)
		return p != nil && p.UID != before.UID && isReady(p) &&
			o.layout.diff(split) == "" && progressingIs(o.pcs, v1alpha1.ReasonPartitionReached), o.describe(), nil
	})
	if h, rev := p.Labels[v1alpha1.LabelTemplateHash], p.Labels[v1alpha1.LabelPodCliqueSetRevision]; h != v1Hashes["frontend"] || rev != v1Revision || imageTag(p) != "v1" {
		t.Errorf("pod %s came back with hash %s, revision %s, image %s; want the old %s, %s, v1",
			victim, h, rev, imageTag(p), v1Hashes["frontend"], v1Revision)
	}

	lowered := time.Now()
	for _, e := range operatorDeletions(t, s.m.Timeline(), start) {
		if e.Replica < 2 && e.Time.Before(lowered) {
			t.Errorf("the operator deleted pod %s of replica %d below the partition", e.Name, e.Replica)
		}
	}
	pcs = s.update(func(spec *v1alpha1.PodCliqueSetSpec) { spec.UpdateStrategy.RollingUpdate.Partition = new(int32(0)) })
	end := s.awaitLayout("the rollout to finish once the partition is 0", 3*time.Minute, everyReplica(4, aggRoles("v2", 2)))
	s.assertRolledOut(end, pcs)
	held0 := filterEvents(operatorDeletions(t, s.m.Timeline(), lowered), func(e monitor.Event) bool { return e.Replica < 2 })
	if len(held0) == 0 {
		t.Errorf("replicas 0 and 1 were not replaced once the partition was lowered")
	}
	t.Logf("held at the partition %s after the image change; finished %s after lowering it",
		sinceStart(lowered, start), time.Since(lowered).Round(100*time.Millisecond))
}

// A rollout of the single-node example at 3 replicas is paused as soon as
// replica 0 starts updating. Once the operator reports Progressing Paused, no
// pod is deleted and none is created on the new revision (where its role is
// not already wholly on it), while scaling still works: the frontends scale
// out from 2 to 3 in every replica, on the revisions in place. Resuming
// finishes the rollout.
func TestPause_HoldsRevisionsWhileScalingWorks(t *testing.T) {
	const replicas = 3
	// 3 replicas of 3 GPUs and a surging worker: 10 GPUs.
	s := newScene(t, 2, withReplicas(loadExampleAsApplied(t, "single-node-aggregated.yaml"), replicas))
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, everyReplica(replicas, aggRoles("v1", 2)))

	start := time.Now()
	updated := s.update(setImageTag("v2"))
	s.mustAwait("replica 0 to start updating", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		up := o.pcs.Status.UpdateProgress
		return o.pcs.Status.ObservedGeneration == updated.Generation && up != nil && len(up.UpdatingReplicas) > 0, o.describe(), nil
	})
	s.update(func(spec *v1alpha1.PodCliqueSetSpec) { spec.Paused = true })
	held := s.awaitProgressing("the operator to report the rollout paused", time.Minute, v1alpha1.ReasonPaused)
	pausedAt := time.Now()
	v2Revision := held.pcs.Status.UpdateRevision
	t.Logf("paused %s into the rollout with the pods at\n%s", sinceStart(pausedAt, start), held.layout)
	// Replicas the rollout has not reached (every pod there, on v1): they must
	// stay wholly on v1. A replica with a pod missing has a replacement under
	// way, which finishes on v2.
	var untouched []int
	v1 := aggRoles("v1", 2)
	for r := range replicas {
		if held.layout[fmt.Sprintf("%d/frontend", r)] == v1["frontend"] && held.layout[fmt.Sprintf("%d/agg-worker", r)] == v1["agg-worker"] {
			untouched = append(untouched, r)
		}
	}
	if len(untouched) == 0 {
		t.Fatalf("the rollout had reached every replica before the pause was reported; nothing left to hold")
	}

	// Scaling while paused: the operator must act on it, and only scale.
	s.update(cliqueReplicas("frontend", 3))
	var scaled *observed
	s.mustAwait("the frontends to scale out to 3 while paused", 2*time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		scaled = o
		ready := map[string]int{}
		for i := range o.pods {
			p := &o.pods[i]
			if p.Labels[v1alpha1.LabelClique] == "frontend" && p.DeletionTimestamp == nil && isReady(p) {
				ready[p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex]]++
			}
		}
		all := true
		for r := range replicas {
			all = all && ready[fmt.Sprint(r)] == 3
		}
		return all && progressingIs(o.pcs, v1alpha1.ReasonPaused), o.describe(), nil
	})
	// And nothing left to do: whatever the pause would let through has had
	// its chance by now.
	s.mustAwait("the operator to have nothing queued", time.Minute, func(ctx context.Context) (bool, string, error) {
		return testOperator.settled(ctx, nil)
	})
	resumed := time.Now()

	// The operator's child controllers may finish a step they took before the
	// pause reached them: the monitor's grace for a superseded spec.
	grace := 2 * time.Second
	events := s.m.Timeline()
	for _, e := range operatorDeletions(t, events, pausedAt.Add(grace)) {
		t.Errorf("pod %s was deleted %s after the pause was reported", e.Name, e.Time.Sub(pausedAt).Round(time.Millisecond))
	}
	revs := revisionTracker{}
	// An index the operator emptied for the update before the pause is refilled
	// on the new revision: a replacement under way finishes.
	type slot struct {
		replica, groupReplica, index int32
		group, clique                string
	}
	slotOf := func(e monitor.Event) slot { return slot{e.Replica, e.GroupReplica, e.Index, e.Group, e.Clique} }
	underWay := map[slot]bool{}
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		revs.see(e)
		if (e.Kind == monitor.PodDeleting || e.Kind == monitor.PodDeleted) && !e.Announced && e.Time.Before(pausedAt) {
			underWay[slotOf(e)] = true
		}
		if e.Kind == monitor.PodCreated && e.Time.Before(pausedAt.Add(grace)) {
			delete(underWay, slotOf(e)) // refilled before the pause held
		}
		if e.Kind != monitor.PodCreated || e.Time.Before(pausedAt.Add(grace)) || e.Revision != v2Revision {
			return
		}
		if underWay[slotOf(e)] {
			delete(underWay, slotOf(e))
			t.Logf("pod %s was created on the new revision while paused: its index was emptied for the update before the pause", e.Name)
			return
		}
		for name, p := range pods {
			if name != e.Name && p.replica == e.Replica && p.group == e.Group && p.clique == e.Clique && !p.terminating && revs[name] != v2Revision {
				t.Errorf("pod %s was created on the new revision while paused, next to %s on %s", e.Name, name, revs[name])
			}
		}
	})
	if st := &scaled.pcs.Status; st.UpdateRevision != v2Revision || st.UpdatedReplicas != held.pcs.Status.UpdatedReplicas {
		t.Errorf("status changed while paused: %s(at the pause: %s)", statusLine(scaled.pcs), statusLine(held.pcs))
	}
	for _, r := range untouched {
		if got := scaled.layout[fmt.Sprintf("%d/frontend", r)]; got != "0=v1 1=v1 2=v1" {
			t.Errorf("replica %d (not reached by the rollout) has frontends %q after the scale-out, want all three on v1", r, got)
		}
	}
	t.Logf("scaled while paused, %s after the pause; pods at\n%s", resumed.Sub(pausedAt).Round(100*time.Millisecond), scaled.layout)

	pcs := s.update(func(spec *v1alpha1.PodCliqueSetSpec) { spec.Paused = false })
	end := s.awaitLayout("the rollout to finish after resuming", 3*time.Minute, everyReplica(replicas, aggRoles("v2", 3)))
	s.assertRolledOut(end, pcs)
	t.Logf("finished %s after resuming", time.Since(resumed).Round(100*time.Millisecond))
}

// stuckSurgePCS has two pods of 4 GPUs on a one-node cluster (8 GPUs): the
// surge pod maxSurge 1 asks for cannot be placed.
const stuckSurgePCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: stuck
spec:
  replicas: 1
  progressDeadlineSeconds: 20
  template:
    cliques:
    - name: engine
      replicas: 2
      updateStrategy: {maxUnavailable: 0, maxSurge: 1}
      template:
        spec:
          containers:
          - name: engine
            image: lockstep-examples/llm-engine:v1
            resources: {limits: {nvidia.com/gpu: 4}}
`

// A surge pod that cannot be scheduled stalls a maxUnavailable-0 rollout:
// after progressDeadlineSeconds (20) the PodCliqueSet says Progressing=False,
// ProgressDeadlineExceeded, naming the surge pod. Switching the clique to
// maxSurge 0 / maxUnavailable 1 unblocks it with no pod deleted by hand: the
// rollout completes and Progressing turns RolloutComplete.
func TestProgressDeadline_StuckSurgeThenUnblocked(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, stuckSurgePCS))
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, layout{"0/engine": "0=v1 1=v1"})

	start := time.Now()
	s.update(setImageTag("v2"))
	surge := s.podName(0, "engine", 2)
	stalled := s.awaitProgressing("the progress deadline to pass", 2*time.Minute, v1alpha1.ReasonProgressDeadlineExceeded)
	exceededAt := time.Now()
	c := progressingOf(stalled.pcs)
	t.Logf("Progressing after %s: %s %s: %s", sinceStart(exceededAt, start), c.Status, c.Reason, c.Message)
	if c.Status != "False" {
		t.Errorf("Progressing is %s with reason %s, want False", c.Status, c.Reason)
	}
	if !strings.Contains(c.Message, "surge pod "+surge) {
		t.Errorf("the Progressing message does not name the surge pod %s: %q", surge, c.Message)
	}
	if exceededAt.Sub(start) < 19*time.Second {
		t.Errorf("the deadline of 20s was reported exceeded %s after the rollout began", sinceStart(exceededAt, start))
	}
	if p := podNamed(stalled, surge); p == nil || p.Spec.NodeName != "" {
		t.Errorf("surge pod %s should exist and be unscheduled while stalled: %+v", surge, p)
	}
	if got := stalled.layout["0/engine"]; !strings.HasPrefix(got, "0=v1 1=v1") {
		t.Errorf("the old pods were touched while the surge pod could not be placed: %q", got)
	}

	unblocked := time.Now()
	pcs := s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
		spec.Template.Clique("engine").UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{
			MaxUnavailable: new(intstr.FromInt32(1)),
			MaxSurge:       new(intstr.FromInt32(0)),
		}
	})
	end := s.awaitLayout("the rollout to finish with maxSurge 0", 2*time.Minute, layout{"0/engine": "0=v2 1=v2"})
	s.assertRolledOut(end, pcs)
	var surgeGone bool
	for _, e := range s.m.Timeline() {
		if e.Announced {
			t.Errorf("a deletion by hand in the timeline: %s %s", e.Kind, e.Name)
		}
		if e.Name == surge && e.Kind == monitor.PodDeleted && e.Time.After(unblocked) {
			surgeGone = true
		}
	}
	if !surgeGone {
		t.Errorf("surge pod %s was not removed after maxSurge became 0", surge)
	}
	t.Logf("finished %s after the switch to maxSurge 0", time.Since(unblocked).Round(100*time.Millisecond))
}

// The single-node example rolled from v1 to v2, then back by setting
// lockstep.dev/rollback-to to the revision number of v1's ControllerRevision:
// the operator puts v1's templates back into the spec, drops the annotation,
// and rolls back under the same strategy (the monitor judging it as any
// update), ending with every pod on v1's template hashes.
func TestRollback_ByAnnotationToTheFirstRevision(t *testing.T) {
	s := newScene(t, 1, loadExampleAsApplied(t, "single-node-aggregated.yaml"))
	want := func(v string) layout { return everyReplica(1, aggRoles(v, 2)) }
	first := s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, want("v1"))
	v1Revision := first.pcs.Status.UpdateRevision
	v1Hashes := templateHashes(t, first.pcs)
	s.update(setImageTag("v2"))
	s.awaitLayout("the rollout to v2 to finish", 2*time.Minute, want("v2"))

	ctx := t.Context()
	var revs appsv1.ControllerRevisionList
	if err := testCluster.Client.List(ctx, &revs, client.InNamespace(s.ns), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: s.name}); err != nil {
		t.Fatal(err)
	}
	number := int64(-1)
	var kept []string
	for _, cr := range revs.Items {
		kept = append(kept, fmt.Sprintf("%d=%s", cr.Revision, cr.Name))
		if cr.Name == v1Revision {
			number = cr.Revision
		}
	}
	slices.Sort(kept)
	if number < 0 {
		t.Fatalf("no ControllerRevision %s (v1's) among %v", v1Revision, kept)
	}
	t.Logf("revisions %v; rolling back to %d", kept, number)

	start := time.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pcs, err := s.get(ctx)
		if err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if pcs.Annotations == nil {
			pcs.Annotations = map[string]string{}
		}
		pcs.Annotations[v1alpha1.AnnotationRollbackTo] = strconv.FormatInt(number, 10)
		return testCluster.Client.Patch(ctx, pcs, patch)
	})
	if err != nil {
		t.Fatal(err)
	}
	var end *observed
	s.mustAwait("the rollback to v1 to finish", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		end = o
		_, annotated := o.pcs.Annotations[v1alpha1.AnnotationRollbackTo]
		d := o.layout.diff(want("v1"))
		return !annotated && d == "" && o.settled(), fmt.Sprintf("annotation still there %t\n%sdifferences: %s", annotated, o.describe(), d), nil
	})
	s.assertRolledOut(end, end.pcs)
	if got := templateHashes(t, end.pcs); fmt.Sprint(got) != fmt.Sprint(v1Hashes) {
		t.Errorf("template hashes after the rollback %v, want v1's %v", got, v1Hashes)
	}
	for i := range end.pods {
		p := &end.pods[i]
		if h := p.Labels[v1alpha1.LabelTemplateHash]; h != v1Hashes[p.Labels[v1alpha1.LabelClique]] {
			t.Errorf("pod %s has template hash %s after the rollback, want v1's %s", p.Name, h, v1Hashes[p.Labels[v1alpha1.LabelClique]])
		}
	}
	if end.pcs.Status.UpdateRevision != v1Revision {
		t.Errorf("update revision after the rollback %s, want v1's %s", end.pcs.Status.UpdateRevision, v1Revision)
	}
	if len(namespaceEvents(t, s.ns, "RollbackStarted")) == 0 {
		t.Errorf("no RollbackStarted Event")
	}
	// The same strategy as any update: the workers surge, never dropping below 3.
	if n := leastAvailable(s.m.Timeline(), &end.pcs.Spec, start)["0/agg-worker"]; n < 3 {
		t.Errorf("agg-worker: %d of 3 pods available at one moment of the rollback; maxUnavailable 0 keeps all", n)
	}
	t.Logf("rolled back in %s", time.Since(start).Round(100*time.Millisecond))
}
