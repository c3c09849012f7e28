package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// disaggScene runs examples/disaggregated.yaml (a frontend and prefill/decode
// groups, 2 replicas, 30 pods) in its own namespace with a test kubelet.
func disaggScene(t *testing.T) (ns string, pcs *v1alpha1.PodCliqueSet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns = newNamespace(t)
	testenv.StartKubelet(ctx, env.Client, ns)
	for _, u := range manifests(t, filepath.Join(testenv.RepoRoot(), "examples", "disaggregated.yaml")) {
		u.SetNamespace(ns)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	pcs = &v1alpha1.PodCliqueSet{}
	pcs.Namespace, pcs.Name = ns, "disagg"
	waitFor(t, "the PodCliqueSet to become available", 90*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Available")
		return pcs.Status.AvailableReplicas == 2 && c != nil && c.Status == "True", fmt.Sprintf("%+v", pcs.Status)
	})
	return ns, pcs
}

func listNames(t *testing.T, ns string, list client.ObjectList) []string {
	t.Helper()
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	objs, err := apimeta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.(client.Object).GetName())
	}
	sort.Strings(out)
	return out
}

func TestPodCliqueSet_CreatesEveryLevelGangsAndServices(t *testing.T) {
	ns, _ := disaggScene(t)
	if got := listNames(t, ns, &v1alpha1.PodCliqueScalingGroupList{}); strings.Join(got, ",") != "disagg-0-decode,disagg-0-prefill,disagg-1-decode,disagg-1-prefill" {
		t.Errorf("scaling groups %v", got)
	}
	cliques := listNames(t, ns, &v1alpha1.PodCliqueList{})
	for _, want := range []string{"disagg-0-frontend", "disagg-1-frontend", "disagg-0-prefill-0-prefill-leader", "disagg-1-decode-1-decode-worker"} {
		if !strings.Contains(strings.Join(cliques, ","), want) {
			t.Errorf("PodClique %s missing from %v", want, cliques)
		}
	}
	if len(cliques) != 2*(1+2*2+2*2) {
		t.Errorf("%d PodCliques, want 18: %v", len(cliques), cliques)
	}
	if pods := listNames(t, ns, &corev1.PodList{}); len(pods) != 30 {
		t.Errorf("%d pods, want 30", len(pods))
	}
	if svcs := listNames(t, ns, &corev1.ServiceList{}); strings.Join(svcs, ",") != "disagg-0,disagg-1" {
		t.Errorf("headless Services %v, want disagg-0,disagg-1", svcs)
	}
	if revs := listNames(t, ns, &appsv1.ControllerRevisionList{}); len(revs) != 1 {
		t.Errorf("revisions %v, want one", revs)
	}
	// Base gang per replica; group replica 1 of each group (minAvailable 1) has its own.
	want := "disagg-0,disagg-0-decode-1,disagg-0-prefill-1,disagg-1,disagg-1-decode-1,disagg-1-prefill-1"
	if gangs := listNames(t, ns, &schedulingv1alpha2.PodGroupList{}); strings.Join(gangs, ",") != want {
		t.Errorf("PodGroups %v, want %s", gangs, want)
	}
	var base schedulingv1alpha2.PodGroup
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "disagg-0"}, &base); err != nil {
		t.Fatal(err)
	}
	// frontend 3 + one replica each of prefill and decode (leader 1 + workers 2).
	if got := base.Spec.SchedulingPolicy.Gang.MinCount; got != 9 {
		t.Errorf("base gang minCount %d, want 9", got)
	}
}

