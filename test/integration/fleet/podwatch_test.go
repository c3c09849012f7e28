package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/testenv"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// The e2e tests trust fleetwatch's pod watcher to see a broken budget; here it
// is shown one. Pods are written straight into two member apiservers (nothing
// runs them): a surge above the bound, a drop below the available bound and
// a pod of the new image beyond the allowed number are each caught, with the
// event that caused them, and a fleet inside its bounds shows nothing.
func TestPodWatcher_CatchesABrokenBudgetAcrossMembers(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "podwatch")
	envs := map[string]*testenv.Cluster{"a": memberEnv, "b": member2Env}
	for _, env := range envs {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	addPod := func(member, image string, ready bool) {
		t.Helper()
		n++
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-%d", n), Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
		}
		c := envs[member].Client
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			if err := c.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Before the watcher: 2 ready old pods in a, 2 in b.
	for _, m := range []string{"a", "a", "b", "b"} {
		addPod(m, "web:1", true)
	}
	members := map[string]client.WithWatch{"a": memberEnv.Client, "b": member2Env.Client}
	w, err := fleetwatch.StartPods(ctx, members, ns, map[string]string{"app": "web"},
		func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == "web:2" },
		fleetwatch.PodBounds{MinAvailable: 3, MaxPods: 5, MaxUpdated: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitCounts := func(what string, cond func(fleetwatch.PodCounts) bool) {
		t.Helper()
		if err := w.WaitFor(ctx, 10*time.Second, cond); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Inside the bounds: one surge pod of the new image, made ready.
	addPod("b", "web:2", true)
	waitCounts("5 pods seen", func(c fleetwatch.PodCounts) bool { return c.Pods == 5 && c.Updated == 1 })
	if v := w.Violations(); len(v) != 0 {
		t.Fatalf("violations inside the bounds: %v", v)
	}

	// A second surge pod, in the other member: 6 pods, 2 of the new image.
	addPod("a", "web:2", false)
	waitCounts("6 pods seen", func(c fleetwatch.PodCounts) bool { return c.Pods == 6 })
	// Three old pods deleted at once across both members: 3 pods left, 2 available.
	var list corev1.PodList
	for _, m := range []string{"a", "b"} {
		if err := envs[m].Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.Spec.Containers[0].Image == "web:1" && (m == "b" || p.Name == "web-1") {
				if err := envs[m].Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	waitCounts("the deletions seen", func(c fleetwatch.PodCounts) bool { return c.Available == 2 })

	kinds := map[string]string{}
	for _, v := range w.Violations() {
		if _, seen := kinds[v.Kind]; !seen {
			kinds[v.Kind] = v.String()
		}
	}
	for _, want := range []string{"AboveMaxPods", "AboveMaxUpdated", "BelowMinAvailable"} {
		if kinds[want] == "" {
			t.Errorf("no %s violation seen; seen: %v", want, w.Violations())
		}
	}
	t.Logf("first violations: %v", kinds)
	if peak, minAvail := w.Extremes(); peak.Pods != 6 || minAvail != 2 {
		t.Errorf("extremes: peak %v, fewest available %d", peak, minAvail)
	}
	if got := w.Created(); got != 2 {
		t.Errorf("%d pods counted as created after the start, want 2", got)
	}
}

// A ReplicaSet's pods count up to its replicas: pods above them are on their
// way out (their controller deletes them), as a Deployment briefly runs past
// its own maxSurge. Its replicas raised, the same pods break the bound, and
// the ReplicaSet's event alone is enough for the watcher to say so.
func TestPodWatcher_CountsAReplicaSetsPodsUpToItsReplicas(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "podwatch-rs")
	c := memberEnv.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-old", Labels: labels},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}},
	}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("web-old-%d", i), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Spec: rs.Spec.Template.Spec,
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	w, err := fleetwatch.StartPods(ctx, map[string]client.WithWatch{"a": c}, ns, labels,
		func(*corev1.Pod) bool { return false }, fleetwatch.PodBounds{MinAvailable: 3, MaxPods: 2, MaxUpdated: fleetwatch.Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := w.Counts(); got.Pods != 2 || got.Surplus != 1 || got.Available != 3 {
		t.Fatalf("3 ready pods of a ReplicaSet of 2 counted as %s; want 2 pods, 1 above its replicas, 3 available", got)
	}
	if v := w.Violations(); len(v) != 0 {
		t.Fatalf("violations with the surplus pod on its way out: %v", v)
	}

	rs.Spec.Replicas = ptr.To[int32](3)
	if err := c.Update(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitFor(ctx, 10*time.Second, func(c fleetwatch.PodCounts) bool { return c.Pods == 3 }); err != nil {
		t.Fatalf("the ReplicaSet's new replicas: %v", err)
	}
	v := w.Violations()
	if len(v) == 0 || v[0].Kind != "AboveMaxPods" || !strings.Contains(v[0].Event, "ReplicaSet a/web-old") {
		t.Fatalf("want AboveMaxPods after the ReplicaSet's event, got %v", v)
	}
	t.Logf("seen: %v", v[0])
}
