package podclique

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/expectations"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The plan judges pods from the cache. A pod taken for failed (so free to
// replace, outside the budget) that turned Ready before the delete reached the
// apiserver must not be deleted on the stale judgement: the delete is
// conditional on the resourceVersion observed, the conflict ends the pass, and
// the pod stays for the next plan. The chaos suite saw the stale delete break
// the availability floor after a rollback. Runs against a real apiserver,
// whose preconditions are what is tested.
func TestApply_DeletesNoPodThatChangedSinceItWasObserved(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	c := env.Client

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "stale-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	pclq := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "worker"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "worker-0", Labels: map[string]string{v1alpha1.LabelPodIndex: "0"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	observed := pod.DeepCopy() // what the plan was made from: not ready

	// The pod turns Ready after the plan was made.
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), Expectations: expectations.New[rollout.Unit](time.Now)}
	plan := rollout.LevelPlan{Deletes: []rollout.Delete{{Index: 0, Reason: rollout.ReasonReplaceFailed}}}
	obs := observation{pods: map[int32]*corev1.Pod{0: observed}}
	err = r.apply(ctx, pclq, plan, obs, revisionTemplates{})
	if !apierrors.IsConflict(errors.Unwrap(err)) && !apierrors.IsConflict(err) {
		t.Fatalf("deleting a pod that changed since it was observed: got %v, want a conflict", err)
	}
	cur := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cur); err != nil {
		t.Fatalf("the pod is gone: %v", err)
	}
	if cur.DeletionTimestamp != nil {
		t.Fatal("the pod is being deleted on a stale judgement")
	}

	// Observed as it is, it is deleted.
	obs.pods[0] = cur
	if err := r.apply(ctx, pclq, plan, obs, revisionTemplates{}); err != nil {
		t.Fatalf("deleting the pod as observed: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cur); !apierrors.IsNotFound(err) && cur.DeletionTimestamp == nil {
		t.Fatalf("the pod observed as it is was not deleted (%v)", err)
	}
}
