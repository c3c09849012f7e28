package gang

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// None turns gang scheduling off: it makes no objects, pods join nothing and
// are scheduled one by one, and every gang counts as scheduled, so nothing
// waits on a gang (a scaled gang's pods are let go at once).
type None struct{}

var _ Backend = None{}

// Name is "none".
func (None) Name() string { return NameNone }

// SyncGangs does nothing.
func (None) SyncGangs(context.Context, client.Object, []Gang) error { return nil }

// GangStatus reports every gang as existing and scheduled.
func (None) GangStatus(context.Context, client.ObjectKey) (Status, error) {
	return Status{
		Exists:    true,
		Scheduled: true,
		Reason:    ReasonGangSchedulingOff,
		Message:   "gang scheduling is off (gang backend none): pods are scheduled one by one",
	}, nil
}

// PlacesGangs is false.
func (None) PlacesGangs() bool { return false }
