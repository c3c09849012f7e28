package members

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// slowCluster stands in for a member connection that takes long to stop (a
// member whose apiserver hangs its watches): Start returns only once its
// context ended and release is closed.
type slowCluster struct {
	cluster.Cluster
	release chan struct{}
}

func (c *slowCluster) Start(ctx context.Context) error {
	<-ctx.Done()
	<-c.release
	return nil
}

func newTestRegistry(release chan struct{}) *Registry {
	r := NewRegistry(runtime.NewScheme(), logr.Discard())
	r.newCluster = func(_ *rest.Config, opts ...cluster.Option) (cluster.Cluster, error) {
		var o cluster.Options
		for _, opt := range opts {
			opt(&o)
		}
		return &slowCluster{release: release}, nil
	}
	return r
}

// within runs f and reports whether it returned before the deadline.
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Stopping one member's connection must not hold the registry: while the
// slow member stops, the others stay readable and connectable.
func TestRegistry_StoppingAMemberDoesNotBlockTheOthers(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newTestRegistry(release)
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, name := range []string{"slow", "other"} {
		if err := r.Ensure(name, "id", cfg); err != nil {
			t.Fatal(err)
		}
	}

	removed := make(chan struct{})
	go func() { defer close(removed); r.Remove("slow") }()
	// Remove takes the member out of the map first, then waits for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		gone := false
		if !within(10*time.Second, func() { _, ok := r.Get("slow", deployments); gone = !ok }) {
			t.Fatal("Get blocked while a member connection was stopping")
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stopping member is still in the registry")
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
	select {
	case <-removed:
		t.Fatal("Remove returned before the connection stopped")
	default:
	}
	if !within(10*time.Second, func() {
		if _, ok := r.Get("other", deployments); !ok {
			t.Error("the other member is gone")
		}
		_ = r.Names()
		_ = r.Identity("other")
		if err := r.Ensure("third", "id", cfg); err != nil {
			t.Error(err)
		}
	}) {
		t.Fatal("the registry was held while a member connection was stopping")
	}
}

type blockingWatcher struct {
	configured, watched chan string
	release             chan struct{}
}

// toldOf waits for the watcher to be told of want ("<member> <kind>").
func (w *blockingWatcher) toldOf(t *testing.T, want string) {
	t.Helper()
	select {
	case m := <-w.watched:
		if m != want {
			t.Fatalf("watched %q, want %q", m, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the watcher was not told of %s at its first use", want)
	}
}

var (
	deployments  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSets = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
)

func (w *blockingWatcher) Configure(member string, _ *cluster.Options) { w.configured <- member }

func (w *blockingWatcher) Watch(_ context.Context, member string, _ cluster.Cluster, kind schema.GroupVersionKind) bool {
	w.watched <- member + " " + kind.Kind
	<-w.release
	return true
}

// failingWatcher cannot watch a kind until served says it can (a CRD
// installed in the member later); it reports each try.
type failingWatcher struct {
	tried  chan string
	served atomic.Bool
}

func (*failingWatcher) Configure(string, *cluster.Options) {}

func (w *failingWatcher) Watch(_ context.Context, member string, _ cluster.Cluster, kind schema.GroupVersionKind) bool {
	w.tried <- member + " " + kind.Kind
	return w.served.Load()
}

// A kind the watcher could not watch (not served yet) is tried again at a use
// at least retryWatch later, not at every use, and not once it is watched.
func TestRegistry_AFailedWatchIsTriedAgainLater(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newTestRegistry(release)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	r.now = func() time.Time { return *clock.Load() }
	w := &failingWatcher{tried: make(chan string, 8)}
	r.AddWatcher(w)
	if err := r.Ensure("m1", "id", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	use := func() {
		t.Helper()
		if _, ok := r.Get("m1", deployments); !ok {
			t.Fatal("m1 is not in the registry")
		}
	}
	tried := func(want bool) {
		t.Helper()
		// A try runs on a goroutine: wait for it, or long enough to see none.
		wait := 100 * time.Millisecond
		if want {
			wait = 10 * time.Second
		}
		select {
		case m := <-w.tried:
			if !want {
				t.Fatalf("tried %s again too soon", m)
			}
		case <-time.After(wait):
			if want {
				t.Fatal("the failed watch was not tried again")
			}
		}
	}
	use()
	tried(true)
	// The failure is recorded on the try's goroutine; uses before the
	// interval is over do not try again.
	if !eventually(func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.members["m1"].watched[deployments].failed.IsZero()
	}) {
		t.Fatal("the failure was not recorded")
	}
	use()
	use()
	tried(false)
	later := now.Add(RetryWatch)
	clock.Store(&later)
	w.served.Store(true)
	use()
	tried(true)
	later = later.Add(10 * RetryWatch)
	clock.Store(&later)
	use()
	tried(false)
}

// eventually polls cond until it holds, for up to 10 s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// A watcher's set-up of a kind (which asks the member for it) waits for the
// connection's first use for that kind (Get), runs once per kind, and runs
// outside the registry's lock: a Get while it is under way does not block.
func TestRegistry_WatchersStartAtFirstUseOutsideTheLock(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := newTestRegistry(release)
	w := &blockingWatcher{configured: make(chan string, 4), watched: make(chan string, 4), release: make(chan struct{})}
	defer close(w.release)
	r.AddWatcher(w)
	if err := r.Ensure("m1", "id", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-w.configured:
		if m != "m1" {
			t.Fatalf("the watcher configured the connection of %q, want m1", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not configure the connection")
	}
	select {
	case m := <-w.watched:
		t.Fatalf("the watcher was told of %s before anything used it", m)
	default:
	}
	if _, ok := r.Get("m1", deployments); !ok {
		t.Fatal("m1 is not in the registry")
	}
	w.toldOf(t, "m1 Deployment")
	if !within(10*time.Second, func() {
		if _, ok := r.Get("m1", deployments); !ok {
			t.Error("m1 is not in the registry")
		}
	}) {
		t.Fatal("Get blocked while a watcher set up its watches")
	}
	select {
	case m := <-w.watched:
		t.Fatalf("the watcher was told of %s twice", m)
	default:
	}
	// Another kind is watched at its own first use, once.
	for range 2 {
		if _, ok := r.Get("m1", statefulSets); !ok {
			t.Fatal("m1 is not in the registry")
		}
	}
	w.toldOf(t, "m1 StatefulSet")
	select {
	case m := <-w.watched:
		t.Fatalf("the watcher was told of %s twice", m)
	case <-time.After(100 * time.Millisecond):
	}
}

// Once the manager stops, a probe that is still running cannot leave a
// connection behind: Ensure after the registry's Start returned makes none.
func TestRegistry_MakesNoConnectionOnceStopped(t *testing.T) {
	release := make(chan struct{})
	close(release)
	r := newTestRegistry(release)
	var made atomic.Int32
	newCluster := r.newCluster
	r.newCluster = func(cfg *rest.Config, opts ...cluster.Option) (cluster.Cluster, error) {
		made.Add(1)
		return newCluster(cfg, opts...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Ensure("late", "id", &rest.Config{Host: "https://127.0.0.1:1"}); err == nil {
		t.Error("Ensure after the registry stopped returned no error")
	}
	if n := made.Load(); n != 0 || len(r.Names()) != 0 {
		t.Errorf("after the registry stopped, Ensure made %d connections; running: %v", n, r.Names())
	}
}

// A registry that stops while Ensure makes a connection keeps none of it:
// the connection made meanwhile is not added (and never started).
func TestRegistry_KeepsNoConnectionMadeWhileItStopped(t *testing.T) {
	release := make(chan struct{})
	close(release)
	r := newTestRegistry(release)
	newCluster := r.newCluster
	r.newCluster = func(cfg *rest.Config, opts ...cluster.Option) (cluster.Cluster, error) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := r.Start(ctx); err != nil { // the manager stops meanwhile
			t.Error(err)
		}
		return newCluster(cfg, opts...)
	}
	if err := r.Ensure("late", "id", &rest.Config{Host: "https://127.0.0.1:1"}); err == nil {
		t.Error("Ensure across the registry's stop returned no error")
	}
	if names := r.Names(); len(names) != 0 {
		t.Errorf("a connection made while the registry stopped was kept: %v", names)
	}
}
