// Package requeue turns a write conflict into a quiet retry. Every write of the
// controllers carries the resourceVersion it read (optimistic locking), so a
// conflict only means the cache was behind: look again shortly, without
// reporting a reconcile error.
package requeue

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ConflictDelay is how long to wait before looking again after a conflict:
// about the time a watch event needs to reach the cache.
const ConflictDelay = 250 * time.Millisecond

// OnConflict returns a plain requeue for a conflict error and (res, err) otherwise.
func OnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	if err != nil && apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: ConflictDelay}, nil
	}
	return res, err
}
