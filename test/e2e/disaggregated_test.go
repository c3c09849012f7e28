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

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// examples/disaggregated.yaml: per PCS replica a frontend of 3 pods and two
// scaling groups (prefill, decode) of 2 replicas, each a leader and 2 workers
// with one GPU apiece: 15 pods and 12 GPUs per replica, 2 replicas.
const (
	disaggNodes          = 4 // 32 GPUs for 24
	disaggPodsPerReplica = 15
)

func disaggLayout(version string) layout {
	return everyReplica(2, layout{
		"frontend": fmt.Sprintf("0=%[1]s 1=%[1]s 2=%[1]s", version),
		"prefill":  fmt.Sprintf("0=%[1]s 1=%[1]s", version),
		"decode":   fmt.Sprintf("0=%[1]s 1=%[1]s", version),
	})
}

// The disaggregated example is created, every pod is bound by the real
// scheduler through its gangs (docs/gangs.md), and the PodCliqueSet reports
// itself Available.
func TestDisaggregated_CreatesGangScheduledAndAvailable(t *testing.T) {
	s := newScene(t, disaggNodes, loadExample(t, "disaggregated.yaml"))
	o := s.awaitLayout("the example to become Available", 2*time.Minute, disaggLayout("v1"))
	t.Logf("Available %s after creation", time.Since(s.created).Round(100*time.Millisecond))
	ctx := t.Context()

	st := &o.pcs.Status
	if st.Replicas != 2 || st.AvailableReplicas != 2 || st.ReadyReplicas != 2 || st.UpdatedReplicas != 2 {
		t.Errorf("status counts: %s", statusLine(o.pcs))
	}
	if !apimeta.IsStatusConditionTrue(st.Conditions, "Available") {
		t.Errorf("condition Available is not True: %s", statusLine(o.pcs))
	}
	if err := s.indicesWithoutHoles(ctx); err != nil {
		t.Error(err)
	}

	// The gangs: a base gang per PCS replica (the frontend and group replica 0
	// of each group: 3 + 3 + 3 pods) and a scaled gang per group replica above
	// the group's minAvailable of 1, each scheduled.
	wantGangs := map[string]int32{}
	for r := range 2 {
		wantGangs[naming.BaseGang(s.name, r)] = 9
		for _, g := range []string{"prefill", "decode"} {
			wantGangs[naming.ScaledGang(s.scalingGroupName(r, g), 1)] = 3
		}
	}
	var groups schedulingv1alpha2.PodGroupList
	if err := testCluster.Client.List(ctx, &groups, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	gotGangs := map[string]int32{}
	for _, pg := range groups.Items {
		if pg.Spec.SchedulingPolicy.Gang == nil {
			t.Errorf("PodGroup %s has no gang policy", pg.Name)
			continue
		}
		gotGangs[pg.Name] = pg.Spec.SchedulingPolicy.Gang.MinCount
		if !apimeta.IsStatusConditionTrue(pg.Status.Conditions, schedulingv1alpha2.PodGroupScheduled) {
			t.Errorf("PodGroup %s is not scheduled: %+v", pg.Name, pg.Status.Conditions)
		}
	}
	if fmt.Sprint(gotGangs) != fmt.Sprint(wantGangs) {
		t.Errorf("PodGroups (name: minCount) %v, want %v", gotGangs, wantGangs)
	}

	scheduledBy := schedulerEvents(t, s.ns)
	gpusOn := map[string]int64{}
	for i := range o.pods {
		p := &o.pods[i]
		if p.Spec.NodeName == "" || !isTrue(podCondition(p, corev1.PodScheduled)) {
			t.Errorf("pod %s is not bound: node %q, conditions %+v", p.Name, p.Spec.NodeName, p.Status.Conditions)
		}
		if scheduledBy[p.Name] != p.Spec.NodeName {
			t.Errorf("pod %s: no Scheduled event from the default scheduler for node %s (events: %q)", p.Name, p.Spec.NodeName, scheduledBy[p.Name])
		}
		if want := wantGangOf(s, p); p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil ||
			*p.Spec.SchedulingGroup.PodGroupName != want {
			t.Errorf("pod %s: scheduling group %+v, want PodGroup %s", p.Name, p.Spec.SchedulingGroup, want)
		}
		replica := p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex]
		if p.Spec.Hostname != p.Name || p.Spec.Subdomain != s.name+"-"+replica {
			t.Errorf("pod %s: hostname %q subdomain %q, want %q and %q", p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.Name, s.name+"-"+replica)
		}
		if q, ok := p.Spec.Containers[0].Resources.Limits[gpuResource]; ok {
			gpusOn[p.Spec.NodeName] += q.Value()
		}
	}
	if len(o.pods) != 2*disaggPodsPerReplica {
		t.Errorf("%d pods, want %d", len(o.pods), 2*disaggPodsPerReplica)
	}
	for node, gpus := range gpusOn {
		if gpus > e2eGPUsPerNode {
			t.Errorf("node %s holds %d GPUs, more than its %d", node, gpus, e2eGPUsPerNode)
		}
	}
	t.Logf("GPUs per node: %v", gpusOn)

	for r := range 2 {
		svc := &corev1.Service{}
		if err := testCluster.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: naming.HeadlessService(s.name, r)}, svc); err != nil {
			t.Errorf("headless Service of replica %d: %v", r, err)
		} else if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("Service %s has clusterIP %q, want a headless Service", svc.Name, svc.Spec.ClusterIP)
		}
	}
}

