// Package fleetwatch watches a Placement's PlacementDecisions the way a consumer
// does and checks every state it observes: no cluster that must stay placed is
// missing from the union of the slices, and no slice holds more than
// MaxClustersPerDecision clusters. Integration and e2e tests share it.
package fleetwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
)

// Violation is one observed state that breaks a promise of the decisions.
type Violation struct {
	// Kind is "Absent" (a cluster that must stay placed is in no slice),
	// "Oversized" (a slice holds more than 100 clusters) or "WatchLost" (events
	// were lost, so states may have gone unseen).
	Kind    string
	Cluster string
	Slice   string
	Size    int
	// Event is the watch event after which the state was seen, e.g.
	// "MODIFIED p-decision-1@1234".
	Event string
}

func (v Violation) String() string {
	switch v.Kind {
	case "Absent":
		return fmt.Sprintf("%s absent from every slice after %s", v.Cluster, v.Event)
	case "Oversized":
		return fmt.Sprintf("%s holds %d clusters after %s", v.Slice, v.Size, v.Event)
	default:
		return fmt.Sprintf("%s: %s", v.Kind, v.Event)
	}
}

// Watcher records every state of one placement's slices from the moment it
// starts.
type Watcher struct {
	client    client.WithWatch
	namespace string
	placement string

	mu         sync.Mutex
	stay       map[string]bool
	slices     map[string]fleet.Slice
	history    [][]fleet.Slice
	violations []Violation
	changed    chan struct{}
	rv         string

	cancel context.CancelFunc
	done   chan struct{}
}

// Start lists the placement's slices and watches them from that list on.
// Every cluster in stay must be in some slice at every observed state.
func Start(ctx context.Context, c client.WithWatch, namespace, placement string, stay []string) (*Watcher, error) {
	w := &Watcher{
		client: c, namespace: namespace, placement: placement,
		stay: map[string]bool{}, slices: map[string]fleet.Slice{}, changed: make(chan struct{}),
	}
	for _, s := range stay {
		w.stay[s] = true
	}
	var list fleetv1alpha1.PlacementDecisionList
	if err := c.List(ctx, &list, w.selector()...); err != nil {
		return nil, fmt.Errorf("listing PlacementDecisions of %s/%s: %w", namespace, placement, err)
	}
	for i := range list.Items {
		w.slices[list.Items[i].Name] = sliceOf(&list.Items[i])
	}
	w.rv = list.ResourceVersion
	w.observeLocked("LIST@" + w.rv)
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.run(ctx)
	return w, nil
}

func (w *Watcher) selector() []client.ListOption {
	return []client.ListOption{client.InNamespace(w.namespace), client.MatchingLabels{fleetv1alpha1.LabelPlacement: w.placement}}
}

// run follows the watch, starting it again from the last resourceVersion when
// the server closes it.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.done)
	for ctx.Err() == nil {
		w.mu.Lock()
		rv := w.rv
		w.mu.Unlock()
		opts := append(w.selector(), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		wi, err := w.client.Watch(ctx, &fleetv1alpha1.PlacementDecisionList{}, opts...)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.lost(fmt.Sprintf("starting the watch at %s: %v", rv, err))
			return
		}
		if !w.follow(ctx, wi) {
			return
		}
	}
}

// follow applies the watch's events; it returns false when watching must stop.
func (w *Watcher) follow(ctx context.Context, wi watch.Interface) bool {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return true
			}
			if ev.Type == watch.Error {
				w.lost(fmt.Sprintf("watch error: %v", apierrors.FromObject(ev.Object)))
				return false
			}
			pd, ok := ev.Object.(*fleetv1alpha1.PlacementDecision)
			if !ok {
				continue
			}
			w.mu.Lock()
			switch ev.Type {
			case watch.Deleted:
				delete(w.slices, pd.Name)
			case watch.Added, watch.Modified:
				w.slices[pd.Name] = sliceOf(pd)
			}
			w.rv = pd.ResourceVersion
			w.observeLocked(fmt.Sprintf("%s %s@%s", ev.Type, pd.Name, pd.ResourceVersion))
			w.mu.Unlock()
		}
	}
}

func (w *Watcher) lost(why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, Violation{Kind: "WatchLost", Event: why})
	w.notifyLocked()
}

// observeLocked checks the current state and records it.
func (w *Watcher) observeLocked(event string) {
	state := w.stateLocked()
	union := map[string]bool{}
	for _, s := range state {
		if len(s.Clusters) > fleetv1alpha1.MaxClustersPerDecision {
			w.violations = append(w.violations, Violation{Kind: "Oversized", Slice: s.Name, Size: len(s.Clusters), Event: event})
		}
		for _, c := range s.Clusters {
			union[c] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(w.stay)) {
		if !union[c] {
			w.violations = append(w.violations, Violation{Kind: "Absent", Cluster: c, Event: event})
		}
	}
	w.history = append(w.history, state)
	w.notifyLocked()
}

func (w *Watcher) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *Watcher) stateLocked() []fleet.Slice {
	out := make([]fleet.Slice, 0, len(w.slices))
	for _, name := range slices.Sorted(maps.Keys(w.slices)) {
		out = append(out, w.slices[name])
	}
	return out
}

// SetStay replaces the clusters that must stay placed; states observed from
// now on are checked against them.
func (w *Watcher) SetStay(stay []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stay = map[string]bool{}
	for _, s := range stay {
		w.stay[s] = true
	}
}

// Slices is the latest observed state, in name order.
func (w *Watcher) Slices() []fleet.Slice {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked()
}

// Union is the sorted set of clusters in at least one slice of the latest
// observed state: what a consumer takes as placed.
func (w *Watcher) Union() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	union := map[string]bool{}
	for _, s := range w.slices {
		for _, c := range s.Clusters {
			union[c] = true
		}
	}
	return slices.Sorted(maps.Keys(union))
}

// History is every observed state, oldest first.
func (w *Watcher) History() [][]fleet.Slice {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.history)
}

// Violations are the broken promises seen so far.
func (w *Watcher) Violations() []Violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// PeakSliceSize is the most clusters any slice held in any observed state.
func (w *Watcher) PeakSliceSize() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	peak := 0
	for _, state := range w.history {
		for _, s := range state {
			peak = max(peak, len(s.Clusters))
		}
	}
	return peak
}

// WaitFor returns once done holds for an observed state, or an error after
// timeout with the last state drawn.
func (w *Watcher) WaitFor(ctx context.Context, timeout time.Duration, done func([]fleet.Slice) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		state, changed := w.stateLocked(), w.changed
		w.mu.Unlock()
		if done(state) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not reached within %s; last state:\n%s", timeout, fleetsim.Render(state))
		}
	}
}

// Stop ends the watch.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// Equal reports whether a state is exactly want: names, planner labels and
// clusters in order.
func Equal(state, want []fleet.Slice) bool {
	return slices.EqualFunc(state, want, func(a, b fleet.Slice) bool {
		if a.Name != b.Name || !slices.Equal(a.Clusters, b.Clusters) {
			return false
		}
		for k, v := range b.Labels {
			if a.Labels[k] != v {
				return false
			}
		}
		return true
	})
}

func sliceOf(pd *fleetv1alpha1.PlacementDecision) fleet.Slice {
	s := fleet.Slice{Name: pd.Name, Labels: maps.Clone(pd.Labels)}
	for _, d := range pd.Status.Decisions {
		s.Clusters = append(s.Clusters, d.ClusterName)
	}
	return s
}
