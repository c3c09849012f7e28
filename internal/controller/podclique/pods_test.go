package podclique

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
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
	env, ns := testenv.StartForTest(t, testenv.Options{}, "stale")
	ctx, c := t.Context(), env.Client
	pclq := &v1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker-0", Labels: map[string]string{v1alpha1.LabelPodIndex: "0"}},
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
	plan := rollout.LevelPlan{Deletes: []rollout.Delete{{Index: 0, Reason: rollout.ReasonReplaceFailed, Key: "worker-0"}}}
	obs := observation{pods: map[string]*corev1.Pod{"worker-0": observed}}
	err := r.apply(ctx, pclq, plan, obs, revisionTemplates{})
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
	obs.pods["worker-0"] = cur
	if err := r.apply(ctx, pclq, plan, obs, revisionTemplates{}); err != nil {
		t.Fatalf("deleting the pod as observed: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cur); !apierrors.IsNotFound(err) && cur.DeletionTimestamp == nil {
		t.Fatalf("the pod observed as it is was not deleted (%v)", err)
	}
}

// After an apiserver restart the cache can show a PodClique as it was before
// its deletion began. Its pods must not be made again from that view: the
// fault suite saw such a pod hold the PodClique's foreground deletion, and
// the group replica's replacement, for minutes. apply reads the PodClique
// live before it creates; this fails without that read.
func TestApply_CreatesNoPodForAPodCliqueTheCacheShowsLate(t *testing.T) {
	env, ns := testenv.StartForTest(t, testenv.Options{}, "late")
	ctx, c := t.Context(), env.Client
	newClique := func(name string) *v1alpha1.PodClique {
		pclq := &v1alpha1.PodClique{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{"test.lockstep.dev/hold"}},
			Spec: v1alpha1.PodCliqueSpec{Replicas: 1, Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}}}},
		}
		if err := c.Create(ctx, pclq); err != nil {
			t.Fatal(err)
		}
		return pclq
	}
	tmpl := podTemplate{hash: "h1"}
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10), Expectations: expectations.New[rollout.Unit](time.Now)}
	plan := rollout.LevelPlan{Creates: []rollout.Create{{Index: 0, Revision: "h1"}}}
	podsOf := func(pclq *v1alpha1.PodClique) int {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPodClique: pclq.Name}); err != nil {
			t.Fatal(err)
		}
		return len(pods.Items)
	}
	apply := func(stale *v1alpha1.PodClique) {
		t.Helper()
		tmpl.spec = &stale.Spec.Template
		if err := r.apply(ctx, stale, plan, observation{pods: map[string]*corev1.Pod{}}, revisionTemplates{update: tmpl}); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}

	deleting := newClique("deleting")
	stale := deleting.DeepCopy() // what the cache still shows
	if err := c.Delete(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	apply(stale)
	if n := podsOf(deleting); n != 0 {
		t.Fatalf("a PodClique being deleted got %d pod(s) from a cache that had not seen its deletion", n)
	}

	replaced := newClique("replaced")
	stale = replaced.DeepCopy()
	stale.UID = "an-earlier-uid"
	apply(stale)
	if n := podsOf(replaced); n != 0 {
		t.Fatalf("pods were made for a PodClique the apiserver has replaced (%d)", n)
	}

	gone := newClique("gone")
	gone.Finalizers = nil
	if err := c.Update(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	apply(gone)
	if n := podsOf(gone); n != 0 {
		t.Fatalf("pods were made for a PodClique that is gone (%d)", n)
	}

	live := newClique("live")
	apply(live)
	if n := podsOf(live); n != 1 {
		t.Fatalf("a live PodClique got %d pods, want 1", n)
	}
}

// A wide step's pods are created side by side, a batch at a time (slowstart),
// and told in one Event in the plan's order; when the first create fails no
// other is tried. The interceptor lets the second batch's two creates through
// only once both are in flight: made one after another, they would wait out
// the deadline and fail.
func TestApply_CreatesAWideStepSideBySide(t *testing.T) {
	env, ns := testenv.StartForTest(t, testenv.Options{}, "wide")
	ctx := t.Context()
	pclq := &v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"},
		Spec: v1alpha1.PodCliqueSpec{Replicas: 6, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:v1"}}}}},
	}
	if err := env.Client.Create(ctx, pclq); err != nil {
		t.Fatal(err)
	}
	var plan rollout.LevelPlan
	for i := range int32(6) {
		plan.Creates = append(plan.Creates, rollout.Create{Index: i, Revision: "h1"})
	}
	tmpl := revisionTemplates{update: podTemplate{hash: "h1", spec: &pclq.Spec.Template}}

	var mu sync.Mutex
	var tried []string
	secondBatch := make(chan struct{}, 2)
	var refuse bool
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(direct, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			tried = append(tried, obj.GetName())
			mu.Unlock()
			if refuse {
				return errors.New("refused by the test")
			}
			if obj.GetName() == "worker-1" || obj.GetName() == "worker-2" {
				secondBatch <- struct{}{}
				both := func(context.Context) (bool, error) { return len(secondBatch) == 2, nil }
				if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, both); err != nil {
					return fmt.Errorf("%s: the other create of its batch never started: %w", obj.GetName(), err)
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, APIReader: env.Client, Recorder: rec, Expectations: expectations.New[rollout.Unit](time.Now)}
	if err := r.apply(ctx, pclq, plan, observation{pods: map[string]*corev1.Pod{}}, tmpl); err != nil {
		t.Fatalf("apply: %v", err)
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 6 {
		t.Fatalf("%d pods created, want 6", len(pods.Items))
	}
	want := "Created 6 pods: worker-0 (index 0, revision h1), worker-1 (index 1, revision h1), worker-2"
	if got := <-rec.Events; !strings.Contains(got, want) {
		t.Fatalf("event %q, want it to say %q", got, want)
	}

	refuse, tried = true, nil
	other := pclq.DeepCopy()
	other.Name = "other"
	other.ResourceVersion, other.UID = "", ""
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := r.apply(ctx, other, plan, observation{pods: map[string]*corev1.Pod{}}, tmpl); err == nil {
		t.Fatal("apply reported no error for refused creates")
	}
	if len(tried) != 1 {
		t.Fatalf("%d creates tried after the first was refused (%v), want 1", len(tried), tried)
	}
}
