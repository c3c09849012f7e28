package podclique

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// observation is what the planner needs to know about a PodClique's pods.
type observation struct {
	units []rollout.Unit
	// pods by name (a unit's Key), for deletes; terminating ones too.
	pods map[string]*corev1.Pod
	// uids are the UIDs of the pods of each index, terminating ones included:
	// a new pod there takes a name none of them holds (naming.ReplacementPod).
	uids map[int32][]string
	// live says whether an index has a live pod: a pod created there is a
	// surge pod beside the one it replaces.
	live map[int32]bool
	// nextAvailableIn is when the next ready pod passes minReadySeconds (0: none).
	nextAvailableIn time.Duration
}

// observe turns pods into planner units, with the writes the cache has not shown
// yet applied: created pods count as existing and not ready, deleted ones as
// terminating.
func (r *Reconciler) observe(pclq *v1alpha1.PodClique, owned []corev1.Pod, now time.Time) observation {
	obs := observation{pods: map[string]*corev1.Pod{}, uids: map[int32][]string{}, live: map[int32]bool{}}
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
		obs.pods[p.Name] = p
		obs.uids[u.Index] = append(obs.uids[u.Index], string(p.UID))
		if !u.Terminating {
			obs.live[u.Index] = true
		}
	}
	obs.units = append(obs.units, unseenCreates...)
	return obs
}
