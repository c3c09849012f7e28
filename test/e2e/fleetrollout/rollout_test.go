//go:build e2e

package fleetrollout

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	lockstepv1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// story1Strategy is story 1's: maxUnavailable 2, maxSurge 1.
func story1Strategy() fleetv1alpha1.FederatedRolloutStrategy {
	return fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: intOrStr(2), MaxSurge: intOrStr(1)}
}

// story1Bounds: never fewer than 8 available or more than 11 pods.
var story1Bounds = fleetwatch.PodBounds{MinAvailable: 8, MaxPods: 11, MaxUpdated: fleetwatch.Unchecked}

// Story 1: a Deployment of 10 split 4/6 rolls out with maxUnavailable 2 and
// maxSurge 1 fleet-wide: the watcher never sees fewer than 8 pods available or
// more than 11, and the rollout completes. Its time is logged against the
// ideal: the units over the budget in flight, in waves of one ready delay.
func TestStory1_DeploymentSplit4And6KeepsTheGlobalBudget(t *testing.T) {
	s := newStory(t, "story1", "Deployment")
	s.create(story1Strategy())
	w := s.watch(story1Bounds)
	start := s.startRollout()

	// One mid-rollout status, for the docs.
	mid := s.waitFor("the rollout under way", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return fw.Status.ObservedGeneration == fw.Generation && fw.Status.UpdatedReplicas > 0 && !complete(fw)
	})
	t.Logf("mid-rollout:\n%s", statusYAML(mid))
	// The hub's metrics follow the members: mid-rollout, then at the end.
	t.Logf("the hub's member series mid-rollout:\n%s", strings.Join(s.memberSeries(), "\n"))

	fw := s.finish(w, 10)
	s.eventually("the hub's metrics to show both members updated", func() (bool, string) {
		series := s.memberSeries()
		want := []string{
			`lockstep_federatedworkload_member_replicas_updated{cluster="m1",federatedworkload="web",namespace="story1"} 4`,
			`lockstep_federatedworkload_member_replicas_updated{cluster="m2",federatedworkload="web",namespace="story1"} 6`,
		}
		for _, w := range want {
			if !slices.Contains(series, w) {
				return false, strings.Join(series, "\n")
			}
		}
		return true, ""
	})
	took := time.Since(start)
	s.checkWatcher(w)
	ready, _ := time.ParseDuration(readyDelay)
	waves := (10 + 2 + 1 - 1) / (2 + 1)
	ideal := time.Duration(waves) * ready
	t.Logf("rollout of 10 (4/6, maxUnavailable 2, maxSurge 1, pod ready delay %s): %s; ideal %d waves × %s = %s; ratio %.1f",
		readyDelay, took.Round(100*time.Millisecond), waves, readyDelay, ideal, took.Seconds()/ideal.Seconds())
	for _, c := range fw.Status.Clusters {
		want := map[string]int32{"m1": 4, "m2": 6}[c.Name]
		if c.DesiredReplicas != want || c.UpdatedReplicas != want || c.AvailableReplicas != want {
			t.Errorf("cluster %s at the end: %+v, want %d updated and available", c.Name, c, want)
		}
	}
}

// Story 2 with StatefulSets: 10 split 4/6, global partition 4. Exactly 6 pods
// run the new image at the end, never more at any observed state, and the
// budget (maxUnavailable 2, no surge) holds throughout.
func TestStory2_StatefulSetPartition4UpdatesExactlySix(t *testing.T) {
	s := newStory(t, "story2", "StatefulSet")
	s.create(fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: intOrStr(2)})
	w := s.watch(fleetwatch.PodBounds{MinAvailable: 8, MaxPods: 10, MaxUpdated: 6})
	s.update("starting the rollout with partition 4", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.Template = s.template(newImage)
		fw.Spec.RolloutStrategy.Partition = 4
	})
	fw := s.finish(w, 6)
	s.checkWatcher(w)
	var allowed int32
	for _, m := range memberNames {
		sts := s.memberObject(m).(*appsv1.StatefulSet)
		p := int32(0)
		if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			p = *ru.Partition
		}
		allowed += *sts.Spec.Replicas - p
		t.Logf("%s: replicas %d, partition %d, updated %d", m, *sts.Spec.Replicas, p, sts.Status.UpdatedReplicas)
	}
	if allowed != 6 {
		t.Errorf("the members' partitions allow %d pods on the new revision, want exactly 10 − 4 = 6", allowed)
	}
	t.Logf("Progressing: %s", progressing(fw).Message)
}

