// Package deploysim plays a Kubernetes Deployment in memory: the Deployment
// controller, the ReplicaSet controller under it, and their pods, by the
// rules of kube-controller-manager (pkg/controller/deployment and
// pkg/controller/replicaset, v1.36), without a clock or a client. The fleet
// planner's tests (align.SimMember) and the offline fleet simulator
// (fleetsim.Member, `lockstep plan`) both play Deployment members with it, so
// what a Deployment member does is decided in one place.
//
// What it keeps of the real controllers, which Lockstep's own planner
// (internal/rollout) does differently:
//   - ReplicaSets: one per pod template, each with its own spec.replicas and
//     pods; the newest template's ReplicaSet only grows and the others only
//     shrink, and a ReplicaSet's pods follow its replicas only when the
//     ReplicaSet controller runs (Sync, then SyncReplicaSets).
//   - maxSurge bounds the sum of the ReplicaSets' replicas, not the pods:
//     pods the ReplicaSet controller has not deleted yet and terminating pods
//     are above it.
//   - maxUnavailable is counted from the ReplicaSets' reported available pods,
//     whatever the pods are now.
//   - A change of replicas mid-rollout, and any sync of a paused Deployment,
//     scales every ReplicaSet in proportion; a paused Deployment with no
//     ReplicaSet of any template creates none.
//   - The Deployment's status is summed from the ReplicaSets' statuses, which
//     the ReplicaSet controller writes from the pods it saw before it acted:
//     each trails the one below it, with observedGeneration current.
//
// The caller decides when each controller runs and when time passes
// (StartPods, RemoveTerminating), so a test controls every lag.
package deploysim

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/limit"
)

// Spec is what a Deployment's controller reads of its spec.
type Spec struct {
	Replicas int32
	// Template names the pod template; a ReplicaSet belongs to it when it
	// was made from the same one.
	Template string
	Paused   bool
	// MaxUnavailable and MaxSurge are spec.strategy.rollingUpdate's (the
	// strategy is always RollingUpdate).
	MaxUnavailable, MaxSurge intstr.IntOrString
}

// maxSurge is how many pods the ReplicaSets' replicas may sum to above
// replicas: a percentage rounds up.
func (s Spec) maxSurge() int32 {
	surge, _ := s.fenceposts()
	return surge
}

// maxUnavailable is how many of replicas may be unavailable: a percentage
// rounds down, never more than replicas, and 1 when both limits come to 0.
func (s Spec) maxUnavailable() int32 {
	if s.Replicas == 0 {
		return 0
	}
	_, unavailable := s.fenceposts()
	return min(unavailable, s.Replicas)
}

// minAvailable is the fewest available pods a rollout step may leave.
func (s Spec) minAvailable() int32 {
	return s.Replicas - s.maxUnavailable()
}

// fenceposts resolves both limits together, as the real controller does: a
// malformed value (which admission rejects) counts as 0.
func (s Spec) fenceposts() (surge, unavailable int32) {
	surge, _ = limit.Resolve(s.MaxSurge, s.Replicas, limit.Up)
	unavailable, _ = limit.Resolve(s.MaxUnavailable, s.Replicas, limit.Down)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

// Pods are a ReplicaSet's pods, by state. They have no other identity: the
// ReplicaSet controller deletes starting pods before available ones, and
// nothing else tells them apart.
type Pods struct {
	// Starting pods exist and are not available yet; Available ones are.
	// Both are active: the ReplicaSet counts them as its replicas.
	Starting, Available int32
	// Terminating pods are deleted and still running: no ReplicaSet counts
	// them as replicas.
	Terminating int32
}

// Active is how many pods are not terminating.
func (p Pods) Active() int32 { return p.Starting + p.Available }

// ReplicaSet is one of a Deployment's ReplicaSets.
type ReplicaSet struct {
	// Template is the pod template it makes pods from.
	Template string
	// Revision is its deployment.kubernetes.io/revision annotation.
	Revision int64
	// Replicas is its spec.replicas; each change is a new Generation.
	Replicas   int32
	Generation int64
	// DesiredReplicas and MaxReplicas are its desired-replicas and
	// max-replicas annotations: the Deployment's replicas and replicas +
	// maxSurge when the Deployment controller last scaled it.
	DesiredReplicas, MaxReplicas int32
	Pods                         Pods
	Status                       ReplicaSetStatus
	// created orders the ReplicaSets by creation, as their creation
	// timestamps do.
	created int
}

// ReplicaSetStatus is what the ReplicaSet controller last wrote.
type ReplicaSetStatus struct {
	ObservedGeneration                       int64
	Replicas, AvailableReplicas, Terminating int32
}

// Status is what the Deployment controller last wrote of the Deployment.
type Status struct {
	ObservedGeneration int64
	// Replicas, Available and Terminating sum the ReplicaSets' statuses;
	// Updated is the new ReplicaSet's replicas (its status).
	Replicas, Updated, Available, Terminating int32
}

// Deployment is a Deployment with its ReplicaSets and their pods.
type Deployment struct {
	// Spec is the spec as the controller sees it; SetSpec changes it.
	Spec       Spec
	Generation int64
	// Revision is the Deployment's deployment.kubernetes.io/revision
	// annotation: its new ReplicaSet's, once the controller synced it.
	Revision int64
	Status   Status
	// ReplicaSets, oldest first.
	ReplicaSets []*ReplicaSet
	created     int
}

// New is a Deployment just created with spec: no ReplicaSet, nothing synced.
func New(spec Spec) *Deployment {
	return &Deployment{Spec: spec, Generation: 1}
}

// AtRest is a Deployment that has run spec for a while, as if created
// unpaused: one ReplicaSet of its template with every pod available, every
// status current.
func AtRest(spec Spec) *Deployment {
	d := New(spec)
	rs := d.addReplicaSet(spec.Template, 1, spec.Replicas)
	rs.Pods.Available = spec.Replicas
	rs.Status = ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: spec.Replicas, AvailableReplicas: spec.Replicas}
	d.Revision = 1
	d.writeStatus(rs)
	return d
}

