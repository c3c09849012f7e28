// Package expectations remembers the writes a controller made that its cache has
// not shown yet, so that a reconcile running on a stale cache neither creates a
// unit twice nor counts a unit it already deleted as still available.
package expectations

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/lockstep-dev/lockstep/internal/controlloop/requeue"
)

// Timeout bounds how long a write is waited for; a watch event lost for longer
// than this is covered by the next full relist.
const Timeout = 2 * time.Minute

// Store holds the pending writes of every object a controller owns, keyed by the
// owner. It is safe for concurrent use.
type Store[U any] struct {
	mu      sync.Mutex
	now     func() time.Time
	pending map[types.NamespacedName]*owned[U]
}

type owned[U any] struct {
	creates map[string]pendingCreate[U] // by object name
	deletes map[types.UID]time.Time
}

type pendingCreate[U any] struct {
	unit U
	at   time.Time
}

// New returns an empty store; now is the clock (time.Now in production).
func New[U any](now func() time.Time) *Store[U] {
	return &Store[U]{now: now, pending: map[types.NamespacedName]*owned[U]{}}
}

func (s *Store[U]) of(owner types.NamespacedName) *owned[U] {
	o := s.pending[owner]
	if o == nil {
		o = &owned[U]{creates: map[string]pendingCreate[U]{}, deletes: map[types.UID]time.Time{}}
		s.pending[owner] = o
	}
	return o
}

// Created records that the owner created the named object, described by unit.
func (s *Store[U]) Created(owner types.NamespacedName, name string, unit U) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of(owner).creates[name] = pendingCreate[U]{unit: unit, at: s.now()}
}

// Deleted records that the owner deleted the object with the given UID.
func (s *Store[U]) Deleted(owner types.NamespacedName, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.of(owner).deletes[uid] = s.now()
}

// Observed is what the cache shows of one owned object.
type Observed struct {
	Name        string
	UID         types.UID
	Terminating bool
}

// Reconcile drops the writes the cache now shows and returns what is still
// pending: units created but not yet seen, and UIDs deleted but still seen alive.
// The controller plans as if those writes were visible.
func (s *Store[U]) Reconcile(owner types.NamespacedName, seen []Observed) (unseenCreates []U, unseenDeletes map[types.UID]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.pending[owner]
	if o == nil {
		return nil, nil
	}
	now := s.now()
	byName := make(map[string]Observed, len(seen))
	byUID := make(map[types.UID]Observed, len(seen))
	for _, obj := range seen {
		byName[obj.Name] = obj
		byUID[obj.UID] = obj
	}
	for name, c := range o.creates {
		if _, ok := byName[name]; ok || now.Sub(c.at) > Timeout {
			delete(o.creates, name)
			continue
		}
		unseenCreates = append(unseenCreates, c.unit)
	}
	for uid, at := range o.deletes {
		obj, ok := byUID[uid]
		if !ok || obj.Terminating || now.Sub(at) > Timeout {
			delete(o.deletes, uid)
			continue
		}
		if unseenDeletes == nil {
			unseenDeletes = map[types.UID]bool{}
		}
		unseenDeletes[uid] = true
	}
	if len(o.creates) == 0 && len(o.deletes) == 0 {
		delete(s.pending, owner)
	}
	return unseenCreates, unseenDeletes
}

// Forget drops everything pending for an owner (when it is deleted).
func (s *Store[U]) Forget(owner types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, owner)
}

// Observe drops the pending create of the named object: the informer delivered
// it. The cache may never show it if it was deleted again at once, so waiting to
// see it there could hold its index for the whole Timeout.
func (s *Store[U]) Observe(owner types.NamespacedName, name string, uid types.UID, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.pending[owner]
	if o == nil {
		return
	}
	delete(o.creates, name)
	if gone {
		delete(o.deletes, uid)
	}
	if len(o.creates) == 0 && len(o.deletes) == 0 {
		delete(s.pending, owner)
	}
}

// EnqueueController returns the event handler for owned objects: it enqueues
// the object's controller of the given kind, as handler.EnqueueRequestForOwner
// does, and first tells the store what the informer delivered.
func (s *Store[U]) EnqueueController(owner schema.GroupKind) handler.EventHandler {
	ownerOf := func(o client.Object) (types.NamespacedName, bool) {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != owner.Kind {
			return types.NamespacedName{}, false
		}
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != owner.Group {
			return types.NamespacedName{}, false
		}
		return types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, true
	}
	enqueue := func(o client.Object, gone bool, observe bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		key, ok := ownerOf(o)
		if !ok {
			return
		}
		if observe {
			s.Observe(key, o.GetName(), o.GetUID(), gone)
		}
		q.Add(reconcile.Request{NamespacedName: key})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, false, true, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectOld, false, false, q)
			enqueue(e.ObjectNew, false, false, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, true, true, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, false, false, q)
		},
	}
}

// Reconciler reconciles the owners a controller keeps expectations for: it
// reads the owner a request names and, unless it is gone (what was expected of
// it is then forgotten) or being deleted, hands it to fn. A write conflict
// becomes a quiet requeue (requeue.OnConflict).
func Reconciler[U, T any, P interface {
	*T
	client.Object
}](c client.Reader, s *Store[U], fn func(context.Context, P) (reconcile.Result, error)) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		obj := P(new(T))
		if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
			if apierrors.IsNotFound(err) {
				s.Forget(req.NamespacedName)
			}
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if !obj.GetDeletionTimestamp().IsZero() {
			return reconcile.Result{}, nil
		}
		return requeue.OnConflict(fn(ctx, obj))
	})
}
