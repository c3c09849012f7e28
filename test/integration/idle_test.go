package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
)

// A settled PodCliqueSet costs the apiserver nothing: reconciling it and every
// child again writes no object and no status (the same resourceVersions before
// and after), so an idle cluster gets no writes from the operator. It has
// rolled once: the status of an ended rollout must stand still too.
func TestPodCliqueSet_ReconcilingASettledObjectWritesNothing(t *testing.T) {
	ns, pcs := disaggScene(t)
	updatePCS(t, pcs, setEngineImage("engine:v2"))
	awaitRolledOut(t, pcs, "the PodCliqueSet to roll and settle")
	// settled: nothing pending, every pod ready, and no write for longer than
	// a progress-only status change may wait (write.StatusBatch)
	last, since := "", time.Now()
	waitFor(t, "every level to settle", 60*time.Second, func() (bool, string) {
		now := versions(t, ns)
		if now != last {
			last, since = now, time.Now()
		}
		_ = env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs)
		c := apimeta.FindStatusCondition(pcs.Status.Conditions, string(v1alpha1.ConditionProgressing))
		return c != nil && c.Reason == string(v1alpha1.ReasonRolloutComplete) && time.Since(since) > 2*write.StatusBatch, fmt.Sprintf("%+v", c)
	})
	before := versions(t, ns)

	// Wake every controller for every object of the namespace, through labels
	// and annotations the controllers do not own. A touched object is held to
	// the resourceVersion the touch gave it.
	reconciles := reconcileCount(t)
	touched := map[string]string{}
	touch := func(o client.Object) {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l["test.lockstep.dev/touch"] = "1"
		o.SetLabels(l)
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a["test.lockstep.dev/touch"] = "1"
		o.SetAnnotations(a)
		if err := env.Client.Patch(context.Background(), o, patch); err != nil {
			t.Fatal(err)
		}
		touched[kindName(o)] = o.GetResourceVersion()
	}
	touch(pcs)
	var cliques v1alpha1.PodCliqueList
	if err := env.Client.List(context.Background(), &cliques, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range cliques.Items {
		touch(&cliques.Items[i])
	}
	var groups v1alpha1.PodCliqueScalingGroupList
	if err := env.Client.List(context.Background(), &groups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range groups.Items {
		touch(&groups.Items[i])
	}
	waitFor(t, "every controller to reconcile again", 30*time.Second, func() (bool, string) {
		now := reconcileCount(t)
		ok := now["podcliqueset"] > reconciles["podcliqueset"] && now["podclique"] >= reconciles["podclique"]+len(cliques.Items) &&
			now["podcliquescalinggroup"] >= reconciles["podcliquescalinggroup"]+len(groups.Items)
		return ok, fmt.Sprintf("before %v, now %v", reconciles, now)
	})
	after := versions(t, ns)
	var changed []string
	b, a := lines(before), lines(after)
	for k, v := range a {
		want := b[k]
		if rv, ok := touched[k]; ok {
			want = rv
		}
		if v != want {
			changed = append(changed, fmt.Sprintf("%s %s -> %s", k, want, v))
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		t.Fatalf("reconciling a settled PodCliqueSet wrote:\n%s", strings.Join(changed, "\n"))
	}
}

// versions lists every object of the namespace the operator writes, with its
// resourceVersion, one per line.
func versions(t *testing.T, ns string) string {
	t.Helper()
	var out []string
	for _, list := range []client.ObjectList{&v1alpha1.PodCliqueSetList{}, &v1alpha1.PodCliqueList{}, &v1alpha1.PodCliqueScalingGroupList{},
		&corev1.PodList{}, &corev1.ServiceList{}, &appsv1.ControllerRevisionList{}, &schedulingv1alpha2.PodGroupList{}} {
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		objs, err := apimeta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			co := o.(client.Object)
			out = append(out, kindName(co)+"="+co.GetResourceVersion())
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func kindName(o client.Object) string {
	return fmt.Sprintf("%T/%s", o, o.GetName())
}

func lines(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// reconcileCount is controller-runtime's count of reconciles per controller.
func reconcileCount(t *testing.T) map[string]int {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					out[l.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}