// PodCliqueSet members with partition: 10 PodCliqueSet replicas (one pod
// each) split 4/6, global partition 4, maxUnavailable 2, with the Lockstep
// operator running in each member. Exactly 6 replicas end on the new
// revision, never more, and the budget holds throughout.
func TestPodCliqueSetPartition4UpdatesExactlySix(t *testing.T) {
	for _, m := range memberNames {
		op, err := testFleet.Operator(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Start(t.Context()); err != nil {
			t.Fatalf("starting the operator in %s: %v", m, err)
		}
		t.Cleanup(func() {
			if err := op.End(syscall.SIGTERM); err != nil {
				t.Errorf("the operator in %s: %v (log %s)", m, err, op.LogPath)
			}
		})
	}
	s := newStory(t, "pcs", "PodCliqueSet")
	s.create(fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: intOrStr(2)})
	w := s.watch(fleetwatch.PodBounds{MinAvailable: 8, MaxPods: 10, MaxUpdated: 6})
	s.update("starting the rollout with partition 4", func(fw *fleetv1alpha1.FederatedWorkload) {
		fw.Spec.Template = s.template(newImage)
		fw.Spec.RolloutStrategy.Partition = 4
	})
	fw := s.finish(w, 6)
	s.checkWatcher(w)
	var allowed int32
	for _, m := range memberNames {
		pcs := s.memberObject(m).(*lockstepv1alpha1.PodCliqueSet)
		p := int32(0)
		if ru := pcs.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			p = *ru.Partition
		}
		allowed += ptr.Deref(pcs.Spec.Replicas, 1) - p
		t.Logf("%s: replicas %d, partition %d, updated %d", m, ptr.Deref(pcs.Spec.Replicas, 1), p, pcs.Status.UpdatedReplicas)
	}
	if allowed != 6 {
		t.Errorf("the members' partitions allow %d replicas on the new revision, want exactly 10 − 4 = 6", allowed)
	}
	t.Logf("Progressing: %s", progressing(fw).Message)
}

// Paused mid-rollout, no member starts a new pod (once the members' own
// controllers have seen the pause); resumed, the rollout completes within the
// budget.
func TestPauseStartsNothingNewAndResumeCompletes(t *testing.T) {
	s := newStory(t, "pause", "Deployment")
	s.create(story1Strategy())
	w := s.watch(story1Bounds)
	s.startRollout()
	s.waitPods(w, "the first pod on the new image", func(c fleetwatch.PodCounts) bool { return c.Updated > 0 })

	s.update("pausing", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.RolloutStrategy.Paused = true })
	fw := s.waitFor("the workload paused", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return fw.Status.ObservedGeneration == fw.Generation && meta.IsStatusConditionTrue(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadPaused))
	})
	if fw.Status.UpdatedReplicas >= 10 {
		t.Fatalf("the rollout finished before the pause: %s", describe(fw))
	}
	s.waitMembersPaused()
	created := w.Created()
	counts := w.Counts()
	// A negative: for five seconds (two and a half rounds of the hub) no pod may start.
	until := time.Now().Add(5 * time.Second)
	for time.Now().Before(until) {
		if n := w.Created(); n != created {
			t.Fatalf("%d pod(s) started while paused (before: %s, now: %s)", n-created, counts, w.Counts())
		}
		time.Sleep(poll) // pacing the checks of a negative, not synchronisation
	}
	t.Logf("paused at %s for 5s, nothing started", counts)

	s.update("resuming", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.RolloutStrategy.Paused = false })
	s.finish(w, 10)
	s.checkWatcher(w)
}

// waitMembersPaused waits until every member Deployment is paused as its
// controller has observed, and every ReplicaSet has the pods it wants: from
// then on only a rollout step could start a pod.
func (s *story) waitMembersPaused() {
	s.t.Helper()
	s.eventually("the members' controllers seeing the pause", func() (bool, string) {
		for _, m := range memberNames {
			d := s.memberObject(m).(*appsv1.Deployment)
			if !d.Spec.Paused || d.Status.ObservedGeneration < d.Generation {
				return false, m + ": Deployment not paused yet"
			}
			var rss appsv1.ReplicaSetList
			if err := s.members[m].List(s.ctx, &rss, client.InNamespace(s.ns), client.MatchingLabels{appLabel: s.name}); err != nil {
				return false, err.Error()
			}
			for _, rs := range rss.Items {
				if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != *rs.Spec.Replicas {
					return false, m + ": ReplicaSet " + rs.Name + " still scaling"
				}
			}
		}
		return true, ""
	})
}

