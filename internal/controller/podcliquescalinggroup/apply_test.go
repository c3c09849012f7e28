package podcliquescalinggroup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
	"github.com/lockstep-dev/lockstep/internal/observe/groupreplicas"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// A group the cache still shows alive after its deletion began (an apiserver
// restart can delay the watch) gets no new member PodCliques: apply reads the
// group live before it creates. Fails without that read.
func TestApply_CreatesNoGroupReplicaForAGroupTheCacheShowsLate(t *testing.T) {
	env, ns := testenv.StartForTest(t, testenv.Options{}, "late")
	ctx, c := t.Context(), env.Client
	clique := v1alpha1.PodCliqueTemplateSpec{Name: "leader", Replicas: 1, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}}}}
	newGroup := func(name string) *v1alpha1.PodCliqueScalingGroup {
		g := &v1alpha1.PodCliqueScalingGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{"test.lockstep.dev/hold"}},
			Spec:       v1alpha1.PodCliqueScalingGroupSpec{Replicas: 1, Cliques: []v1alpha1.PodCliqueTemplateSpec{clique}},
		}
		if err := c.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10),
		Expectations: expectations.New[rollout.GroupReplicaObservation](time.Now)}
	tmpl := groupTemplate{cliques: []v1alpha1.PodCliqueTemplateSpec{clique}, hash: "h1"}
	plan := rollout.LevelPlan{Creates: []rollout.Create{{Index: 0, Revision: "h1"}}}
	members := func() int {
		var list v1alpha1.PodCliqueList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}

	deleting := newGroup("deleting")
	stale := deleting.DeepCopy()
	if err := c.Delete(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	if err := r.apply(ctx, stale, plan, groupreplicas.Observation{}, groupTemplates{update: tmpl}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if n := members(); n != 0 {
		t.Fatalf("a group being deleted got %d member PodClique(s) from a cache that had not seen its deletion", n)
	}

	live := newGroup("live")
	if err := r.apply(ctx, live, plan, groupreplicas.Observation{}, groupTemplates{update: tmpl}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if n := members(); n != 1 {
		t.Fatalf("a live group got %d member PodCliques, want 1", n)
	}
}
