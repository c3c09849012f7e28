package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// podCliqueScene is one PodClique in its own namespace with a test kubelet.
type podCliqueScene struct {
	t       *testing.T
	ns      string
	pclq    *v1alpha1.PodClique
	kubelet *testenv.Kubelet
}

func newPodCliqueScene(t *testing.T, replicas int32, strategy v1alpha1.ChildUpdateStrategy) *podCliqueScene {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := newNamespace(t)
	pclq := &v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0-frontend", Labels: map[string]string{
			v1alpha1.LabelPodCliqueSet: "web", v1alpha1.LabelPodCliqueSetReplicaIndex: "0", v1alpha1.LabelClique: "frontend",
		}},
		Spec: v1alpha1.PodCliqueSpec{Replicas: replicas, Revision: "web-v1", UpdateStrategy: strategy, Template: podTemplate("frontend:v1")},
	}
	s := &podCliqueScene{t: t, ns: ns, pclq: pclq, kubelet: testenv.StartKubelet(ctx, env.Client, ns)}
	if err := env.Client.Create(ctx, pclq); err != nil {
		t.Fatalf("creating PodClique: %v", err)
	}
	return s
}

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "frontend"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

func (s *podCliqueScene) pods() []corev1.Pod {
	s.t.Helper()
	var list corev1.PodList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(s.ns)); err != nil {
		s.t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, what, timeout, cond)
}

// settled: exactly the given pod names exist, all ready and running the hash.
func (s *podCliqueScene) settled(hash string, names ...string) func() (bool, string) {
	return func() (bool, string) {
		pods := s.pods()
		var got []string
		ok := len(pods) == len(names)
		for _, p := range pods {
			ready := isReady(&p)
			got = append(got, fmt.Sprintf("%s@%s ready=%v", p.Name, p.Labels[v1alpha1.LabelTemplateHash], ready))
			ok = ok && ready && p.DeletionTimestamp == nil && p.Labels[v1alpha1.LabelTemplateHash] == hash
		}
		for i, n := range names {
			ok = ok && i < len(pods) && pods[i].Name == n
		}
		return ok, strings.Join(got, ", ")
	}
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil
		}
	}
	return false
}

// update changes the PodClique's spec, retrying when the controller's status
// writes race with it.
func (s *podCliqueScene) update(mutate func(*v1alpha1.PodCliqueSpec)) {
	s.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.pclq), s.pclq); err != nil {
			return err
		}
		mutate(&s.pclq.Spec)
		return env.Client.Update(ctx, s.pclq)
	})
	if err != nil {
		s.t.Fatalf("updating PodClique: %v", err)
	}
}

// rollToV2 moves the PodClique's template to image frontend:v2 and returns its hash.
func (s *podCliqueScene) rollToV2() string {
	s.t.Helper()
	s.update(func(spec *v1alpha1.PodCliqueSpec) {
		spec.Template = podTemplate("frontend:v2")
		spec.Revision = "web-frontend-v2"
	})
	h, _ := revision.PodCliqueHash(s.pclq)
	return h
}

// podWatch records every pod event of a namespace and checks a bound on each.
type podWatch struct {
	mu        sync.Mutex
	pods      map[string]corev1.Pod
	deleted   []string // names in the order they got a deletion timestamp
	violation string
}

// watchPods checks on every event that at most maxTotal pods exist and, once
// the namespace has reached floor ready pods, never fewer than floor are ready.
// Every pod counts toward maxTotal, terminating ones included (the
// TerminationComplete rule); watchPodsOfSet counts as the default policy does.
func watchPods(t *testing.T, ns string, floor, maxTotal int) *podWatch {
	return watchCountedPods(t, ns, floor, maxTotal, func(*corev1.Pod) bool { return true })
}

// watchPodsOfSet is watchPods for a PodCliqueSet under the default
// TerminationStarted: a terminating pod of a standalone clique no longer counts
// (its replacement may already run); pods of scaling groups always do.
func watchPodsOfSet(t *testing.T, ns string, floor, maxTotal int) *podWatch {
	return watchCountedPods(t, ns, floor, maxTotal, func(p *corev1.Pod) bool {
		return p.DeletionTimestamp == nil || p.Labels[v1alpha1.LabelPodCliqueScalingGroup] != ""
	})
}

func watchCountedPods(t *testing.T, ns string, floor, maxTotal int, counts func(*corev1.Pod) bool) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := clientset(t).CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw := &podWatch{pods: map[string]corev1.Pod{}}
	reachedFloor := false
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			pw.mu.Lock()
			prev, existed := pw.pods[p.Name]
			if ev.Type == watch.Deleted {
				delete(pw.pods, p.Name)
			} else {
				pw.pods[p.Name] = *p
			}
			if p.DeletionTimestamp != nil && (!existed || prev.DeletionTimestamp == nil) {
				pw.deleted = append(pw.deleted, p.Name)
			}
			ready, counted := 0, 0
			for _, q := range pw.pods {
				if r := isReady(&q); r {
					ready++
				}
				if counts(&q) {
					counted++
				}
			}
			if ready >= floor {
				reachedFloor = true
			}
			switch {
			case pw.violation != "":
			case counted > maxTotal:
				pw.violation = fmt.Sprintf("%d pods count (of %d), more than %d", counted, len(pw.pods), maxTotal)
			case reachedFloor && ready < floor:
				pw.violation = fmt.Sprintf("only %d pods ready after %s of %s, below %d", ready, ev.Type, p.Name, floor)
			}
			pw.mu.Unlock()
		}
	}()
	return pw
}