// A member stopped mid-rollout (its whole cluster, with kwokctl) keeps its
// charge: it stays in the division with its share and grant, the other
// member gets neither its share nor budget, and the watcher's invariants hold
// over what it last saw of the stopped member and what it sees of the other.
// Started again, the rollout completes.
func TestMemberStoppedMidRolloutKeepsItsCharge(t *testing.T) {
	s := newStory(t, "stopped", "Deployment")
	s.create(story1Strategy())
	w := s.watch(story1Bounds)
	s.startRollout()
	s.waitPods(w, "m1's first pod on the new image", func(fleetwatch.PodCounts) bool { return w.MemberCounts("m1").Updated > 0 })

	ctx := context.Background()
	s.dropNodeLeases("m1")
	if err := testFleet.MemberKwokctl(ctx, "m1", "stop", "cluster"); err != nil {
		t.Fatal(err)
	}
	started := false
	startM1 := func() {
		if !started {
			started = true
			if err := testFleet.MemberKwokctl(ctx, "m1", "start", "cluster"); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(startM1)
	s.waitMemberReady("m1", metav1.ConditionFalse)
	before := s.waitFor("m1 reported stale", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return contains(progressing(fw).Message, "cluster m1: status stale")
	})
	grant := clusterEntry(before, "m1").Grant
	// m2 may have started before m1 stopped (rounds follow member events at
	// once); from the stop on, it gets no more than it held then.
	m2Grant := clusterEntry(before, "m2").Grant
	t.Logf("m1 stopped; its grant: %+v; m2's: %+v; %s", grant, m2Grant, progressing(before).Message)
	until := time.Now().Add(6 * time.Second)
	for time.Now().Before(until) {
		if d := s.memberObject("m2").(*appsv1.Deployment); *d.Spec.Replicas != 6 {
			t.Fatalf("m2 took m1's share while m1 was stopped: replicas %d", *d.Spec.Replicas)
		}
		if e := clusterEntry(s.workload(), "m2"); e == nil || e.Grant.MaxUnavailable > m2Grant.MaxUnavailable ||
			e.Grant.MaxSurge > m2Grant.MaxSurge || (e.Grant.Started && !m2Grant.Started) {
			t.Fatalf("m2 took budget while m1 was stopped: its grant went from %+v to %+v", m2Grant, e)
		}
		e := clusterEntry(s.workload(), "m1")
		if e == nil || e.DesiredReplicas != 4 || e.Grant != grant {
			t.Fatalf("m1's share or grant changed while it was stopped: %+v", e)
		}
		time.Sleep(poll) // pacing the checks of a negative, not synchronisation
	}

	restarted := time.Now()
	startM1()
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpMember("m1")
		}
	})
	s.waitNodeLeasesTaken("m1", restarted)
	s.waitNodesSchedulable("m1")
	s.waitMemberReady("m1", metav1.ConditionTrue)
	s.finish(w, 10)
	s.checkWatcher(w)
}

// kwok holds each node's lease under an identity of its process, so a
// restarted kwok runs no pod of a node until the old lease expires (200 s
// here); a kubelet comes back under its node's name and carries on at once.
// Dropping the leases just before the stop lets the restarted kwok take its
// nodes at once, as a kubelet would.
func (s *story) dropNodeLeases(m string) {
	s.t.Helper()
	var leases coordinationv1.LeaseList
	if err := s.members[m].List(s.ctx, &leases, client.InNamespace(corev1.NamespaceNodeLease)); err != nil {
		s.t.Fatal(err)
	}
	for i := range leases.Items {
		if err := s.members[m].Delete(s.ctx, &leases.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			s.t.Fatal(err)
		}
	}
}

// waitNodeLeasesTaken waits until every node of member m has a lease renewed
// since the restart at since, dropping a stale one the old process made again
// between the drop and the stop.
func (s *story) waitNodeLeasesTaken(m string, since time.Time) {
	s.t.Helper()
	s.eventually("the restarted kwok holding the node leases of "+m, func() (bool, string) {
		var nodes corev1.NodeList
		if err := s.members[m].List(s.ctx, &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			var l coordinationv1.Lease
			err := s.members[m].Get(s.ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n.Name}, &l)
			switch {
			case apierrors.IsNotFound(err):
				return false, n.Name + ": no lease yet"
			case err != nil:
				return false, err.Error()
			case l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(since.Add(-time.Second)):
				_ = s.members[m].Delete(s.ctx, &l)
				return false, n.Name + ": a lease of the old process, dropped"
			}
		}
		return true, ""
	})
}

// waitNodesSchedulable waits until every node of member m is Ready and
// carries none of the node lifecycle controller's taints: a restarted control
// plane first marks nodes it has not heard from unreachable, and new pods wait
// until the restarted kwok's heartbeats clear that.
func (s *story) waitNodesSchedulable(m string) {
	s.t.Helper()
	s.eventually("the nodes of "+m+" Ready and untainted", func() (bool, string) {
		var nodes corev1.NodeList
		if err := s.members[m].List(s.ctx, &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			}
			if !ready {
				return false, n.Name + ": not Ready"
			}
			for _, taint := range n.Spec.Taints {
				if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
					return false, n.Name + ": tainted " + taint.Key
				}
			}
		}
		return true, ""
	})
}