func updatePCS(t *testing.T, pcs *v1alpha1.PodCliqueSet, mutate func(*v1alpha1.PodCliqueSetSpec)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs); err != nil {
			return err
		}
		mutate(&pcs.Spec)
		return env.Client.Update(ctx, pcs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func setEngineImage(image string) func(*v1alpha1.PodCliqueSetSpec) {
	return func(s *v1alpha1.PodCliqueSetSpec) {
		for i := range s.Template.Cliques {
			c := &s.Template.Cliques[i]
			if c.Name != "frontend" {
				c.Template.Spec.Containers[0].Image = image
			}
		}
		s.Template.Cliques[0].Template.Spec.Containers[0].Image = strings.Replace(image, "engine", "frontend", 1)
	}
}

func TestPodCliqueSet_DefaultRollingUpdateFinishesOneReplicaBeforeTheNext(t *testing.T) {
	ns, pcs := disaggScene(t)
	pw := watchPodsOfSet(t, ns, 0, 30) // no surge anywhere: never more than 30 pods that count
	oldRevision := pcs.Status.UpdateRevision
	updatePCS(t, pcs, setEngineImage("lockstep-examples/llm-engine:v2"))
	waitFor(t, "the rollout to complete", 120*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, "Progressing")
		done := pcs.Status.UpdatedReplicas == 2 && pcs.Status.AvailableReplicas == 2 && pcs.Status.UpdateRevision != oldRevision &&
			pcs.Status.CurrentRevision == pcs.Status.UpdateRevision && c != nil && c.Reason == "RolloutComplete"
		return done, fmt.Sprintf("%+v", pcs.Status)
	})
	assertRolloutMetrics(t, ns, "disagg")
	// Once the rollout is complete the children no longer name an older
	// revision, without anything else happening to wake the operator.
	waitFor(t, "the children to drop the old current revision", 10*time.Second, func() (bool, string) {
		var cliques v1alpha1.PodCliqueList
		var groups v1alpha1.PodCliqueScalingGroupList
		_ = env.Client.List(context.Background(), &cliques, client.InNamespace(ns))
		_ = env.Client.List(context.Background(), &groups, client.InNamespace(ns))
		var stale []string
		for _, c := range cliques.Items {
			if c.Spec.UpdateStrategy.CurrentRevision != "" && c.Labels[v1alpha1.LabelPodCliqueScalingGroup] == "" {
				stale = append(stale, c.Name+"="+c.Spec.UpdateStrategy.CurrentRevision)
			}
		}
		for _, g := range groups.Items {
			if g.Spec.UpdateStrategy.CurrentRevision != "" {
				stale = append(stale, g.Name+"="+g.Spec.UpdateStrategy.CurrentRevision)
			}
		}
		return len(stale) == 0, strings.Join(stale, ",")
	})
	deleted := pw.check(t)
	// Every deletion in replica 0 comes before any in replica 1.
	seenOne := false
	for _, name := range deleted {
		switch {
		case strings.HasPrefix(name, "disagg-1-"):
			seenOne = true
		case strings.HasPrefix(name, "disagg-0-") && seenOne:
			t.Fatalf("replica 0 pod %s deleted after replica 1 started: %v", name, deleted)
		}
	}
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 30 {
		t.Fatalf("%d pods after the rollout, want 30", len(pods.Items))
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; !strings.HasSuffix(img, ":v2") {
			t.Errorf("pod %s still runs %s", p.Name, img)
		}
		if idx := p.Labels[v1alpha1.LabelPodIndex]; (strings.Contains(p.Name, "frontend") && idx > "2") || (strings.Contains(p.Name, "worker") && idx > "1") {
			t.Errorf("pod %s has index %s: a hole or a leftover surge index", p.Name, idx)
		}
	}
}

func TestPodCliqueSet_ScalingNeverStartsARollout(t *testing.T) {
	ns, pcs := disaggScene(t)
	pw := watchPodsOfSet(t, ns, 0, 45)
	rev := pcs.Status.UpdateRevision
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { *s.Replicas = 3 })
	waitFor(t, "3 available replicas", 90*time.Second, func() (bool, string) {
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.AvailableReplicas == 3 && pcs.Status.UpdatedReplicas == 3, fmt.Sprintf("%+v", pcs.Status)
	})
	if pcs.Status.UpdateRevision != rev {
		t.Fatalf("scaling changed the revision from %s to %s", rev, pcs.Status.UpdateRevision)
	}
	if deleted := pw.check(t); len(deleted) != 0 {
		t.Fatalf("scaling out deleted pods %v", deleted)
	}
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { *s.Replicas = 1 })
	waitFor(t, "1 replica left, index 0", 90*time.Second, func() (bool, string) {
		groups := listNames(t, ns, &v1alpha1.PodCliqueScalingGroupList{})
		return strings.Join(groups, ",") == "disagg-0-decode,disagg-0-prefill", strings.Join(groups, ",")
	})
}

