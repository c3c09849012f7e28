// Package members keeps the hub's connections to its member clusters: one
// controller-runtime cluster.Cluster per MemberCluster, started when the member
// first turns Ready and stopped when the MemberCluster goes away or its
// kubeconfig changes. Controllers that act in members read them from here.
package members

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Clusters gives the running connection to a member by MemberCluster name.
type Clusters interface {
	// Get returns the member's cluster, and false when the hub holds no
	// connection to it (never Ready yet, deleted, or its kubeconfig changed
	// and it was not Ready since).
	Get(name string) (cluster.Cluster, bool)
}

// Registry is the set of running member connections. It is a manager Runnable:
// when the manager stops, every member connection stops with it.
type Registry struct {
	scheme *runtime.Scheme
	log    logr.Logger

	mu      sync.Mutex
	members map[string]*member
}

type member struct {
	cluster cluster.Cluster
	// identity is what the connection was made from (the kubeconfig's digest);
	// a different identity replaces the connection.
	identity string
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewRegistry returns an empty registry whose member clusters use scheme.
func NewRegistry(scheme *runtime.Scheme, log logr.Logger) *Registry {
	return &Registry{scheme: scheme, log: log, members: map[string]*member{}}
}

var _ Clusters = (*Registry)(nil)

// Get implements Clusters.
func (r *Registry) Get(name string) (cluster.Cluster, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return nil, false
	}
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
// same identity runs already; a connection of another identity is stopped first.
func (r *Registry) Ensure(name, identity string, cfg *rest.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.members[name]; ok {
		if m.identity == identity {
			return nil
		}
		r.stopLocked(name)
	}
	c, err := cluster.New(rest.CopyConfig(cfg), func(o *cluster.Options) {
		o.Scheme = r.scheme
		o.Logger = r.log.WithValues("member", name)
	})
	if err != nil {
		return fmt.Errorf("connecting to member %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{cluster: c, identity: identity, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if err := c.Start(ctx); err != nil {
			r.log.Error(err, "member connection stopped", "member", name)
		}
	}()
	r.members[name] = m
	r.log.Info("connected to member", "member", name)
	return nil
}

// Remove stops the member's connection, if any, and waits for it to end.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked(name)
}

func (r *Registry) stopLocked(name string) {
	m, ok := r.members[name]
	if !ok {
		return
	}
	delete(r.members, name)
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
// stops every member connection.
func (r *Registry) Start(ctx context.Context) error {
	<-ctx.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.members {
		r.stopLocked(name)
	}
	return nil
}

// NeedLeaderElection is true: only the leader's controllers use members.
func (r *Registry) NeedLeaderElection() bool { return true }