func (pw *podWatch) check(t *testing.T) []string {
	t.Helper()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.violation != "" {
		t.Fatalf("invariant broken: %s", pw.violation)
	}
	return append([]string(nil), pw.deleted...)
}

func TestPodClique_CreatesPodsWithStableIndicesHostnamesAndLabels(t *testing.T) {
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{})
	hash, _ := revision.PodCliqueHash(s.pclq)
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(hash, "web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"))
	for i, p := range s.pods() {
		want := map[string]string{
			v1alpha1.LabelManagedBy: "lockstep", v1alpha1.LabelPodCliqueSet: "web", v1alpha1.LabelPodCliqueSetReplicaIndex: "0",
			v1alpha1.LabelClique: "frontend", v1alpha1.LabelPodClique: "web-0-frontend", v1alpha1.LabelPodIndex: fmt.Sprint(i),
			v1alpha1.LabelPodCliqueSetRevision: "web-v1", v1alpha1.LabelTemplateHash: hash, "app": "frontend",
		}
		for k, v := range want {
			if p.Labels[k] != v {
				t.Errorf("pod %s label %s = %q, want %q", p.Name, k, p.Labels[k], v)
			}
		}
		if p.Spec.Hostname != p.Name || p.Spec.Subdomain != "web-0" {
			t.Errorf("pod %s hostname %q subdomain %q, want %q under web-0", p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.Name)
		}
	}
	var pclq v1alpha1.PodClique
	waitFor(t, "status", 10*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(s.pclq), &pclq)
		st := pclq.Status
		return st.ReadyReplicas == 3 && st.AvailableReplicas == 3 && st.UpdatedReplicas == 3 && st.UpdateRevision == hash &&
			st.Selector == "lockstep.dev/podclique=web-0-frontend", fmt.Sprintf("%+v", st)
	})
}

func TestPodClique_RollingUpdateReplacesOnePodAtATimeOldestFirst(t *testing.T) {
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{})
	v1, _ := revision.PodCliqueHash(s.pclq)
	names := []string{"web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"}
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(v1, names...))
	pw := watchPods(t, s.ns, 2, 3) // maxUnavailable 1, maxSurge 0
	v2 := s.rollToV2()
	waitFor(t, "all pods on v2", 60*time.Second, s.settled(v2, names...))
	deleted := pw.check(t)
	if strings.Join(deleted, ",") != strings.Join(names, ",") {
		t.Fatalf("pods replaced in order %v, want oldest (lowest index) first %v", deleted, names)
	}
}

func TestPodClique_SurgeKeepsFullCapacityAndEndsWithoutHoles(t *testing.T) {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{MaxUnavailable: &zero, MaxSurge: &one})
	v1, _ := revision.PodCliqueHash(s.pclq)
	names := []string{"web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"}
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(v1, names...))
	pw := watchPods(t, s.ns, 3, 4)
	v2 := s.rollToV2()
	waitFor(t, "all pods on v2, surge pod gone", 60*time.Second, s.settled(v2, names...))
	deleted := pw.check(t)
	want := append(append([]string(nil), names...), "web-0-frontend-3")
	if strings.Join(deleted, ",") != strings.Join(want, ",") {
		t.Fatalf("deletions %v, want %v (surge pod 3 removed last)", deleted, want)
	}
}

func TestPodClique_OnDeleteReplacesOnlyDeletedPods(t *testing.T) {
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{Type: v1alpha1.OnDeleteStrategyType})
	v1, _ := revision.PodCliqueHash(s.pclq)
	names := []string{"web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"}
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(v1, names...))
	pw := watchPods(t, s.ns, 0, 3)
	v2 := s.rollToV2()
	ctx := context.Background()
	// Once the controller has taken the new template over (status says so), no
	// pod may have been deleted.
	waitFor(t, "template taken over", 30*time.Second, func() (bool, string) {
		var p v1alpha1.PodClique
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(s.pclq), &p)
		return p.Status.ObservedGeneration == p.Generation && p.Status.UpdateRevision == v2 && p.Status.UpdatedReplicas == 0,
			fmt.Sprintf("%+v", p.Status)
	})
	if deleted := pw.check(t); len(deleted) != 0 {
		t.Fatalf("OnDelete deleted %v for an update", deleted)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "web-0-frontend-1"}}
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod 1 back on v2", 30*time.Second, func() (bool, string) {
		var state []string
		ok := true
		for _, p := range s.pods() {
			want := v1
			if p.Name == "web-0-frontend-1" {
				want = v2
			}
			r := isReady(&p)
			ok = ok && r && p.Labels[v1alpha1.LabelTemplateHash] == want
			state = append(state, p.Name+"@"+p.Labels[v1alpha1.LabelTemplateHash])
		}
		return ok && len(state) == 3, strings.Join(state, ",")
	})
}