// dumpMember logs member m's nodes and the story's pods there, so a failure
// after a restart says which part of the member did not come back.
func (s *story) dumpMember(m string) {
	var nodes corev1.NodeList
	if err := s.members[m].List(s.ctx, &nodes); err != nil {
		s.t.Logf("%s: listing nodes: %v", m, err)
	}
	for _, n := range nodes.Items {
		s.t.Logf("%s: node %s taints %v conditions %v", m, n.Name, n.Spec.Taints, n.Status.Conditions)
	}
	var pods corev1.PodList
	if err := s.members[m].List(s.ctx, &pods, client.InNamespace(s.ns)); err != nil {
		s.t.Logf("%s: listing pods: %v", m, err)
	}
	for _, p := range pods.Items {
		s.t.Logf("%s: pod %s node %q phase %s deleting %t conditions %v", m, p.Name, p.Spec.NodeName, p.Status.Phase,
			p.DeletionTimestamp != nil, p.Status.Conditions)
	}
}

func (s *story) waitMemberReady(m string, want metav1.ConditionStatus) {
	s.t.Helper()
	s.eventually("MemberCluster "+m+" Ready="+string(want), func() (bool, string) {
		var mc fleetv1alpha1.MemberCluster
		if err := s.hub.Get(s.ctx, client.ObjectKey{Name: m}, &mc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
		return c != nil && c.Status == want, "not yet"
	})
}

// The hub SIGKILLed mid-rollout and started again resumes from the objects:
// the rollout completes, the watcher saw no state outside the budget, and no
// member object was recreated.
func TestHubKilledMidRolloutResumes(t *testing.T) {
	s := newStory(t, "hubkill", "Deployment")
	s.create(story1Strategy())
	uids := s.memberUIDs()
	w := s.watch(story1Bounds)
	s.startRollout()
	s.waitPods(w, "two pods on the new image", func(c fleetwatch.PodCounts) bool { return c.Updated >= 2 })
	if err := testFleet.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("hub killed at %s", w.Counts())
	if err := testFleet.Process.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.finish(w, 10)
	s.checkWatcher(w)
	for m, uid := range s.memberUIDs() {
		if uid != uids[m] {
			t.Errorf("the member object in %s was recreated", m)
		}
	}
}

// A re-shard of the placement during a rollout (each cluster moves to a
// decision group of its own: surge, then finalize) recreates no member object
// and breaks no invariant.
func TestReshardDuringRolloutRecreatesNoMemberObject(t *testing.T) {
	s := newStory(t, "reshard", "Deployment")
	s.create(story1Strategy())
	uids := s.memberUIDs()
	w := s.watch(story1Bounds)
	s.startRollout()
	s.waitPods(w, "the first pod on the new image", func(c fleetwatch.PodCounts) bool { return c.Updated > 0 })

	var pl fleetv1alpha1.Placement
	key := client.ObjectKey{Namespace: s.ns, Name: "both"}
	if err := s.hub.Get(s.ctx, key, &pl); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pl.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = &one
	if err := s.hub.Update(s.ctx, &pl); err != nil {
		t.Fatalf("re-sharding the placement: %v", err)
	}
	s.eventually("the placement settled in two decision groups", func() (bool, string) {
		if err := s.hub.Get(s.ctx, key, &pl); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pl.Generation && len(pl.Status.DecisionGroups) == 2,
			describePlacement(&pl)
	})
	if fw := s.workload(); complete(fw) {
		t.Fatalf("the rollout was over before the re-shard settled: %s", describe(fw))
	}
	s.finish(w, 10)
	s.checkWatcher(w)
	for m, uid := range s.memberUIDs() {
		if uid != uids[m] {
			t.Errorf("the member object in %s was recreated by the re-shard", m)
		}
	}
}

func describePlacement(pl *fleetv1alpha1.Placement) string {
	c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
	if c == nil {
		return "no DecisionsSettled yet"
	}
	return c.Reason + ": " + c.Message
}

// memberSeries are the per-member series the hub serves for the story's
// workload, read from its /metrics.
func (s *story) memberSeries() []string {
	s.t.Helper()
	resp, err := http.Get(testFleet.Process.MetricsURL())
	if err != nil {
		return []string{err.Error()}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "lockstep_federatedworkload_member_") && strings.Contains(line, `namespace="`+s.ns+`"`) {
			out = append(out, line)
		}
	}
	return out
}