func TestPodCliqueSet_SaysWhenAGangIsNotPlaced(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := newNamespace(t)
	for _, u := range manifests(t, filepath.Join(testenv.RepoRoot(), "examples", "single-node-aggregated.yaml")) {
		u.SetNamespace(ns)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	pcs := &v1alpha1.PodCliqueSet{}
	pcs.Namespace, pcs.Name = ns, "single-node-agg"
	gangCondition := func() *metav1.Condition {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return apimeta.FindStatusCondition(pcs.Status.Conditions, "GangScheduled")
	}
	// No kubelet yet: nothing binds the pods, so the gang is not placed.
	waitFor(t, "GangScheduled=False", 30*time.Second, func() (bool, string) {
		c := gangCondition()
		return c != nil && c.Status == "False" && strings.Contains(c.Message, "replica 0: gang single-node-agg-0"), fmt.Sprintf("%+v", c)
	})
	testenv.StartKubelet(ctx, env.Client, ns)
	waitFor(t, "GangScheduled=True once the pods are bound", 30*time.Second, func() (bool, string) {
		c := gangCondition()
		return c != nil && c.Status == "True", fmt.Sprintf("%+v", c)
	})
}

// assertRolloutMetrics checks that a completed rollout was recorded: one
// duration observation, no rollout in progress, replica steps counted.
func assertRolloutMetrics(t *testing.T, ns, name string) {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != ns || labels["podcliqueset"] != name {
				continue
			}
			switch f.GetName() {
			case "lockstep_rollout_duration_seconds":
				found[f.GetName()+"/"+labels["result"]] += float64(m.GetHistogram().GetSampleCount())
			case "lockstep_rollout_in_progress":
				found[f.GetName()] += m.GetGauge().GetValue()
			case "lockstep_rollout_steps_total":
				found[f.GetName()+"/"+labels["step"]] += m.GetCounter().GetValue()
			}
		}
	}
	if found["lockstep_rollout_duration_seconds/complete"] < 1 || found["lockstep_rollout_in_progress"] != 0 || found["lockstep_rollout_steps_total/replica"] < 2 {
		t.Fatalf("rollout metrics for %s/%s: %v", ns, name, found)
	}
}

func TestPodCliqueSet_KeepsAChildScaledThroughItsScaleSubresource(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	frontend := &v1alpha1.PodClique{}
	frontend.Namespace, frontend.Name = ns, "disagg-0-frontend"
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc := &autoscalingv1.Scale{}
		if err := env.Client.SubResource("scale").Get(ctx, frontend, sc); err != nil {
			return err
		}
		sc.Spec.Replicas = 5 // as an HPA would
		return env.Client.SubResource("scale").Update(ctx, frontend, client.WithSubResourceBody(sc))
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "5 frontend pods in replica 0", 60*time.Second, func() (bool, string) {
		var pods corev1.PodList
		_ = env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodClique: "disagg-0-frontend"})
		return len(pods.Items) == 5, fmt.Sprint(len(pods.Items))
	})
	// An unrelated change of the PodCliqueSet must not undo the scaling...
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { s.MinReadySeconds = 1 })
	waitFor(t, "the PodCliqueSet to observe its change", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
		return pcs.Status.ObservedGeneration == pcs.Generation, fmt.Sprint(pcs.Status.ObservedGeneration)
	})
	waitFor(t, "the child to carry the PodCliqueSet's minReadySeconds", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(frontend), frontend)
		return frontend.Spec.MinReadySeconds == 1, fmt.Sprint(frontend.Spec.MinReadySeconds)
	})
	if frontend.Spec.Replicas != 5 {
		t.Fatalf("the PodCliqueSet reset the scaled child to %d replicas", frontend.Spec.Replicas)
	}
	// ...but a change of the clique's replicas in the template wins.
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) {
		s.Template.Cliques[0].Replicas = 2
		s.Template.Cliques[0].MinAvailable = new(int32(2))
	})
	waitFor(t, "the template's replicas to win", 30*time.Second, func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(frontend), frontend)
		return frontend.Spec.Replicas == 2, fmt.Sprint(frontend.Spec.Replicas)
	})
}

