//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/test/e2e/cluster"
)

// gpuResource is the extended resource the simulated nodes offer.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// pollInterval is how often the tests look at the cluster while waiting.
const pollInterval = 250 * time.Millisecond

// newNamespace creates a namespace for one test and deletes it afterwards
// (kept with LOCKSTEP_E2E_KEEP=1 so what the test left can be inspected).
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := testCluster.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Logf("namespace %s", ns.Name)
	t.Cleanup(func() {
		if cluster.Keep() {
			return
		}
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := testCluster.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// newPod returns a pod that runs on the simulated nodes. The image is never
// pulled: kwok only plays the pod's lifecycle.
func newPod(ns, name string, gpus int64) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "lockstep-e2e/worker:test",
			}},
			TerminationGracePeriodSeconds: new(int64(0)),
		},
	}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{gpuResource: q},
			Limits:   corev1.ResourceList{gpuResource: q},
		}
	}
	return pod
}

// listPods returns the pods of a namespace.
func listPods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := testCluster.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// eventually polls cond until it returns true, failing the test when timeout
// passes first. Errors from cond are retried (the apiserver may blip), the
// last one is reported.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
	}
}

// podCondition returns the pod's condition of the given type, or nil.
func podCondition(pod *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// isReady reports whether the pod's Ready condition is True.
func isReady(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}
