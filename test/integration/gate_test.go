package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// imagesByReplica counts, per PodCliqueSet replica, the pods running image.
func imagesByReplica(t *testing.T, ns, image string) map[string]int {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image {
			out[p.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex]]++
		}
	}
	return out
}

// An approval gate after each replica: replica 0 rolls, the rollout then
// waits at replicas-1 (AwaitingApproval, an Event, nothing of replica 1
// touched) however long, and only the approval of that gate for that
// revision lets replica 1 go.
func TestPodCliqueSet_ApprovalGateHoldsAfterReplicaZeroUntilApproved(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) {
		s.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true}
		setEngineImage("lockstep-examples/llm-engine:v2")(s)
	})
	const v2 = "lockstep-examples/llm-engine:v2"
	var gate *v1alpha1.GateStatus
	waitFor(t, "the rollout to wait at the gate after replica 0", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing")
		if up := pcs.Status.UpdateProgress; up != nil {
			gate = up.Gate
		}
		return c != nil && c.Reason == string(v1alpha1.ReasonAwaitingApproval) && gate != nil, fmt.Sprintf("%+v", pcs.Status)
	})
	if gate.Name != "replicas-1" || pcs.Status.UpdatedReplicas != 1 {
		t.Fatalf("waiting at %+v with %d replicas updated, want replicas-1 after 1", gate, pcs.Status.UpdatedReplicas)
	}
	if r := apimeta.FindStatusCondition(pcs.Status.Conditions, "Reconciling"); r == nil || r.Status != "False" {
		t.Errorf("awaiting approval is held by design, Reconciling %+v", r)
	}
	assertEvent(t, ns, "GateWaiting", "replicas-1")
	// Nothing of replica 1 moves while the gate is closed, whatever else is
	// approved: another gate, or this gate of another revision.
	for _, wrong := range []string{v1alpha1.ApprovalOf(pcs.Status.UpdateRevision, "replicas-2"), v1alpha1.ApprovalOf("disagg-old", "replicas-1")} {
		setApproval(t, pcs, wrong)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if n := imagesByReplica(t, ns, v2)["1"]; n != 0 {
				t.Fatalf("approval %q: replica 1 has %d pods on v2 behind a closed gate", wrong, n)
			}
			time.Sleep(200 * time.Millisecond) // sampling a state that must not change, not waiting for one
		}
	}
	setApproval(t, pcs, v1alpha1.ApprovalOf(pcs.Status.UpdateRevision, gate.Name))
	waitFor(t, "the rollout to complete after the approval", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing")
		return pcs.Status.UpdatedReplicas == 2 && c != nil && c.Reason == string(v1alpha1.ReasonRolloutComplete), fmt.Sprintf("%+v", pcs.Status)
	})
	if up := pcs.Status.UpdateProgress; up == nil || up.Gate != nil || up.ReplicaGatesPassed != 1 {
		t.Errorf("after the rollout: progress %+v, want no gate and replicas-1 passed", up)
	}
	assertEvent(t, ns, "GatePassed", "replicas-1")
}

func setApproval(t *testing.T, pcs *v1alpha1.PodCliqueSet, value string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs); err != nil {
			return err
		}
		if pcs.Annotations == nil {
			pcs.Annotations = map[string]string{}
		}
		pcs.Annotations[v1alpha1.AnnotationApprovedRevision] = value
		return env.Client.Update(context.Background(), pcs)
	})
	if err != nil {
		t.Fatal(err)
	}
}
