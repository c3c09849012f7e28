//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gang"
)

// The native gang backend on the real scheduler. A gang of 3 pods needing 4
// GPUs each cannot fit on one 8-GPU node: GangStatus must say so with the
// scheduler's own explanation while no pod is bound, and report the gang
// scheduled once a second node is added. Deleting the gang's owner then
// deletes its PodGroup, which goes once its pods do.
func TestGangBackend_NativeSaysWhyAGangWaitsAndWhenItIsPlaced(t *testing.T) {
	ctx := t.Context()
	c := testCluster
	if err := c.SetNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "gang-backend")
	start := time.Now()

	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := gang.Select(dc, gang.ModeAuto, gang.Options{Client: c.Client})
	if err != nil {
		t.Fatal(err)
	}
	if backend.Name() != gang.NameNative {
		t.Fatalf("auto chose the %s backend on a cluster serving PodGroups", backend.Name())
	}

	// Any object can own a gang; a ConfigMap keeps this test free of Lockstep's CRDs.
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trainer"}}
	if err := c.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	const (
		size       = 3
		gpusPerPod = 4
	)
	key := client.ObjectKey{Namespace: ns, Name: "trainer"}
	if err := backend.SyncGangs(ctx, owner, []gang.Gang{{Name: key.Name, MinCount: size}}); err != nil {
		t.Fatalf("SyncGangs: %v", err)
	}
	for i := range size {
		pod := newPod(ns, fmt.Sprintf("trainer-%d", i), gpusPerPod)
		if backend.PlacesGangs() {
			gang.JoinPod(pod, &v1alpha1.PodCliqueGang{PodGroupName: key.Name})
		}
		if err := c.Client.Create(ctx, pod); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}

	var status gang.Status
	// The scheduler writes its verdict pod by pod; the pod that does not fit
	// carries the reason, the others only that they waited for the gang.
	eventually(t, 30*time.Second, "GangStatus to say the gang lacks GPUs", func(ctx context.Context) (bool, error) {
		if pod, err := boundPod(ctx, ns); err != nil {
			return false, err
		} else if pod != nil {
			t.Fatalf("pod %s was bound to %s although its gang cannot fit", pod.Name, pod.Spec.NodeName)
		}
		status, err = backend.GangStatus(ctx, key)
		return status.Reason == gang.ReasonUnschedulable && strings.Contains(status.Message, string(gpuResource)), err
	})
	t.Logf("one node, after %s: %s: %s", time.Since(start).Round(time.Millisecond), status.Reason, status.Message)
	if !status.Exists || status.Scheduled || status.ScheduledPods != 0 || status.MinCount != size {
		t.Errorf("GangStatus = %+v, want an existing, unscheduled gang of minCount %d with no pod placed", status, size)
	}

	if err := c.SetNodes(ctx, 2); err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	eventually(t, 30*time.Second, "GangStatus to report the gang scheduled", func(ctx context.Context) (bool, error) {
		status, err = backend.GangStatus(ctx, key)
		return status.Scheduled, err
	})
	t.Logf("second node added: scheduled %s later: %s: %s", time.Since(added).Round(time.Millisecond), status.Reason, status.Message)
	if status.Reason != gang.ReasonScheduled || status.ScheduledPods != size {
		t.Errorf("GangStatus = %+v, want reason %s with %d pods placed", status, gang.ReasonScheduled, size)
	}

	// The owner reference hands the PodGroup to the garbage collector; the
	// scheduler's protection keeps it while its pods run.
	if err := c.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the PodGroup to be deleted with its owner", func(ctx context.Context) (bool, error) {
		status, err = backend.GangStatus(ctx, key)
		return status.Reason == gang.ReasonGangDeleting, err
	})
	if err := c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the PodGroup to go once its pods are gone", func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, key, &schedulingv1alpha2.PodGroup{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	t.Logf("whole test %s", time.Since(start).Round(time.Millisecond))
}