func TestPodCliqueSet_TrimsRevisionsAndDeletesEverythingWithIt(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { s.RevisionHistoryLimit = new(int32(1)) })
	for _, v := range []string{"v2", "v3", "v4"} {
		updatePCS(t, pcs, setEngineImage("lockstep-examples/llm-engine:"+v))
		waitFor(t, "rollout to "+v, 120*time.Second, func() (bool, string) {
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), pcs)
			return pcs.Status.ObservedGeneration == pcs.Generation && pcs.Status.UpdatedReplicas == 2 &&
				pcs.Status.CurrentRevision == pcs.Status.UpdateRevision, fmt.Sprintf("%+v", pcs.Status)
		})
	}
	// The current revision plus one of history.
	waitFor(t, "history trimmed to the limit", 30*time.Second, func() (bool, string) {
		revs := listNames(t, ns, &appsv1.ControllerRevisionList{})
		return len(revs) == 2, strings.Join(revs, ",")
	})
	if err := env.Client.Delete(ctx, pcs); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every object of the PodCliqueSet gone", 60*time.Second, func() (bool, string) {
		left := map[string][]string{
			"pods": listNames(t, ns, &corev1.PodList{}), "podcliques": listNames(t, ns, &v1alpha1.PodCliqueList{}),
			"groups": listNames(t, ns, &v1alpha1.PodCliqueScalingGroupList{}), "services": listNames(t, ns, &corev1.ServiceList{}),
			"revisions": listNames(t, ns, &appsv1.ControllerRevisionList{}),
		}
		n := 0
		for _, v := range left {
			n += len(v)
		}
		return n == 0, fmt.Sprint(left)
	})
}

// A PodClique someone else made, labelled as a member of the PodCliqueSet's
// scaling group in replica 1 but controlled by none of its objects, is not
// Lockstep's: removing replica 1 (a scale-in) deletes the replica's own
// children and leaves it alone. (It was taken as the group's member by its
// labels and deleted with the replica.)
func TestPodCliqueSet_RemovingAReplicaLeavesAForeignPodCliqueWithItsLabels(t *testing.T) {
	ns, pcs := disaggScene(t)
	ctx := context.Background()
	intruder := &v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder", Labels: map[string]string{
			v1alpha1.LabelPodCliqueSet: pcs.Name, v1alpha1.LabelPodCliqueSetReplicaIndex: "1",
			v1alpha1.LabelPodCliqueScalingGroup: "prefill", v1alpha1.LabelClique: "prefill-worker",
		}},
		Spec: v1alpha1.PodCliqueSpec{Replicas: 0, Revision: "someone-else", Template: podTemplate("intruder:v1")},
	}
	if err := env.Client.Create(ctx, intruder); err != nil {
		t.Fatalf("creating the foreign PodClique: %v", err)
	}
	updatePCS(t, pcs, func(s *v1alpha1.PodCliqueSetSpec) { *s.Replicas = 1 })
	waitFor(t, "replica 1's scaling groups gone", 90*time.Second, func() (bool, string) {
		groups := listNames(t, ns, &v1alpha1.PodCliqueScalingGroupList{})
		return strings.Join(groups, ",") == "disagg-0-decode,disagg-0-prefill", strings.Join(groups, ",")
	})
	waitFor(t, "replica 1's own PodCliques gone", 90*time.Second, func() (bool, string) {
		var left []string
		for _, name := range listNames(t, ns, &v1alpha1.PodCliqueList{}) {
			if strings.HasPrefix(name, "disagg-1-") {
				left = append(left, name)
			}
		}
		return len(left) == 0, strings.Join(left, ",")
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(intruder), intruder); err != nil {
		t.Fatalf("the foreign PodClique: %v", err)
	}
	if intruder.DeletionTimestamp != nil {
		t.Fatalf("the foreign PodClique is being deleted (since %s)", intruder.DeletionTimestamp)
	}
}
