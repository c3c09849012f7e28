package podclique

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/expectations"
	"github.com/lockstep-dev/lockstep/internal/controller/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// observation is what the planner needs to know about a PodClique's pods.
type observation struct {
	units []rollout.Unit
	// pods by index, for deletes (the live pod at an index; terminating ones too).
	pods map[int32]*corev1.Pod
	// names are the names of every pod, terminating ones included; terminating
	// the UIDs of the terminating pods of each index.
	names       map[string]bool
	terminating map[int32][]string
	// nextAvailableIn is when the next ready pod passes minReadySeconds (0: none).
	nextAvailableIn time.Duration
}

// observe turns pods into planner units, with the writes the cache has not shown
// yet applied: created pods count as existing and not ready, deleted ones as
// terminating.
func (r *Reconciler) observe(pclq *v1alpha1.PodClique, owned []corev1.Pod, now time.Time) observation {
	obs := observation{pods: map[int32]*corev1.Pod{}, names: map[string]bool{}, terminating: map[int32][]string{}}
	seen := make([]expectations.Observed, 0, len(owned))
	for i := range owned {
		p := &owned[i]
		seen = append(seen, expectations.Observed{Name: p.Name, UID: p.UID, Terminating: p.DeletionTimestamp != nil})
	}
	unseenCreates, unseenDeletes := r.Expectations.Reconcile(client.ObjectKeyFromObject(pclq), seen)
	for i := range owned {
		p := &owned[i]
		u, ok := pods.Unit(p, pclq.Spec.MinReadySeconds, now)
		if !ok {
			continue
		}
		if unseenDeletes[p.UID] {
			u.Terminating = true
		}
		obs.nextAvailableIn = pods.Sooner(obs.nextAvailableIn, pods.UntilAvailable(p, pclq.Spec.MinReadySeconds, now))
		obs.units = append(obs.units, u)
		obs.names[p.Name] = true
		if p.DeletionTimestamp != nil {
			obs.terminating[u.Index] = append(obs.terminating[u.Index], string(p.UID))
		}
		if prev, ok := obs.pods[u.Index]; !ok || prev.DeletionTimestamp != nil {
			obs.pods[u.Index] = p
		}
	}
	obs.units = append(obs.units, unseenCreates...)
	return obs
}
