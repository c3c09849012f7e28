//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
)

// decisionWatcher follows the PlacementDecisions of one placement through a
// single watch, in the apiserver's order, and checks every state a consumer
// could observe: each cluster the test says must stay is in the union of the
// slices, and no slice holds more than 100 clusters.
type decisionWatcher struct {
	mu     sync.Mutex
	slices map[string]fleet.Slice
	stay   map[string]bool
	// history is every observed state, oldest first, each in name order.
	history [][]fleet.Slice
	// violations are the broken promises, in the order seen.
	violations []string
	peak       int
	events     int
	// onEvent, when set, runs once at the next event, with the state after it.
	onEvent func(state []fleet.Slice)
	// err is what ended the watch early, if anything did.
	err error
}

// watchDecisions lists the placement's PlacementDecisions and watches them
// from that list's resourceVersion until ctx ends. A watch the apiserver closes
// is resumed from the last resourceVersion seen.
func watchDecisions(ctx context.Context, c client.WithWatch, namespace, placement string) (*decisionWatcher, error) {
	sel := labels.SelectorFromSet(labels.Set{fleetv1alpha1.LabelPlacement: placement})
	var list fleetv1alpha1.PlacementDecisionList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the decisions of %s/%s: %w", namespace, placement, err)
	}
	w := &decisionWatcher{slices: map[string]fleet.Slice{}, stay: map[string]bool{}}
	for i := range list.Items {
		w.apply(watch.Added, &list.Items[i])
	}
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			opts := &client.ListOptions{Namespace: namespace, LabelSelector: sel, Raw: &metav1.ListOptions{ResourceVersion: rv}}
			wi, err := c.Watch(ctx, &fleetv1alpha1.PlacementDecisionList{}, opts)
			if err != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("watching decisions: %w", err))
				}
				return
			}
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					// Typically "resourceVersion too old": the history is lost, so
					// the watcher can no longer vouch for every state.
					w.fail(fmt.Errorf("watch error: %v", ev.Object))
					wi.Stop()
					return
				}
				pd, ok := ev.Object.(*fleetv1alpha1.PlacementDecision)
				if !ok {
					continue
				}
				rv = pd.ResourceVersion
				w.apply(ev.Type, pd)
			}
			wi.Stop()
		}
	}()
	return w, nil
}

func (w *decisionWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// apply folds one event into the state and checks the state it leads to.
func (w *decisionWatcher) apply(typ watch.EventType, pd *fleetv1alpha1.PlacementDecision) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	switch typ {
	case watch.Added, watch.Modified:
		sl := asSlice(pd)
		names := sl.Clusters
		w.slices[pd.Name] = sl
		w.peak = max(w.peak, len(names))
		if len(names) > fleetv1alpha1.MaxClustersPerDecision {
			w.violations = append(w.violations, fmt.Sprintf("%s %s holds %d clusters", typ, pd.Name, len(names)))
		}
	case watch.Deleted:
		delete(w.slices, pd.Name)
	default:
		return
	}
	union := w.unionLocked()
	var missing []string
	for c := range w.stay {
		if !union[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		w.violations = append(w.violations, fmt.Sprintf("after %s %s (rv %s) %d cluster(s) in no slice: %s",
			typ, pd.Name, pd.ResourceVersion, len(missing), abbreviate(missing)))
	}
	state := w.stateLocked()
	w.history = append(w.history, state)
	if w.onEvent != nil {
		f := w.onEvent
		w.onEvent = nil
		f(state)
	}
}

// asSlice reads a PlacementDecision as the planner's slice: its name, the
// fleet labels and its clusters (nil when empty).
func asSlice(pd *fleetv1alpha1.PlacementDecision) fleet.Slice {
	sl := fleet.Slice{Name: pd.Name, Labels: map[string]string{}}
	for _, k := range []string{fleetv1alpha1.LabelPlacement, fleetv1alpha1.LabelDecisionGroupName, fleetv1alpha1.LabelDecisionGroupIndex} {
		if v, ok := pd.Labels[k]; ok {
			sl.Labels[k] = v
		}
	}
	for _, d := range pd.Status.Decisions {
		sl.Clusters = append(sl.Clusters, d.ClusterName)
	}
	return sl
}

// stateLocked is the current state in name order.
func (w *decisionWatcher) stateLocked() []fleet.Slice {
	out := make([]fleet.Slice, 0, len(w.slices))
	for _, name := range slices.Sorted(maps.Keys(w.slices)) {
		out = append(out, w.slices[name])
	}
	return out
}

// state is the latest observed state, in name order.
func (w *decisionWatcher) state() []fleet.Slice {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked()
}

// mark is a point in the history to read the states after it.
func (w *decisionWatcher) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.history)
}

// statesSince returns the observed states after the mark, with repeats of the
// same state (a write that changed nothing) folded.
func (w *decisionWatcher) statesSince(mark int) [][]fleet.Slice {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [][]fleet.Slice
	for _, st := range w.history[mark:] {
		if len(out) > 0 && reflect.DeepEqual(out[len(out)-1], st) {
			continue
		}
		out = append(out, st)
	}
	return out
}

func (w *decisionWatcher) unionLocked() map[string]bool {
	u := map[string]bool{}
	for _, sl := range w.slices {
		for _, c := range sl.Clusters {
			u[c] = true
		}
	}
	return u
}

// mustStay sets the clusters that must be in the union from now on: those
// placed both before and after the change the test is about to make.
func (w *decisionWatcher) mustStay(clusters []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stay = map[string]bool{}
	for _, c := range clusters {
		w.stay[c] = true
	}
	// The current state must already hold them: nothing may be missing now.
	union := w.unionLocked()
	for _, c := range clusters {
		if !union[c] {
			w.violations = append(w.violations, fmt.Sprintf("%s must stay but is in no slice when the check starts", c))
		}
	}
}

// atNextEvent runs f once, in the watch's goroutine, right after the next
// event is applied: the test acts on the earliest write it can see.
func (w *decisionWatcher) atNextEvent(f func(state []fleet.Slice)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onEvent = f
}

// report returns the violations so far, the peak slice size and the number of
// events, and the error that ended the watch, if any.
func (w *decisionWatcher) report() (violations []string, peak, events int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations), w.peak, w.events, w.err
}

// takeViolations returns the violations so far and forgets them: for the
// updates where the test expects some.
func (w *decisionWatcher) takeViolations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.violations
	w.violations = nil
	return v
}

// abbreviate lists names, shortened when there are many.
func abbreviate(names []string) string {
	if len(names) <= 8 {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s,... (%d more)", strings.Join(names[:8], ","), len(names)-8)
}
