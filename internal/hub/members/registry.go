// Package members keeps the hub's connections to its member clusters: one
// controller-runtime cluster.Cluster per MemberCluster, started when the member
// first turns Ready and stopped when the MemberCluster goes away or its
// kubeconfig changes. Controllers that act in members read them from here.
//
// The registry's lock guards only its map: a connection is made, started and
// stopped outside it, so a member that is slow to stop (or to answer the
// watches set up at its first use) never holds Get of the others.
package members

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Clusters gives the running connection to a member by MemberCluster name.
type Clusters interface {
	// Get returns the member's cluster for objects of kind, and false when
	// the hub holds no connection to it (never Ready yet, deleted, or its
	// kubeconfig changed and it was not Ready since).
	Get(name string, kind schema.GroupVersionKind) (cluster.Cluster, bool)
}

// Watcher is told of every member connection the registry makes: a
// controller that watches member objects registers one (AddWatcher) before
// the manager starts.
type Watcher interface {
	// Configure adjusts the options of the connection to member before it is
	// made (its cache: what it watches and keeps).
	Configure(member string, o *cluster.Options)
	// Watch sets up the watch of kind in a connection the first time a
	// controller uses it for that kind (Get): a member no workload is placed
	// on costs no watch, and one that runs only Deployments watches only
	// Deployments, so a hub with many members watches only what it acts on.
	// It runs outside the registry's lock, on a goroutine of its own; ctx
	// ends when the connection stops. It must not fail the connection: it
	// returns false when it could not watch kind (the member does not serve
	// it yet, say), and is asked again at a use at least RetryWatch later.
	Watch(ctx context.Context, member string, c cluster.Cluster, kind schema.GroupVersionKind) bool
}

// RetryWatch is how long after a failed watch set-up a connection's next use
// for that kind tries it again: a PodCliqueSet CRD installed in a member after
// the hub first wrote there is watched within a minute, and a member that
// does not serve a kind costs one discovery request a minute, not one a round.
const RetryWatch = time.Minute

// Registry is the set of running member connections. It is a manager Runnable:
// when the manager stops, every member connection stops with it.
type Registry struct {
	scheme *runtime.Scheme
	log    logr.Logger
	// newCluster makes a connection: cluster.New, or a test's stand-in.
	newCluster func(*rest.Config, ...cluster.Option) (cluster.Cluster, error)

	// now and retryWatch pace the retries of failed watches (time.Now and
	// RetryWatch; tests shorten them).
	now        func() time.Time
	retryWatch time.Duration

	mu       sync.Mutex
	members  map[string]*member
	watchers []Watcher
	// stopped is set when the manager stops: a connection made after that
	// would run on with nothing to stop it.
	stopped bool
}

type member struct {
	cluster cluster.Cluster
	// identity is what the connection was made from (the kubeconfig's digest);
	// a different identity replaces the connection.
	identity string
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	// watchers are told of each kind the connection is used for, at its
	// first use; watched holds those kinds (guarded by the registry's lock).
	watchers []Watcher
	watched  map[schema.GroupVersionKind]*kindWatch
}

// kindWatch is the set-up of one kind's watches in one connection: under way
// or done (no failure), or failed at a time for the watchers in todo.
type kindWatch struct {
	failed time.Time
	todo   []Watcher
}

