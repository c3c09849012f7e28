package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

func newScalingGroup(t *testing.T, replicas int32, strategy v1alpha1.ChildUpdateStrategy) (*v1alpha1.PodCliqueScalingGroup, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := newNamespace(t)
	testenv.StartKubelet(ctx, env.Client, ns)
	g := &v1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llm-0-prefill", Labels: map[string]string{
			v1alpha1.LabelPodCliqueSet: "llm", v1alpha1.LabelPodCliqueSetReplicaIndex: "0", v1alpha1.LabelPodCliqueScalingGroup: "prefill",
		}},
		Spec: v1alpha1.PodCliqueScalingGroupSpec{Replicas: replicas, MinAvailable: new(int32(1)), Revision: "llm-v1", UpdateStrategy: strategy,
			Cliques: []v1alpha1.PodCliqueTemplateSpec{
				{Name: "leader", Replicas: 1, Template: podTemplate("engine:v1")},
				{Name: "worker", Replicas: 2, Template: podTemplate("engine:v1")},
			}},
	}
	if err := env.Client.Create(ctx, g); err != nil {
		t.Fatalf("creating PodCliqueScalingGroup: %v", err)
	}
	return g, ns
}

// groupReplicas lists "index@revision" of each group replica whose 3 pods are all
// ready on one PodCliqueSet revision, plus every pod for failure messages.
func groupReplicas(t *testing.T, ns string) (ready []string, state string) {
	t.Helper()
	var list corev1.PodList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	byReplica := map[string][]corev1.Pod{}
	var all []string
	for _, p := range list.Items {
		idx := p.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		byReplica[idx] = append(byReplica[idx], p)
		all = append(all, fmt.Sprintf("%s@%s ready=%v", p.Name, p.Labels[v1alpha1.LabelPodCliqueSetRevision], isReady(&p)))
	}
	for idx, pods := range byReplica {
		ok := len(pods) == 3
		rev := pods[0].Labels[v1alpha1.LabelPodCliqueSetRevision]
		for _, p := range pods {
			ok = ok && isReady(&p) && p.Labels[v1alpha1.LabelPodCliqueSetRevision] == rev
		}
		if ok {
			ready = append(ready, idx+"@"+rev)
		}
	}
	sort.Strings(ready)
	sort.Strings(all)
	return ready, strings.Join(all, ", ")
}

func setGroupImage(t *testing.T, g *v1alpha1.PodCliqueScalingGroup, image string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		g.Spec.Cliques[1].Template = podTemplate(image)
		g.Spec.Revision = "llm-" + strings.ReplaceAll(image, ":", "-")
		return env.Client.Update(ctx, g)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPodCliqueScalingGroup_ReplacesWholeGroupReplicasLowestIndexFirst(t *testing.T) {
	g, ns := newScalingGroup(t, 2, v1alpha1.ChildUpdateStrategy{})
	var v1 string
	waitFor(t, "2 ready group replicas", 30*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		if len(ready) == 2 {
			v1 = strings.SplitN(ready[0], "@", 2)[1]
		}
		return len(ready) == 2, state
	})
	// Each group replica's member PodCliques carry the group's labels and index.
	var pclqs v1alpha1.PodCliqueList
	if err := env.Client.List(context.Background(), &pclqs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pclqs.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	if want := "llm-0-prefill-0-leader,llm-0-prefill-0-worker,llm-0-prefill-1-leader,llm-0-prefill-1-worker"; strings.Join(names, ",") != want {
		t.Fatalf("member PodCliques %v, want %s", names, want)
	}

	pw := watchPods(t, ns, 3, 6) // one group replica (3 pods) may be down; no surge
	setGroupImage(t, g, "engine:v2")
	waitFor(t, "both group replicas replaced", 60*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		return len(ready) == 2 && !strings.Contains(strings.Join(ready, ","), v1), state
	})
	deleted := pw.check(t)
	// Group replica 0's three pods go before any pod of replica 1.
	firstOfOne := len(deleted)
	for i, name := range deleted {
		if strings.HasPrefix(name, "llm-0-prefill-1-") {
			firstOfOne = i
			break
		}
	}
	for _, name := range deleted[firstOfOne:] {
		if strings.HasPrefix(name, "llm-0-prefill-0-") {
			t.Fatalf("pods deleted in order %v: replica 0 must be replaced before replica 1", deleted)
		}
	}
	if len(deleted) != 6 {
		t.Fatalf("deleted %v, want the 6 pods of both replicas", deleted)
	}
}

