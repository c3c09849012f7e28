// Package gang places the pods of a PodCliqueSet in gangs: groups the scheduler
// binds all at once or not at all. A Backend hides which scheduler does it:
// `native` uses Kubernetes' own scheduling.k8s.io/v1alpha2 PodGroups, `none`
// schedules pods one by one. The layout (which gangs a replica has, and their
// minimums) is computed here too, so that every controller agrees on it. See
// docs/gangs.md.
package gang

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Backend names accepted by Select, and returned by Backend.Name.
const (
	// NameNative schedules gangs with scheduling.k8s.io/v1alpha2 PodGroups.
	NameNative = "native"
	// NameNone turns gang scheduling off: no objects, every gang is "scheduled".
	NameNone = "none"
	// ModeAuto lets Select pick native when the API server serves PodGroups.
	ModeAuto = "auto"
)

// Backend creates gangs and reports whether the scheduler has placed them.
// Implementations are safe for concurrent use.
type Backend interface {
	// Name is the backend's name, as given to --gang-backend.
	Name() string

	// SyncGangs makes the gangs controlled by owner exactly gangs, in the owner's
	// namespace: missing ones are created, ones no longer listed are deleted, and
	// each is controlled by owner so that deleting owner deletes its gangs. It is
	// idempotent: a call that changes nothing writes nothing.
	SyncGangs(ctx context.Context, owner client.Object, gangs []Gang) error

	// GangStatus says whether the gang exists, whether the scheduler has placed
	// it, and if not, why, in words a user can act on.
	GangStatus(ctx context.Context, key client.ObjectKey) (Status, error)

	// PlacesGangs is false for a backend that makes no gang objects: pods then
	// join nothing (their PodCliques name no gang) and are scheduled one by one.
	PlacesGangs() bool
}

// Gang is one gang as its owner wants it.
type Gang struct {
	// Name of the gang; pods join it by this name (naming.BaseGang, naming.ScaledGang).
	Name string
	// MinCount is how many pods must fit at the same time before any of them is
	// bound: the sum of minAvailable over the gang's PodCliques. At least 1.
	MinCount int32
	// Labels go on the gang's object. When they hold lockstep.dev/podcliqueset,
	// GangStatus looks for the gang's pods among that PodCliqueSet's pods only.
	Labels map[string]string
}

// Status is what a Backend knows about one gang.
type Status struct {
	// Exists: the gang's object exists and is not being deleted, so pods may join
	// it. Create a gang's pods only while it exists: a pod that joins a gang being
	// deleted keeps the old object, and its old minimum, alive.
	Exists bool
	// Scheduled: at least MinCount of the gang's pods (not terminating) are bound
	// to nodes.
	Scheduled bool
	// MinCount is the minimum the gang's object was created with. It can lag
	// behind Gang.MinCount: see Native.SyncGangs.
	MinCount int32
	// ScheduledPods counts the gang's pods bound to nodes, terminating ones aside.
	ScheduledPods int32
	// Reason is a CamelCase word for a condition's reason: one of the API's
	// v1alpha1.ReasonGang* (the Reason constants below), or the scheduler's own
	// reason (for example SchedulerError).
	Reason string
	// Message explains Reason; for an unschedulable gang it is the scheduler's
	// explanation ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu. ...").
	Message string
}

// Reasons of Status: the API's reasons of GangScheduled (v1alpha1.ReasonGang*),
// as the string Status.Reason holds beside the scheduler's own reasons.
const (
	ReasonScheduled         = string(v1alpha1.ReasonGangScheduled)
	ReasonUnschedulable     = string(v1alpha1.ReasonGangUnschedulable)
	ReasonSchedulingGated   = string(v1alpha1.ReasonGangSchedulingGated)
	ReasonWaitingForPods    = string(v1alpha1.ReasonGangWaitingForPods)
	ReasonPending           = string(v1alpha1.ReasonGangPending)
	ReasonGangNotFound      = string(v1alpha1.ReasonGangNotFound)
	ReasonGangDeleting      = string(v1alpha1.ReasonGangDeleting)
	ReasonGangSchedulingOff = string(v1alpha1.ReasonGangSchedulingOff)
)

// Options configure the backends that talk to the API server.
type Options struct {
	// Client reads and writes gang objects and reads pods. In the operator it is
	// the manager's (cached) client.
	Client client.Client
	// APIReader reads pods uncached where a stale read is unsafe: before a gang's
	// object is deleted to change its minimum. Defaults to Client.
	APIReader client.Reader
	// IndexedPods says Client's cache indexes pods by pods.IndexPodCliqueSet
	// (pods.AddIndexes): GangStatus then lists a PodCliqueSet's pods through
	// the index rather than by label.
	IndexedPods bool
}

func (o Options) withDefaults() Options {
	if o.APIReader == nil {
		o.APIReader = o.Client
	}
	return o
}
