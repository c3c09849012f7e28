//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// These tests pin down what the rest of the e2e suite takes for granted about
// the dev cluster: the scheduler really does gang scheduling, and kwok makes
// bound pods Ready after the configured delay (or a per-pod one).

// A gang that does not fit must not be partly placed: with one 8-GPU node, 3
// pods of 4 GPUs each with minCount 3 all stay Pending, and a second node lets
// all of them schedule.
func TestDevCluster_GangWaitsForCapacity(t *testing.T) {
	ctx := t.Context()
	c := testCluster
	if err := c.SetNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "gang")

	const (
		size       = 3
		gpusPerPod = 4
		template   = "workers"
	)
	gang := &schedulingv1alpha2.GangSchedulingPolicy{MinCount: size}
	workload := &schedulingv1alpha2.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trainer"},
		Spec: schedulingv1alpha2.WorkloadSpec{
			PodGroupTemplates: []schedulingv1alpha2.PodGroupTemplate{{
				Name:             template,
				SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{Gang: gang},
			}},
		},
	}
	podGroup := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trainer-workers"},
		Spec: schedulingv1alpha2.PodGroupSpec{
			PodGroupTemplateRef: &schedulingv1alpha2.PodGroupTemplateReference{
				Workload: &schedulingv1alpha2.WorkloadPodGroupTemplateReference{
					WorkloadName:         workload.Name,
					PodGroupTemplateName: template,
				},
			},
			SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{Gang: gang},
		},
	}
	if err := c.Client.Create(ctx, workload); err != nil {
		t.Fatalf("create Workload: %v", err)
	}
	if err := c.Client.Create(ctx, podGroup); err != nil {
		t.Fatalf("create PodGroup: %v", err)
	}
	for i := range size {
		pod := newPod(ns, fmt.Sprintf("trainer-%d", i), gpusPerPod)
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &podGroup.Name}
		if err := c.Client.Create(ctx, pod); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}

	// First make sure the scheduler has tried the gang and given up on it for
	// now (its PodGroup says so); otherwise the window below could pass before
	// the scheduler even looked.
	eventually(t, 60*time.Second, "the scheduler to mark the PodGroup unschedulable", func(ctx context.Context) (bool, error) {
		if pod, err := boundPod(ctx, ns); err != nil {
			return false, err
		} else if pod != nil {
			t.Fatalf("pod %s was bound to %s although its gang cannot fit", pod.Name, pod.Spec.NodeName)
		}
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(podGroup), podGroup); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(podGroup.Status.Conditions, schedulingv1alpha2.PodGroupScheduled)
		if cond != nil && cond.Status == metav1.ConditionTrue {
			t.Fatalf("PodGroup scheduled although the gang cannot fit: %+v", cond)
		}
		return cond != nil && cond.Status == metav1.ConditionFalse, nil
	})

	// Asserting that something does NOT happen needs a window of time; this
	// is the one fixed wait in the test. The scheduler has declined the gang
	// once; the window checks that it does not bind part of it afterwards
	// (on a retry, say), which is what a scheduler without gangs would do.
	const window = 10 * time.Second
	for deadline := time.Now().Add(window); time.Now().Before(deadline); time.Sleep(pollInterval) {
		pod, err := boundPod(ctx, ns)
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		if pod != nil {
			t.Fatalf("pod %s was bound to %s although its gang cannot fit", pod.Name, pod.Spec.NodeName)
		}
	}
	t.Logf("no gang pod scheduled during %s with one node", window)

	if err := c.SetNodes(ctx, 2); err != nil {
		t.Fatal(err)
	}

	eventually(t, 90*time.Second, "all gang pods to be scheduled and Ready", func(ctx context.Context) (bool, error) {
		pods, err := listPods(ctx, ns)
		if err != nil {
			return false, err
		}
		for i := range pods {
			if pods[i].Spec.NodeName == "" || !isReady(&pods[i]) {
				return false, nil
			}
		}
		return len(pods) == size, nil
	})

	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(podGroup), podGroup); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(podGroup.Status.Conditions, schedulingv1alpha2.PodGroupScheduled) {
		t.Errorf("PodGroup conditions after scheduling: %+v, want %s=True", podGroup.Status.Conditions, schedulingv1alpha2.PodGroupScheduled)
	}
	pods, err := listPods(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	gpusOn := map[string]int64{}
	for i := range pods {
		gpusOn[pods[i].Spec.NodeName] += gpusPerPod
	}
	if len(gpusOn) != 2 {
		t.Errorf("expected the gang spread over 2 nodes, got %v", gpusOn)
	}
	for node, gpus := range gpusOn {
		if gpus > e2eGPUsPerNode {
			t.Errorf("node %s holds %d GPUs, more than its %d", node, gpus, e2eGPUsPerNode)
		}
	}
	t.Logf("gang placed: GPUs per node %v", gpusOn)
}

// boundPod returns a pod of the namespace that has a node, or nil.
func boundPod(ctx context.Context, ns string) (*corev1.Pod, error) {
	pods, err := listPods(ctx, ns)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Spec.NodeName != "" {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// A plain pod turns Ready after the cluster's ready delay; a pod that sets
// kwok's per-pod delay annotation waits that long instead.
func TestDevCluster_PodsBecomeReadyAfterDelay(t *testing.T) {
	ctx := t.Context()
	c := testCluster
	ns := newNamespace(t, "ready")

	// Longer than the cluster's delay plus its jitter, so only the annotation
	// can explain it. It also checks that a pod setting only `delay` gets it
	// exactly: with kwok's plain semantics the cluster's jitter bound (3s)
	// would cap it.
	const annotated = 6 * time.Second
	plain := newPod(ns, "plain", 0)
	slow := newPod(ns, "slow", 0)
	slow.Annotations = map[string]string{"pod-ready.stage.kwok.x-k8s.io/delay": annotated.String()}
	for _, pod := range []*corev1.Pod{plain, slow} {
		if err := c.Client.Create(ctx, pod); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}

	eventually(t, 60*time.Second, "both pods to be Ready", func(ctx context.Context) (bool, error) {
		pods, err := listPods(ctx, ns)
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods {
			if isReady(&pods[i]) {
				ready++
			}
		}
		return ready == 2, nil
	})

	// Condition times have whole-second resolution, hence the one second of
	// slack; only the lower bound is checked, the machine may be slow.
	pods, err := listPods(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		pod := &pods[i]
		scheduled := podCondition(pod, corev1.PodScheduled)
		ready := podCondition(pod, corev1.PodReady)
		took := ready.LastTransitionTime.Sub(scheduled.LastTransitionTime.Time)
		want := e2eReadyDelay
		if pod.Name == slow.Name {
			want = annotated
		}
		t.Logf("pod %s: Ready %s after being scheduled (want at least %s)", pod.Name, took, want)
		if took < want-time.Second {
			t.Errorf("pod %s turned Ready %s after being scheduled, want at least %s", pod.Name, took, want)
		}
	}
}
