package monitor

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The monitor's watches against a real kube-apiserver (envtest, no operator):
// the test plays the operator by hand and breaks an invariant on purpose.
func TestMonitor_WatchesARealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	ctx := t.Context()
	c := env.Client

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "monitor-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pcs := &v1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: pcsName, Namespace: ns.Name}, Spec: cliqueSurge()}
	if err := c.Create(ctx, pcs); err != nil {
		t.Fatal(err)
	}

	tb := &fakeTB{}
	m := Options{PollInterval: 20 * time.Millisecond}.Start(ctx, tb, env.Config, ns.Name, pcsName)

	// Pods are never bound here (no scheduler), so a delete removes them at once.
	createPod := func(p pod, image string) {
		t.Helper()
		obj := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name(), Namespace: ns.Name, Labels: p.labels(image)},
			Spec:       podTemplate(p.clique, image).Spec,
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		obj.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(kind EventKind, n int) func() (bool, error) {
		return func() (bool, error) {
			got := 0
			for _, e := range m.Timeline() {
				if e.Kind == kind {
					got++
				}
			}
			return got >= n, nil
		}
	}
	wait := func(what string, cond func() (bool, error)) {
		t.Helper()
		if err := m.Poll(ctx, 30*time.Second, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	// Start returns once the first listing is recorded: the spec is known.
	if ok, _ := seen(SpecChanged, 1)(); !ok {
		t.Fatalf("the PodCliqueSet spec is not in the timeline after Start:\n%v", m.Timeline())
	}

	for i := range int32(3) {
		createPod(sp(0, fe, i), "v1")
	}
	wait("three ready pods", seen(PodReady, 3))

	// A deletion the test announces is not the operator's, even below the floor.
	m.ExpectDeletion(sp(0, fe, 0).name())
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sp(0, fe, 0).name(), Namespace: ns.Name}}); err != nil {
		t.Fatal(err)
	}
	wait("the announced deletion", seen(PodDeleted, 1))
	createPod(sp(0, fe, 0), "v1")

	// replicas 3 + maxSurge 1: the fifth pod breaks the invariant, and Poll
	// returns at that moment.
	createPod(sp(0, fe, 3), "v1")
	createPod(sp(0, fe, 4), "v1")
	err = m.Poll(ctx, 30*time.Second, func() (bool, error) { return false, nil })
	var v *Violation
	if !errors.As(err, &v) || v.Invariant != UnitsWithinSurge {
		t.Fatalf("Poll = %v, want the %s violation", err, UnitsWithinSurge)
	}

	tb.runCleanups()
	if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], string(UnitsWithinSurge)) {
		t.Fatalf("cleanup reported %q, want the violation", tb.errs)
	}
	// stopped: later changes are not recorded
	before := len(m.Timeline())
	createPod(sp(0, fe, 5), "v1")
	time.Sleep(200 * time.Millisecond)
	if after := len(m.Timeline()); after != before {
		t.Fatalf("timeline grew from %d to %d after Stop", before, after)
	}
}