// SetSpec is a write of the spec reaching the controller: a change is a new
// generation.
func (d *Deployment) SetSpec(s Spec) {
	if s != d.Spec {
		d.Spec = s
		d.Generation++
	}
}

// Pods sums the pods of every ReplicaSet.
func (d *Deployment) Pods() Pods {
	var p Pods
	for _, rs := range d.ReplicaSets {
		p.Starting += rs.Pods.Starting
		p.Available += rs.Pods.Available
		p.Terminating += rs.Pods.Terminating
	}
	return p
}

// Of is the ReplicaSet of template, nil when there is none (the oldest, as
// the real controller picks when there are two).
func (d *Deployment) Of(template string) *ReplicaSet {
	for _, rs := range d.ReplicaSets {
		if rs.Template == template {
			return rs
		}
	}
	return nil
}

// Counted is the pods as a watcher outside the controllers bounds them (the
// e2e tests' fleetwatch does): pods not terminating, each ReplicaSet's
// counted up to its replicas (those above are about to be deleted; maxSurge
// bounds the replicas, not them), and available ones all. Updated counts,
// alike, those of template.
func (d *Deployment) Counted(template string) (pods, available, updated int32) {
	for _, rs := range d.ReplicaSets {
		n := min(rs.Pods.Active(), rs.Replicas)
		pods += n
		available += rs.Pods.Available
		if rs.Template == template {
			updated += n
		}
	}
	return pods, available, updated
}

// StartPods lets time pass for starting pods: they become available.
func (d *Deployment) StartPods() {
	for _, rs := range d.ReplicaSets {
		rs.Pods.Available += rs.Pods.Starting
		rs.Pods.Starting = 0
	}
}

// RemoveTerminating lets time pass for terminating pods: they are gone.
func (d *Deployment) RemoveTerminating() {
	for _, rs := range d.ReplicaSets {
		rs.Pods.Terminating = 0
	}
}

// TerminateAll is the garbage collector after the Deployment was deleted:
// every pod terminates.
func (d *Deployment) TerminateAll() {
	for _, rs := range d.ReplicaSets {
		rs.Pods.Terminating += rs.Pods.Active()
		rs.Pods.Starting, rs.Pods.Available = 0, 0
	}
}

// String draws the Deployment for failure messages: each ReplicaSet as
// template:replicas with its pods (starting+available, terminating).
func (d *Deployment) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replicas %d %s", d.Spec.Replicas, d.Spec.Template)
	if d.Spec.Paused {
		b.WriteString(" paused")
	}
	fmt.Fprintf(&b, " mu %s ms %s gen %d/%d", d.Spec.MaxUnavailable.String(), d.Spec.MaxSurge.String(), d.Status.ObservedGeneration, d.Generation)
	for _, rs := range d.ReplicaSets {
		fmt.Fprintf(&b, " [%s:%d pods %d+%d", rs.Template, rs.Replicas, rs.Pods.Starting, rs.Pods.Available)
		if rs.Pods.Terminating > 0 {
			fmt.Fprintf(&b, " -%d", rs.Pods.Terminating)
		}
		fmt.Fprintf(&b, " status %d/%d]", rs.Status.AvailableReplicas, rs.Status.Replicas)
	}
	return b.String()
}

func (d *Deployment) addReplicaSet(template string, revision int64, replicas int32) *ReplicaSet {
	d.created++
	rs := &ReplicaSet{Template: template, Revision: revision, Replicas: replicas, Generation: 1, created: d.created,
		DesiredReplicas: d.Spec.Replicas, MaxReplicas: d.Spec.Replicas + d.Spec.maxSurge()}
	d.ReplicaSets = append(d.ReplicaSets, rs)
	return rs
}
