package integration

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// deletionOrder records, for each pod and PodClique of a namespace, the
// resourceVersion at which its deletion began (etcd orders them).
type deletionOrder struct {
	mu sync.Mutex
	at map[string]uint64 // "pod/<name>" or "pclq/<name>"
}

func (d *deletionOrder) note(kind string, o metav1.Object) {
	if o.GetDeletionTimestamp() == nil {
		return
	}
	rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, seen := d.at[kind+"/"+o.GetName()]; !seen {
		d.at[kind+"/"+o.GetName()] = rv
	}
}

func (d *deletionOrder) get(key string) (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rv, ok := d.at[key]
	return rv, ok
}

func watchDeletions(t *testing.T, ns string) *deletionOrder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := &deletionOrder{at: map[string]uint64{}}
	pw, err := clientset(t).CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var cliques v1alpha1.PodCliqueList
	cw, err := wc.Watch(ctx, &cliques, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range pw.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				d.note("pod", p)
			}
		}
	}()
	go func() {
		for ev := range cw.ResultChan() {
			if c, ok := ev.Object.(*v1alpha1.PodClique); ok {
				d.note("pclq", c)
			}
		}
	}()
	return d
}

// A group replica removed while it is unavailable loses its pods in the step
// that removed it: the operator deletes them itself, before its member
// PodCliques, so no pod is left running for the garbage collector to take
// later (once it may have recovered), and what waits for the pods (the next
// PodCliqueSet replica, role step) is not held up by the collector. Before,
// the member PodCliques were deleted first and the collector deleted the pods.
func TestPodCliqueScalingGroup_AReplicaRemovedWhileUnavailableHasItsPodsDeletedWithIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := newNamespace(t)
	kubelet := testenv.StartKubelet(ctx, env.Client, ns)
	// group replica 0's leader never turns ready: the replica is unavailable
	kubelet.ReadyWhen(func(p *corev1.Pod) bool { return p.Name != "llm-0-prefill-0-leader-0" })
	g := &v1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-0-prefill", Labels: map[string]string{
			v1alpha1.LabelPodCliqueSet: "llm", v1alpha1.LabelPodCliqueSetReplicaIndex: "0", v1alpha1.LabelPodCliqueScalingGroup: "prefill",
		}},
		Spec: v1alpha1.PodCliqueScalingGroupSpec{Replicas: 2, MinAvailable: new(int32(1)), Revision: "llm-v1",
			Cliques: []v1alpha1.PodCliqueTemplateSpec{
				{Name: "leader", Replicas: 1, Template: podTemplate("engine:v1")},
				{Name: "worker", Replicas: 2, Template: podTemplate("engine:v1")},
			}},
	}
	if err := env.Client.Create(ctx, g); err != nil {
		t.Fatalf("creating PodCliqueScalingGroup: %v", err)
	}
	waitFor(t, "group replica 1 ready and replica 0's 3 pods made", 30*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(ready) == 1 && len(pods.Items) == 6, state
	})
	order := watchDeletions(t, ns)
	setGroupImage(t, g, "engine:v2")

	old := []string{"llm-0-prefill-0-leader-0", "llm-0-prefill-0-worker-0", "llm-0-prefill-0-worker-1"}
	waitFor(t, "group replica 0 and its pods deleted", 30*time.Second, func() (bool, string) {
		_, leader := order.get("pclq/llm-0-prefill-0-leader")
		_, worker := order.get("pclq/llm-0-prefill-0-worker")
		n := 0
		for _, p := range old {
			if _, ok := order.get("pod/" + p); ok {
				n++
			}
		}
		return leader && worker && n == len(old), ""
	})
	for _, p := range old {
		podAt, _ := order.get("pod/" + p)
		clique := "pclq/llm-0-prefill-0-" + map[bool]string{true: "leader", false: "worker"}[p == old[0]]
		cliqueAt, _ := order.get(clique)
		if podAt > cliqueAt {
			t.Errorf("pod %s's deletion began at resourceVersion %d, after its PodClique's (%d): it was left to the garbage collector", p, podAt, cliqueAt)
		}
	}
}