func TestPodClique_MaxUpdatedHoldsBackAndRecreatesHeldPodsAtTheCurrentRevision(t *testing.T) {
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{})
	ctx := context.Background()
	v1, _ := revision.PodCliqueHash(s.pclq)
	names := []string{"web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"}
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(v1, names...))

	// The PodCliqueSet keeps the old template in a ControllerRevision.
	pcs := &v1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "web", UID: "pcs-uid"},
		Spec: v1alpha1.PodCliqueSetSpec{Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{
			{Name: "frontend", Replicas: 3, Template: podTemplate("frontend:v1")}}}}}
	rev, err := revision.ForSpec("web", &pcs.Spec)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := revision.NewControllerRevision(pcs, rev, 1)
	if err != nil {
		t.Fatal(err)
	}
	cr.OwnerReferences = nil
	if err := env.Client.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}

	s.update(func(spec *v1alpha1.PodCliqueSpec) {
		spec.UpdateStrategy.MaxUpdated = new(int32(1))
		spec.UpdateStrategy.CurrentRevision = rev.Name
		spec.Template = podTemplate("frontend:v2")
		spec.Revision = "web-v2"
	})
	v2, _ := revision.PodCliqueHash(s.pclq)
	byHash := func() (map[string][]string, string) {
		out := map[string][]string{}
		var state []string
		for _, p := range s.pods() {
			if r := isReady(&p); r {
				out[p.Labels[v1alpha1.LabelTemplateHash]] = append(out[p.Labels[v1alpha1.LabelTemplateHash]], p.Name)
			}
			state = append(state, p.Name+"@"+p.Labels[v1alpha1.LabelTemplateHash])
		}
		return out, strings.Join(state, ",")
	}
	waitFor(t, "exactly one pod updated", 30*time.Second, func() (bool, string) {
		h, state := byHash()
		return len(h[v2]) == 1 && len(h[v1]) == 2, state
	})
	// A held-back pod that is deleted comes back on the old template.
	held, _ := byHash()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: held[v1][0]}}
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "held pod back on v1, still one on v2", 30*time.Second, func() (bool, string) {
		h, state := byHash()
		return len(h[v2]) == 1 && len(h[v1]) == 2 && strings.Contains(state, pod.Name+"@"+v1), state
	})
}

func TestPodClique_ScalesThroughScaleSubresourceWithoutUpdating(t *testing.T) {
	s := newPodCliqueScene(t, 2, v1alpha1.ChildUpdateStrategy{})
	ctx := context.Background()
	v1, _ := revision.PodCliqueHash(s.pclq)
	waitFor(t, "2 ready pods", 30*time.Second, s.settled(v1, "web-0-frontend-0", "web-0-frontend-1"))
	scale := func(n int32) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sc := &autoscalingv1.Scale{}
			if err := env.Client.SubResource("scale").Get(ctx, s.pclq, sc); err != nil {
				return err
			}
			sc.Spec.Replicas = n
			return env.Client.SubResource("scale").Update(ctx, s.pclq, client.WithSubResourceBody(sc))
		})
		if err != nil {
			t.Fatalf("scaling to %d: %v", n, err)
		}
	}
	scale(4)
	waitFor(t, "4 ready pods", 30*time.Second, s.settled(v1, "web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2", "web-0-frontend-3"))
	scale(1)
	waitFor(t, "1 pod left, the lowest index", 30*time.Second, s.settled(v1, "web-0-frontend-0"))
}

func clientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A gang's gate opened while the PodClique is still creating its pods leaves no
// pod gated: pods made from the gated spec just before the gate opened are
// released too, whatever order the writes and the cache land in.
func TestPodClique_NoPodStaysGatedWhenTheGateOpensDuringCreation(t *testing.T) {
	s := newPodCliqueScene(t, 4, v1alpha1.ChildUpdateStrategy{})
	// Gated from the start, as a scaled gang waiting for its base gang.
	s.update(func(spec *v1alpha1.PodCliqueSpec) {
		spec.Gang = &v1alpha1.PodCliqueGang{PodGroupName: "web-0-frontend-gang", Gated: true}
	})
	// Open the gate while pods are being created and one is deleted (so one is
	// made again from whatever the cache holds).
	waitFor(t, "the first pods", 30*time.Second, func() (bool, string) { return len(s.pods()) > 0, "" })
	s.update(func(spec *v1alpha1.PodCliqueSpec) { spec.Gang.Gated = false })
	if p := s.pods(); len(p) > 0 {
		_ = env.Client.Delete(context.Background(), &p[0])
	}
	waitFor(t, "4 pods, none gated", 30*time.Second, func() (bool, string) {
		pods := s.pods()
		var gated []string
		live := 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			if len(p.Spec.SchedulingGates) > 0 {
				gated = append(gated, p.Name)
			}
		}
		return live == 4 && len(gated) == 0, fmt.Sprintf("%d live pods, gated: %v", live, gated)
	})
}