func TestPodCliqueScalingGroup_SurgeReplicaKeepsCapacityAndIsRemovedLast(t *testing.T) {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	g, ns := newScalingGroup(t, 2, v1alpha1.ChildUpdateStrategy{MaxUnavailable: &zero, MaxSurge: &one})
	var v1 string
	waitFor(t, "2 ready group replicas", 30*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		if len(ready) == 2 {
			v1 = strings.SplitN(ready[0], "@", 2)[1]
		}
		return len(ready) == 2, state
	})
	pw := watchPods(t, ns, 6, 9) // full capacity throughout, at most one extra group replica
	setGroupImage(t, g, "engine:v2")
	waitFor(t, "replicas 0 and 1 on v2, surge replica gone", 90*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		done := len(ready) == 2 && strings.HasPrefix(ready[0], "0@") && strings.HasPrefix(ready[1], "1@") &&
			!strings.Contains(strings.Join(ready, ","), v1) && !strings.Contains(state, "llm-0-prefill-2-")
		return done, state
	})
	deleted := pw.check(t)
	if !strings.Contains(strings.Join(deleted, ","), "llm-0-prefill-2-leader-0") {
		t.Fatalf("no surge group replica (index 2) was created and removed; deletions: %v", deleted)
	}
}

// A group replica that lost one member PodClique (deleted by hand, or the
// operator stopped between creating two) is one gang with a hole: the missing
// member is made again from the replica's template.
func TestPodCliqueScalingGroup_IncompleteGroupReplicaIsMadeWholeAgain(t *testing.T) {
	g, ns := newScalingGroup(t, 2, v1alpha1.ChildUpdateStrategy{Type: v1alpha1.RollingUpdateStrategyType})
	ctx := context.Background()
	waitFor(t, "both group replicas ready", 60*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		return len(ready) == 2, state
	})
	uids := func() map[string]string {
		var list v1alpha1.PodCliqueList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range list.Items {
			if c.DeletionTimestamp == nil {
				out[c.Name] = string(c.UID)
			}
		}
		return out
	}
	before := uids()
	leader := &v1alpha1.PodClique{}
	leader.Namespace, leader.Name = ns, g.Name+"-1-leader"
	if err := env.Client.Delete(ctx, leader); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "group replica 1 whole again and ready", 60*time.Second, func() (bool, string) {
		now := uids()
		ready, state := groupReplicas(t, ns)
		whole := now[g.Name+"-1-leader"] != "" && now[g.Name+"-1-worker"] != "" && now[g.Name+"-1-leader"] != before[g.Name+"-1-leader"]
		return whole && len(ready) == 2, fmt.Sprintf("PodCliques %v; pods %s", now, state)
	})
	if now := uids(); now[g.Name+"-0-leader"] != before[g.Name+"-0-leader"] || now[g.Name+"-0-worker"] != before[g.Name+"-0-worker"] {
		t.Fatalf("group replica 0 was touched: %v, before %v", now, before)
	}
}

// A removed group replica's pods are deleted by the operator in the step that
// removed it, not left to the garbage collector: with the collector stopped,
// group replica 0's member PodCliques stay terminating (their foreground
// deletion waits for the collector) while its pods are already gone, and none
// is made again for a terminating PodClique. Before, the pods went only when
// the collector got to them.
func TestPodCliqueScalingGroup_ARemovedGroupReplicasPodsGoInTheSameStep(t *testing.T) {
	g, ns := newScalingGroup(t, 2, v1alpha1.ChildUpdateStrategy{})
	var v1 string
	waitFor(t, "2 ready group replicas", 30*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		if len(ready) == 2 {
			v1 = strings.SplitN(ready[0], "@", 2)[1]
		}
		return len(ready) == 2, state
	})
	pw := watchPods(t, ns, 3, 6)
	resume, err := env.PauseGarbageCollector()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(resume)
	setGroupImage(t, g, "engine:v2")

	ctx := context.Background()
	waitFor(t, "group replica 0's PodCliques terminating and its pods gone, the garbage collector stopped", 30*time.Second, func() (bool, string) {
		var cliques v1alpha1.PodCliqueList
		if err := env.Client.List(ctx, &cliques, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: "0"}); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: "0"}); err != nil {
			t.Fatal(err)
		}
		terminating := 0
		for _, c := range cliques.Items {
			if c.DeletionTimestamp != nil {
				terminating++
			}
		}
		var left []string
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		return terminating == 2 && len(pods.Items) == 0,
			fmt.Sprintf("%d of %d PodCliques terminating, pods left %v", terminating, len(cliques.Items), left)
	})
	resume()
	waitFor(t, "both group replicas replaced", 60*time.Second, func() (bool, string) {
		ready, state := groupReplicas(t, ns)
		return len(ready) == 2 && !strings.Contains(strings.Join(ready, ","), v1), state
	})
	// Each old pod was deleted once: none was made again meanwhile.
	if deleted := pw.check(t); len(deleted) != 6 {
		t.Fatalf("deleted %v, want the 6 pods of both replicas, each once", deleted)
	}
}
