package podclique

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/expectations"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// observation is what the planner needs to know about a PodClique's pods.
type observation struct {
	units []rollout.Unit
	// pods by index, for deletes (the live pod at an index; terminating ones too).
	pods map[int32]*corev1.Pod
	// nextAvailableIn is when the next ready pod passes minReadySeconds (0: none).
	nextAvailableIn time.Duration
}

// observe turns pods into planner units, with the writes the cache has not shown
// yet applied: created pods count as existing and not ready, deleted ones as
// terminating.
func (r *Reconciler) observe(pclq *v1alpha1.PodClique, pods []corev1.Pod, now time.Time) observation {
	obs := observation{pods: map[int32]*corev1.Pod{}}
	seen := make([]expectations.Observed, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		seen = append(seen, expectations.Observed{Name: p.Name, UID: p.UID, Terminating: p.DeletionTimestamp != nil})
	}
	unseenCreates, unseenDeletes := r.Expectations.Reconcile(key(pclq), seen)
	for i := range pods {
		p := &pods[i]
		idx, err := strconv.ParseInt(p.Labels[v1alpha1.LabelPodIndex], 10, 32)
		if err != nil {
			continue // not ours to plan: the index label is written at creation
		}
		u := podUnit(p, int32(idx), pclq.Spec.MinReadySeconds, now)
		if unseenDeletes[p.UID] {
			u.Terminating = true
		}
		if wait := untilAvailable(p, pclq.Spec.MinReadySeconds, now); wait > 0 && (obs.nextAvailableIn == 0 || wait < obs.nextAvailableIn) {
			obs.nextAvailableIn = wait
		}
		obs.units = append(obs.units, u)
		if prev, ok := obs.pods[u.Index]; !ok || prev.DeletionTimestamp != nil {
			obs.pods[u.Index] = p
		}
	}
	obs.units = append(obs.units, unseenCreates...)
	return obs
}

// podUnit describes one pod for the planner.
func podUnit(p *corev1.Pod, index int32, minReadySeconds int32, now time.Time) rollout.Unit {
	ready, since := podReady(p)
	return rollout.Unit{
		Index:       index,
		Revision:    p.Labels[v1alpha1.LabelTemplateHash],
		Surge:       p.Labels[v1alpha1.LabelSurge] == "true",
		Scheduled:   p.Spec.NodeName != "",
		Ready:       ready,
		Available:   rollout.PodAvailable(ready, since, minReadySeconds, now),
		Terminating: p.DeletionTimestamp != nil,
		CreatedAt:   p.CreationTimestamp.Time,
		ReadySince:  since,
	}
}

// podReady reports the pod's Ready condition and since when it holds.
func podReady(p *corev1.Pod) (bool, time.Time) {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false, time.Time{}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// untilAvailable is how long a ready pod still has to wait for minReadySeconds.
func untilAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	ready, since := podReady(p)
	if !ready || minReadySeconds == 0 {
		return 0
	}
	if wait := since.Add(time.Duration(minReadySeconds) * time.Second).Sub(now); wait > 0 {
		return wait + 100*time.Millisecond
	}
	return 0
}

// metav1IsControlledBy reports whether pod's controller is pclq.
func metav1IsControlledBy(pod *corev1.Pod, pclq *v1alpha1.PodClique) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == pclq.UID
}
