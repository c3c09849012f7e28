package requeue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestOnConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "lockstep.dev", Resource: "podcliques"}, "x", errors.New("stale"))
	res, err := OnConflict(ctrl.Result{}, fmt.Errorf("updating status: %w", conflict))
	if err != nil || res.RequeueAfter != ConflictDelay {
		t.Fatalf("a wrapped conflict: got (%v, %v), want a quiet requeue", res, err)
	}
	other := errors.New("boom")
	if _, err := OnConflict(ctrl.Result{}, other); !errors.Is(err, other) {
		t.Fatalf("another error must pass through, got %v", err)
	}
	res, err = OnConflict(ctrl.Result{RequeueAfter: time.Minute}, nil)
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("success must pass through, got (%v, %v)", res, err)
	}
}
