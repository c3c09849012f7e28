package workqueue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A controller built from Controller keeps taking items and stops when its
// context ends, however busy its queue: items keep arriving, eight workers
// take them, and the stop comes while they do. With controller-runtime
// v0.24's priority queue (UsePriorityQueue true) this test fails in its
// first round: the workers stall with items queued, or the stop hangs.
func TestController_StopsWhileItsQueueIsBusy(t *testing.T) {
	for round := range 40 {
		cfg := Controller()
		skip := true
		// busy is closed once the workers have taken 200 items.
		busy, taken := make(chan struct{}), atomic.Int32{}
		c, err := controller.NewTypedUnmanaged(fmt.Sprintf("busy-%d", round), controller.Options{
			Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				if taken.Add(1) == 200 {
					close(busy)
				}
				return reconcile.Result{}, nil
			}),
			MaxConcurrentReconciles: 8,
			UsePriorityQueue:        cfg.UsePriorityQueue,
			SkipNameValidation:      &skip,
			Logger:                  logr.Discard(),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		feed := source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			go func() {
				for i := 0; ctx.Err() == nil; i++ {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprint(i % 64)}})
				}
			}()
			return nil
		})
		if err := c.Watch(feed); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		select {
		case <-busy:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the workers took %d items in 30 s", round, taken.Load())
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the controller has not stopped 30 s after its context ended", round)
		}
	}
}