// wantGangOf is the PodGroup a pod of the disaggregated example belongs to.
func wantGangOf(s *scene, p *corev1.Pod) string {
	replica, _ := strconv.Atoi(p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex])
	group, inGroup := p.Labels[v1alpha1.LabelPodCliqueScalingGroup]
	j, _ := strconv.Atoi(p.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex])
	if inGroup && j >= 1 {
		return naming.ScaledGang(s.scalingGroupName(replica, group), j)
	}
	return naming.BaseGang(s.name, replica)
}

// schedulerEvents maps each pod of ns to the node the default scheduler's
// Scheduled event names (its note reads "... assigned <ns>/<pod> to <node>").
func schedulerEvents(t *testing.T, ns string) map[string]string {
	t.Helper()
	var events eventsv1.EventList
	if err := testCluster.Client.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range events.Items {
		if e.Reason != "Scheduled" || e.ReportingController != corev1.DefaultSchedulerName || e.Regarding.Kind != "Pod" {
			continue
		}
		var node string
		if _, err := fmt.Sscanf(e.Note, "Successfully assigned "+ns+"/"+e.Regarding.Name+" to %s", &node); err == nil {
			out[e.Regarding.Name] = node
		}
	}
	return out
}

func isTrue(c *corev1.PodCondition) bool { return c != nil && c.Status == corev1.ConditionTrue }

