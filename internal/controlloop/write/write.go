// Package write applies what a controller decided: one create-or-patch for the
// objects Lockstep owns and one status patch, both with optimistic locking and
// both silent when nothing changed (a settled cluster gets no writes).
package write

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Object is a pointer to a Kubernetes object type.
type Object[T any] interface {
	*T
	client.Object
}

// CreateOrPatch creates desired when current is nil (an object that already
// exists is left for the next pass, whose cache shows it). Otherwise it lets
// merge carry desired into current and patches what changed.
func CreateOrPatch[T any, P Object[T]](ctx context.Context, c client.Client, current, desired P, merge func(current, desired P)) error {
	if current == nil {
		if err := c.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", kind[T](), desired.GetName(), err)
		}
		log.FromContext(ctx).Info("created", "kind", kind[T](), "name", desired.GetName())
		return nil
	}
	before := current.DeepCopyObject().(P)
	merge(current, desired)
	if apiequality.Semantic.DeepEqual(before, current) {
		return nil
	}
	if err := c.Patch(ctx, current, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating %s %s: %w", kind[T](), current.GetName(), err)
	}
	log.FromContext(ctx).Info("updated", "kind", kind[T](), "name", current.GetName())
	return nil
}

// Status lets set write obj's new status and patches it when it changed.
func Status[T any, P Object[T]](ctx context.Context, c client.Client, obj P, set func(P)) error {
	return patchStatus(ctx, c, obj, set, false)
}

// StatusFirst writes obj's new status as Status does, and also when it did
// not change: for a status that is a controller's memory of what it is about
// to send elsewhere, written before it is sent. The patch carries obj's
// resourceVersion either way, so it fails with a conflict when obj is older
// than the object now (a cache that has not yet seen the controller's own
// last write), and the caller sends nothing it decided from that stale view.
// Unchanged, the patch is a no-op for the apiserver: no write, no new
// resourceVersion.
func StatusFirst[T any, P Object[T]](ctx context.Context, c client.Client, obj P, set func(P)) error {
	return patchStatus(ctx, c, obj, set, true)
}

// patchStatus patches the status set writes, under obj's resourceVersion,
// when it changed or always.
func patchStatus[T any, P Object[T]](ctx context.Context, c client.Client, obj P, set func(P), always bool) error {
	before := obj.DeepCopyObject().(P)
	set(obj)
	changed := !apiequality.Semantic.DeepEqual(before, obj)
	if !changed && !always {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating status of %s %s: %w", kind[T](), obj.GetName(), err)
	}
	if changed {
		log.FromContext(ctx).V(1).Info("status updated", "kind", kind[T](), "name", obj.GetName())
	}
	return nil
}

// kind is the Go type name of T, which for API types is the kind.
func kind[T any]() string {
	return reflect.TypeFor[T]().Name()
}

// ChildStatus writes the status rollout.ChildStatus computes for a PodClique or
// a PodCliqueScalingGroup after plan. A change that only moves the units'
// progress (rollout.ChildProgressOnly) waits for batch; it then returns how
// soon to look again.
func ChildStatus[T any, P interface {
	Object[T]
	UnitStatus() *v1alpha1.ChildStatus
}](ctx context.Context, c client.Client, obj P, facts rollout.ChildFacts, ls rollout.LevelStatus, now time.Time, batch *Batch) (time.Duration, error) {
	facts.Name, facts.Generation = obj.GetName(), obj.GetGeneration()
	prev := *obj.UnitStatus()
	next := rollout.ChildStatus(prev, facts, ls, now)
	if apiequality.Semantic.DeepEqual(prev, next) {
		return 0, nil
	}
	key := kind[T]() + "/" + client.ObjectKeyFromObject(obj).String()
	if wait := batch.Wait(key, rollout.ChildProgressOnly(prev, next, facts.Replicas), now); wait > 0 {
		return wait, nil
	}
	if err := Status(ctx, c, obj, func(o P) { *o.UnitStatus() = next }); err != nil {
		return 0, err
	}
	batch.Wrote(key, now)
	return 0, nil
}
