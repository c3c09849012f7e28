package expectations

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var owner = types.NamespacedName{Namespace: "ns", Name: "pclq"}

func TestStore_UnseenCreateStaysPendingUntilTheCacheShowsIt(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	s := New[int32](c.now)
	s.Created(owner, "pclq-3", 3)
	if got, _ := s.Reconcile(owner, nil); len(got) != 1 || got[0] != 3 {
		t.Fatalf("pending creates = %v, want [3]", got)
	}
	if got, _ := s.Reconcile(owner, []Observed{{Name: "pclq-3", UID: "u3"}}); len(got) != 0 {
		t.Fatalf("pending creates after observation = %v, want none", got)
	}
	if got, _ := s.Reconcile(owner, nil); len(got) != 0 {
		t.Fatalf("an observed create came back: %v", got)
	}
}

func TestStore_DeletedUnitCountsAsGoneUntilTheCacheShowsItTerminating(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	s := New[int32](c.now)
	s.Deleted(owner, "u0")
	alive := []Observed{{Name: "pclq-0", UID: "u0"}}
	if _, del := s.Reconcile(owner, alive); !del["u0"] {
		t.Fatal("a deleted pod still shown alive must be reported as pending")
	}
	if _, del := s.Reconcile(owner, []Observed{{Name: "pclq-0", UID: "u0", Terminating: true}}); del["u0"] {
		t.Fatal("a pod shown terminating is no longer pending")
	}
	if _, del := s.Reconcile(owner, alive); del["u0"] {
		t.Fatal("an expectation met once must not come back")
	}
}

func TestStore_ExpectationsExpire(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	s := New[int32](c.now)
	s.Created(owner, "pclq-1", 1)
	s.Deleted(owner, "u2")
	c.t = c.t.Add(Timeout + time.Second)
	creates, deletes := s.Reconcile(owner, []Observed{{Name: "pclq-2", UID: "u2"}})
	if len(creates) != 0 || len(deletes) != 0 {
		t.Fatalf("expired expectations still pending: %v %v", creates, deletes)
	}
}

func TestStore_OwnersAreIndependent(t *testing.T) {
	s := New[int32](time.Now)
	s.Created(owner, "pclq-0", 0)
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	if got, _ := s.Reconcile(other, nil); len(got) != 0 {
		t.Fatalf("other owner sees %v", got)
	}
	s.Forget(owner)
	if got, _ := s.Reconcile(owner, nil); len(got) != 0 {
		t.Fatalf("forgotten owner still has %v", got)
	}
}

// A pod created and deleted again before a reconcile runs never shows in the
// cache; the informer's events still settle its expectation.
func TestEnqueueController_CreateAndDeleteEventsSettleExpectations(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	s := New[int32](c.now)
	s.Created(owner, "pclq-3", 3)
	h := s.EnqueueController(schema.GroupKind{Group: "lockstep.dev", Kind: "PodClique"})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pclq-3", UID: "u3",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "lockstep.dev/v1alpha1", Kind: "PodClique", Name: "pclq", UID: "p", Controller: new(true)}}}}
	stranger := pod.DeepCopy()
	stranger.OwnerReferences[0].APIVersion = "apps/v1"
	h.Create(context.Background(), event.CreateEvent{Object: stranger}, q)
	if q.Len() != 0 {
		t.Fatal("an object controlled by another group's kind was enqueued")
	}
	h.Create(context.Background(), event.CreateEvent{Object: pod}, q)
	h.Delete(context.Background(), event.DeleteEvent{Object: pod}, q)
	if got, _ := s.Reconcile(owner, nil); len(got) != 0 {
		t.Fatalf("pending creates after the informer delivered the pod = %v, want none", got)
	}
	if item, _ := q.Get(); item.NamespacedName != owner {
		t.Fatalf("enqueued %v, want the owner %v", item, owner)
	}
}
