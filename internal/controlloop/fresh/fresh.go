// Package fresh reads an object past the informer cache where acting on a
// stale view would make something that must not exist.
//
// After an apiserver restart the cache can miss, for seconds, that an owner is
// being deleted or is gone. A PodClique whose foreground deletion waits for
// its pods then makes the pod it misses again, from the cache; in the fault
// suite such a pod, created after the garbage collector had begun on its
// owner, kept the owner's deletion (and the group replica's replacement)
// waiting for minutes. One live read before a pass that creates closes that
// window; passes that only delete or write status need none.
package fresh

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// MayCreate reads owner live (OwnerLive) before a pass creates its children,
// what names them for the log; false, logged with the reason, means create
// nothing this pass.
func MayCreate(ctx context.Context, r client.Reader, owner client.Object, what string) (bool, error) {
	live, why, err := OwnerLive(ctx, r, owner)
	if err == nil && !live {
		log.FromContext(ctx).Info("not creating "+what+": the cache is behind", "owner", owner.GetName(), "why", why)
	}
	return live, err
}

// OwnerLive reads obj's current state from r (an uncached reader) and reports
// whether children may still be made for it: it exists with the UID obj has
// and is not being deleted. When it may not, why says so for the log.
func OwnerLive(ctx context.Context, r client.Reader, obj client.Object) (live bool, why string, err error) {
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, "", fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return false, "it is gone", nil
		}
		return false, "", fmt.Errorf("reading %s live: %w", obj.GetName(), err)
	}
	switch {
	case cur.GetUID() != obj.GetUID():
		return false, "it was replaced (UID " + string(cur.GetUID()) + ")", nil
	case cur.GetDeletionTimestamp() != nil:
		return false, "it is being deleted", nil
	}
	return true, "", nil
}

// MayCreateBeside starts MayCreate at once and returns the wait for its
// answer. The read needs nothing from a pass's deletes, so it runs beside
// them, and a rollout step costs one round trip less.
func MayCreateBeside(ctx context.Context, r client.Reader, owner client.Object, what string) (wait func() (bool, error)) {
	type answer struct {
		ok  bool
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ok, err := MayCreate(ctx, r, owner, what)
		done <- answer{ok, err}
	}()
	var got *answer
	return func() (bool, error) {
		if got == nil {
			a := <-done
			got = &a
		}
		return got.ok, got.err
	}
}
