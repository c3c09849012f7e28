package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// holdFinalizer keeps a deleted pod terminating until the test lets it go (the
// test kubelet finishes every deletion at once otherwise).
const holdFinalizer = "test.lockstep.dev/hold"

// setHold adds (or removes) the hold finalizer on every pod of the scene.
func (s *podCliqueScene) setHold(hold bool) {
	s.t.Helper()
	for _, p := range s.pods() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cur corev1.Pod
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(&p), &cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			has := slices.Contains(cur.Finalizers, holdFinalizer)
			switch {
			case hold && !has:
				cur.Finalizers = append(cur.Finalizers, holdFinalizer)
			case !hold && has:
				cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == holdFinalizer })
			default:
				return nil
			}
			return env.Client.Update(context.Background(), &cur)
		})
		if err != nil {
			s.t.Fatalf("finalizer of pod %s: %v", p.Name, err)
		}
	}
}

// layout reads as "name@index(hash)[ terminating]" per pod, for messages.
func layoutOf(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := fmt.Sprintf("%s@%s(%s)", p.Name, p.Labels[v1alpha1.LabelPodIndex], p.Labels[v1alpha1.LabelTemplateHash])
		if p.DeletionTimestamp != nil {
			s += " terminating"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// Under TerminationStarted a pod's replacement starts while the pod still
// terminates: for a while index 0 has two pods, the new one under a name of its
// own with the index's hostname; the rollout finishes without waiting for any
// deletion.
func TestPodClique_TerminationStartedReplacesWhileThePredecessorTerminates(t *testing.T) {
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{PodReplacementPolicy: v1alpha1.TerminationStarted})
	v1, _ := revision.PodCliqueHash(s.pclq)
	names := []string{"web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"}
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(v1, names...))
	s.setHold(true)
	v2 := s.rollToV2()

	waitFor(t, "a replacement at index 0 beside its terminating predecessor", 30*time.Second, func() (bool, string) {
		pods := s.pods()
		var old, repl bool
		for _, p := range pods {
			if p.Labels[v1alpha1.LabelPodIndex] != "0" {
				continue
			}
			old = old || p.Name == names[0] && p.DeletionTimestamp != nil
			repl = repl || p.Name != names[0] && p.DeletionTimestamp == nil && p.Spec.Hostname == names[0] &&
				p.Labels[v1alpha1.LabelTemplateHash] == v2
		}
		return old && repl, layoutOf(pods)
	})
	waitFor(t, "every live pod on v2 and ready while the old ones still terminate", 60*time.Second, func() (bool, string) {
		pods := s.pods()
		live, terminating := 0, 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				terminating++
				continue
			}
			if p.Labels[v1alpha1.LabelTemplateHash] == v2 && isReady(&p) {
				live++
			}
		}
		return live == 3 && terminating == 3, layoutOf(pods)
	})
	s.setHold(false)
	waitFor(t, "the old pods gone", 30*time.Second, func() (bool, string) {
		pods := s.pods()
		return len(pods) == 3, layoutOf(pods)
	})
}

// Under TerminationComplete an index never has two pods: once the operator has
// seen its pod terminating (the PodClique reports 2 live pods), it creates
// nothing there until the pod is gone, then refills it under the same name.
func TestPodClique_TerminationCompleteWaitsForThePredecessorToGo(t *testing.T) {
	s := newPodCliqueScene(t, 3, v1alpha1.ChildUpdateStrategy{PodReplacementPolicy: v1alpha1.TerminationComplete})
	v1, _ := revision.PodCliqueHash(s.pclq)
	names := []string{"web-0-frontend-0", "web-0-frontend-1", "web-0-frontend-2"}
	waitFor(t, "3 ready pods", 30*time.Second, s.settled(v1, names...))
	s.setHold(true)
	v2 := s.rollToV2()
	waitFor(t, "pod 0 terminating, seen by the operator", 30*time.Second, func() (bool, string) {
		var pclq v1alpha1.PodClique
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(s.pclq), &pclq); err != nil {
			return false, err.Error()
		}
		pods := s.pods()
		terminating := len(pods) > 0 && pods[0].Name == names[0] && pods[0].DeletionTimestamp != nil
		return terminating && pclq.Status.Replicas == 2, fmt.Sprintf("status replicas %d; %s", pclq.Status.Replicas, layoutOf(pods))
	})
	if pods := s.pods(); len(pods) != 3 {
		t.Fatalf("a pod was created while index 0 still terminates: %s", layoutOf(pods))
	}
	s.setHold(false)
	waitFor(t, "every pod on v2 under its index's own name", 60*time.Second, s.settled(v2, names...))
}
