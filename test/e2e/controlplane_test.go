//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A kube-scheduler that exits on its own (here: SIGKILL from outside the
// cluster package, as a crash would look) is started again by the
// supervisor, and pods are scheduled again; one killed on purpose through
// KillComponent is left down until the test starts it.
func TestControlPlane_ACrashedComponentIsStartedAgain(t *testing.T) {
	ctx := t.Context()
	if err := testCluster.SetNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_, before := controlPlane.since(0)
	pid, running := testCluster.ComponentRunning("kube-scheduler")
	if !running {
		t.Fatal("kube-scheduler is not running before the test")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := waitFor(ctx, time.Minute, func() bool {
		got, _ := controlPlane.since(before)
		for _, r := range got {
			if r.Component == "kube-scheduler" && r.PID == pid && r.Err == nil {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the supervisor did not report kube-scheduler (pid %d) started again within a minute", pid)
	}
	newPID, running := testCluster.ComponentRunning("kube-scheduler")
	if !running || newPID == pid {
		t.Fatalf("kube-scheduler after the restart: pid %d, running %v (was %d)", newPID, running, pid)
	}
	assertPodScheduled(t, "after-crash")

	// Killed on purpose: the supervisor keeps its hands off.
	killed, err := testCluster.KillComponent("kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testCluster.StartComponents(context.Background()); err != nil {
			t.Errorf("starting the control plane again: %v", err)
		}
	})
	_, mark := controlPlane.since(0)
	// Three supervisor rounds.
	deadline := time.Now().Add(3 * time.Second)
	_ = waitFor(ctx, time.Until(deadline), func() bool { _, n := controlPlane.since(0); return n > mark })
	if got, _ := controlPlane.since(mark); len(got) > 0 {
		t.Fatalf("the supervisor started %s (pid %d) again, killed on purpose as pid %d", got[0].Component, got[0].PID, killed)
	}
	if _, running := testCluster.ComponentRunning("kube-scheduler"); running {
		t.Fatal("kube-scheduler runs while it is down on purpose")
	}
	if err := testCluster.StartComponents(ctx); err != nil {
		t.Fatal(err)
	}
	assertPodScheduled(t, "after-start")
}

// assertPodScheduled creates a pod and waits until a scheduler binds it.
func assertPodScheduled(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	ns := newNamespace(t, "controlplane")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	if err := testCluster.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var node string
	err := waitFor(ctx, time.Minute, func() bool {
		cur := &corev1.Pod{}
		if err := testCluster.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
			return false
		}
		node = cur.Spec.NodeName
		return node != ""
	})
	if err != nil {
		t.Fatal(fmt.Errorf("pod %s/%s not scheduled within a minute", ns, name))
	}
	t.Logf("pod %s scheduled to %s", name, node)
}
