package monitor

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// relistNotifier wraps an informer's ListerWatcher to say when it lists
// again after its first listing. An informer whose watch cannot resume (the
// apiserver restarted and no longer has the resourceVersion it watched from)
// lists anew without reporting any watch error, and hands over what changed
// meanwhile out of order; the monitor must know to record those events
// without judging them. A list is a List call, or a Watch that asks for the
// initial events (the streaming form of a list).
type relistNotifier struct {
	lw       toolscache.ListerWatcherWithContext
	lists    atomic.Int32
	relisted func()
}

func newRelistNotifier(lw toolscache.ListerWatcher, relisted func()) *relistNotifier {
	return &relistNotifier{lw: toolscache.ToListerWatcherWithContext(lw), relisted: relisted}
}

func (n *relistNotifier) listed() {
	if n.lists.Add(1) > 1 {
		n.relisted()
	}
}

func (n *relistNotifier) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	obj, err := n.lw.ListWithContext(ctx, opts)
	if err == nil {
		n.listed()
	}
	return obj, err
}

func (n *relistNotifier) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := n.lw.WatchWithContext(ctx, opts)
	if err == nil && opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		n.listed()
	}
	return w, err
}

func (n *relistNotifier) List(opts metav1.ListOptions) (runtime.Object, error) {
	return n.ListWithContext(context.Background(), opts)
}

func (n *relistNotifier) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return n.WatchWithContext(context.Background(), opts)
}
