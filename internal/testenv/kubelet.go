package testenv

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet stands in for the scheduler and kubelets envtest does not have: it
// binds the pods of one namespace to a node, makes them Ready when the test says
// so, and finishes the deletion of terminating pods. It is a test double for
// node-side behaviour only; everything Lockstep does goes through the real
// apiserver.
type Kubelet struct {
	c  client.Client
	ns string

	mu sync.Mutex
	// ready decides whether a pod becomes Ready; nil means every pod does.
	ready func(*corev1.Pod) bool
}

// StartKubelet runs a kubelet for namespace ns until ctx ends.
func StartKubelet(ctx context.Context, c client.Client, ns string) *Kubelet {
	k := &Kubelet{c: c, ns: ns}
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				k.step(ctx)
			}
		}
	}()
	return k
}

// ReadyWhen sets which pods become Ready (nil: all of them).
func (k *Kubelet) ReadyWhen(f func(*corev1.Pod) bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ready = f
}

func (k *Kubelet) shouldBeReady(p *corev1.Pod) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ready == nil || k.ready(p)
}

func (k *Kubelet) step(ctx context.Context) {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(k.ns)); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		switch {
		case p.DeletionTimestamp != nil:
			_ = k.c.Delete(ctx, p, client.GracePeriodSeconds(0))
		case p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) == 0:
			_ = k.c.SubResource("binding").Create(ctx, p, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
				Target:     corev1.ObjectReference{Kind: "Node", Name: "node-a"},
			})
		case p.Spec.NodeName != "":
			k.setReady(ctx, p, k.shouldBeReady(p))
		}
	}
}

func (k *Kubelet) setReady(ctx context.Context, p *corev1.Pod, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == status && p.Status.Phase == corev1.PodRunning {
			return
		}
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
	}
	_ = k.c.Status().Update(ctx, p)
}
