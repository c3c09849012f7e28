package expectations

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
