// Package workqueue holds the controller settings every Lockstep manager
// starts from: the operator's, the hub's and the test environments'.
package workqueue

import (
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
)

// Controller is the controller configuration of a Lockstep manager: the
// plain rate-limited work queue, not controller-runtime's priority queue.
// The priority queue of controller-runtime v0.24 can deadlock when its
// manager stops: it hands a ready item to a worker under its lock, and a
// worker that already left on the shutdown never takes it, so the queue's
// lock is held for good and the manager's stop runs out its grace period
// (seen in the hub's envtests, about once in four runs of the package on a
// loaded machine). The plain queue stops cleanly. Controller-runtime fixed
// this in v0.25, which needs Kubernetes 0.37 libraries; revisit with that
// upgrade.
func Controller() ctrlconfig.Controller {
	return ctrlconfig.Controller{UsePriorityQueue: ptr.To(false)}
}