// watch starts the watchers of m for kind on a goroutine of their own: once,
// and again for those that failed, at a use at least retryWatch after. Call it
// with the registry's lock held.
func (r *Registry) watch(name string, m *member, kind schema.GroupVersionKind) {
	todo := m.watchers
	if k, tried := m.watched[kind]; tried {
		if k.failed.IsZero() || r.now().Sub(k.failed) < r.retryWatch {
			return
		}
		todo = k.todo
	}
	m.watched[kind] = &kindWatch{}
	go func() {
		var failed []Watcher
		for _, w := range todo {
			if !w.Watch(m.ctx, name, m.cluster, kind) {
				failed = append(failed, w)
			}
		}
		if len(failed) == 0 {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		m.watched[kind] = &kindWatch{failed: r.now(), todo: failed}
	}()
}

// NewRegistry returns an empty registry whose member clusters use scheme.
func NewRegistry(scheme *runtime.Scheme, log logr.Logger) *Registry {
	return &Registry{scheme: scheme, log: log, newCluster: cluster.New, now: time.Now, retryWatch: RetryWatch, members: map[string]*member{}}
}

var _ Clusters = (*Registry)(nil)

// AddWatcher makes w told of every connection made from now on.
func (r *Registry) AddWatcher(w Watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers = append(r.watchers, w)
}

// Get implements Clusters.
func (r *Registry) Get(name string, kind schema.GroupVersionKind) (cluster.Cluster, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return nil, false
	}
	r.watch(name, m, kind)
	return m.cluster, true
}

// Identity is the identity of the member's running connection, "" when none.
func (r *Registry) Identity(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.members[name]; ok {
		return m.identity
	}
	return ""
}

// Ensure starts a connection to the member from cfg unless one made from the
// same identity runs already; a connection of another identity is stopped
// first (outside the lock).
func (r *Registry) Ensure(name, identity string, cfg *rest.Config) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return errStopped
	}
	old, ok := r.members[name]
	if ok && old.identity == identity {
		r.mu.Unlock()
		return nil
	}
	if ok {
		delete(r.members, name)
	}
	watchers := append([]Watcher(nil), r.watchers...)
	r.mu.Unlock()
	if old != nil {
		r.stop(name, old)
	}

	c, err := r.newCluster(rest.CopyConfig(cfg), func(o *cluster.Options) {
		o.Scheme = r.scheme
		o.Logger = r.log.WithValues("member", name)
		o.MapperProvider = newGroupVersionMapper
		for _, w := range watchers {
			w.Configure(name, o)
		}
	})
	if err != nil {
		return fmt.Errorf("connecting to member %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{cluster: c, identity: identity, ctx: ctx, cancel: cancel, done: make(chan struct{}), watchers: watchers,
		watched: map[schema.GroupVersionKind]*kindWatch{}}

	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		cancel()
		return errStopped
	}
	if other, raced := r.members[name]; raced {
		// Another Ensure of the same member won meanwhile: keep its connection
		// when it is of this identity, else replace it.
		if other.identity == identity {
			r.mu.Unlock()
			cancel()
			return nil
		}
		delete(r.members, name)
		defer r.stop(name, other)
	}
	r.members[name] = m
	r.mu.Unlock()

	go func() {
		defer close(m.done)
		if err := c.Start(ctx); err != nil {
			r.log.Error(err, "member connection stopped", "member", name)
		}
	}()
	r.log.Info("connected to member", "member", name)
	return nil
}

// errStopped is Ensure's answer once the registry has stopped.
var errStopped = errors.New("the hub is stopping: no new member connections")

// Remove stops the member's connection, if any, and waits for it to end;
// other members stay readable meanwhile.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	m, ok := r.members[name]
	if ok {
		delete(r.members, name)
	}
	r.mu.Unlock()
	if ok {
		r.stop(name, m)
	}
}

// stop ends a connection already taken out of the map. Never call it with
// mu held.
func (r *Registry) stop(name string, m *member) {
	m.cancel()
	<-m.done
	r.log.Info("disconnected from member", "member", name)
}

// Names are the members with a running connection.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.members))
	for n := range r.members {
		out = append(out, n)
	}
	return out
}

// Start implements manager.Runnable: it waits for the manager to stop, then
// stops every member connection, all at once, and makes no more (a probe
// still running then would otherwise leave a connection behind).
func (r *Registry) Start(ctx context.Context) error {
	<-ctx.Done()
	r.mu.Lock()
	all := r.members
	r.members = map[string]*member{}
	r.stopped = true
	r.mu.Unlock()
	var wg sync.WaitGroup
	for name, m := range all {
		wg.Go(func() { r.stop(name, m) })
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection is true: only the leader's controllers use members.
func (r *Registry) NeedLeaderElection() bool { return true }