// An image change rolls the disaggregated example with the default strategy:
// one PCS replica at a time; inside it at most one frontend pod and one
// replica of each group down at once, frontend pods oldest first; every pod
// replaced exactly once; the end has every pod on the new template at indices
// without holes. The test also measures the rollout against its ideal.
func TestDisaggregated_DefaultRollingUpdate(t *testing.T) {
	s := newScene(t, disaggNodes, loadExample(t, "disaggregated.yaml"))
	ctx := t.Context()
	s.awaitLayout("the example to become Available", 2*time.Minute, disaggLayout("v1"))

	// Recreate frontend pod 0 of each replica: it becomes the newest, so
	// oldest-first must now replace it last, which index order would not.
	first, err := s.observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldUIDs := map[types.UID]bool{}
	for i := range first.pods {
		oldUIDs[first.pods[i].UID] = true
	}
	for r := range 2 {
		s.deletePod(s.podName(r, "frontend", 0))
	}
	s.mustAwait("the recreated frontend pods to be Ready", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		recreated := 0
		for i := range o.pods {
			if !oldUIDs[o.pods[i].UID] {
				recreated++
			}
		}
		return recreated == 2 && o.layout.diff(disaggLayout("v1")) == "" && o.settled(), o.describe(), nil
	})
	before, err := s.observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldRevision := before.pcs.Status.UpdateRevision
	wantOrder := oldestFirst(before.pods, "frontend")

	start := time.Now()
	pcs := s.update(setImageTag("v2"))
	after := s.awaitLayout("the rollout to finish", 3*time.Minute, disaggLayout("v2"))
	reportedAt := time.Now()
	events := s.m.Timeline()
	spec := &pcs.Spec
	hashes := templateHashes(t, pcs)

	// End state: every pod on the new template, at indices without holes.
	for i := range after.pods {
		p := &after.pods[i]
		if h := p.Labels[v1alpha1.LabelTemplateHash]; h != hashes[p.Labels[v1alpha1.LabelClique]] {
			t.Errorf("pod %s has template hash %s, want %s", p.Name, h, hashes[p.Labels[v1alpha1.LabelClique]])
		}
	}
	if err := s.indicesWithoutHoles(ctx); err != nil {
		t.Error(err)
	}
	st := &after.pcs.Status
	if st.UpdateRevision == oldRevision || st.UpdatedReplicas != 2 || st.AvailableReplicas != 2 {
		t.Errorf("status after the rollout: %s(revision before it: %s)", statusLine(after.pcs), oldRevision)
	}

	// Every pod replaced exactly once.
	deleted := operatorDeletions(t, events, start)
	names := map[string]int{}
	for _, e := range deleted {
		names[e.Name]++
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("pod %s was deleted %d times", name, n)
		}
	}
	if len(deleted) != 2*disaggPodsPerReplica {
		t.Errorf("the operator deleted %d pods, want each of the %d once", len(deleted), 2*disaggPodsPerReplica)
	}

	// One PCS replica at a time: no pod of replica 1 goes before replica 0 is
	// whole on the new template and Ready.
	replica0Done, ok := firstMoment(events, start, func(pods map[string]*podRecord) bool {
		n := 0
		for _, p := range pods {
			if p.replica != 0 || p.terminating {
				continue
			}
			if p.hash != hashes[p.clique] || !p.ready {
				return false
			}
			n++
		}
		return n == disaggPodsPerReplica
	})
	first1 := filterEvents(deleted, func(e monitor.Event) bool { return e.Replica == 1 })
	switch {
	case !ok:
		t.Errorf("the timeline never shows replica 0 whole on the new template")
	case len(first1) == 0:
		t.Errorf("no pod of replica 1 was replaced")
	case first1[0].Time.Before(replica0Done):
		t.Errorf("pod %s of replica 1 was deleted at %s, before replica 0 was updated at %s",
			first1[0].Name, first1[0].Time.Sub(start), replica0Done.Sub(start))
	default:
		t.Logf("replica 0 updated %s into the rollout; replica 1 started %s after that",
			replica0Done.Sub(start).Round(10*time.Millisecond), first1[0].Time.Sub(replica0Done).Round(10*time.Millisecond))
	}

	// At most one unit of each role down at a time (the monitor's floor checks
	// every deletion; this checks every moment, creation delays included).
	for key, least := range leastAvailable(events, spec, start) {
		_, role, _ := strings.Cut(key, "/")
		if down := roleUnits(spec, role) - least; down > 1 {
			t.Errorf("%s: %d units were unavailable at once, want at most 1", key, down)
		}
	}

	// Frontend pods oldest first.
	for r := range int32(2) {
		got := indicesOf(filterEvents(deleted, func(e monitor.Event) bool { return e.Replica == r && e.Clique == "frontend" }))
		if !slices.Equal(got, wantOrder[r]) {
			t.Errorf("replica %d replaced frontend pods %v, want oldest first: %v", r, got, wantOrder[r])
		}
	}

	// Against the ideal: waves run one after another, each as long as a pod
	// takes to start. A replica's waves are its slowest role's units (one
	// unit at a time): 3 frontend pods. Pods keep their names, so a
	// replacement also waits for its predecessor to be gone: the second ideal
	// adds that.
	waves := 0
	for range *spec.Replicas {
		most := int32(0)
		for _, role := range roles(spec) {
			most = max(most, roleUnits(spec, role))
		}
		waves += int(most)
	}
	up := startupOf(events, start)
	took := up.lastReady.Sub(start)
	ideal := time.Duration(waves) * up.mean
	idealNamed := time.Duration(waves) * (up.mean + up.meanDeletingToGone)
	ms := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	t.Logf("ROLLOUT disaggregated, default strategy: %s from the image change to the last replacement Ready (status RolloutComplete seen after %s); "+
		"ideal %d waves x %s mean bound-to-Ready = %s (%.2fx); with each wave also waiting %s for the old pod to go: %s (%.2fx); "+
		"%d pods started, mean created-to-Ready %s, longest bound-to-Ready %s; cluster ready delay %s + up to %s",
		ms(took), reportedAt.Sub(start).Round(100*time.Millisecond), waves, ms(up.mean), ms(ideal), float64(took)/float64(ideal),
		ms(up.meanDeletingToGone), ms(idealNamed), float64(took)/float64(idealNamed),
		up.pods, ms(up.meanCreateToUp), ms(up.longest), e2eReadyDelay, e2eReadyJitter)
}

// oldestFirst is, per PCS replica, the order in which the pod indices of a
// standalone clique are replaced oldest first: by creation time (whole
// seconds, as the apiserver keeps it), then index.
func oldestFirst(pods []corev1.Pod, clique string) map[int32][]int32 {
	type pod struct {
		created metav1.Time
		index   int32
	}
	by := map[int32][]pod{}
	for i := range pods {
		p := &pods[i]
		if p.Labels[v1alpha1.LabelClique] != clique || p.DeletionTimestamp != nil {
			continue
		}
		r, _ := strconv.Atoi(p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex])
		idx, _ := strconv.Atoi(p.Labels[v1alpha1.LabelPodIndex])
		by[int32(r)] = append(by[int32(r)], pod{p.CreationTimestamp, int32(idx)})
	}
	out := map[int32][]int32{}
	for r, ps := range by {
		slices.SortFunc(ps, func(a, b pod) int {
			if c := a.created.Unix() - b.created.Unix(); c != 0 {
				return int(c)
			}
			return int(a.index - b.index)
		})
		for _, p := range ps {
			out[r] = append(out[r], p.index)
		}
	}
	return out
}
