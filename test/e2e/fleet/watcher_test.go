//go:build e2e

package fleet

import (
	"context"
	"reflect"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// decisionWatcher is fleetwatch's watcher of one placement's
// PlacementDecisions, with what this test adds: an action at the next observed
// state (to SIGKILL the hub at the first write it sees), and violations that
// the test expected set aside (the All update is meant to show some).
type decisionWatcher struct {
	*fleetwatch.Watcher
	// expected counts the violations, from the first, that the test expected.
	expected int
}

func watchDecisions(ctx context.Context, c client.WithWatch, namespace, placement string) (*decisionWatcher, error) {
	w, err := fleetwatch.Start(ctx, c, namespace, placement, nil)
	if err != nil {
		return nil, err
	}
	return &decisionWatcher{Watcher: w}, nil
}

// report returns the unexpected violations, the peak slice size and the
// number of observed states.
func (w *decisionWatcher) report() (violations []string, peak, states int) {
	for _, v := range w.Violations()[w.expected:] {
		violations = append(violations, v.String())
	}
	return violations, w.PeakSliceSize(), len(w.History())
}

// takeViolations returns the violations seen since the last call and marks
// them as expected.
func (w *decisionWatcher) takeViolations() []string {
	all := w.Violations()
	var out []string
	for _, v := range all[w.expected:] {
		out = append(out, v.String())
	}
	w.expected = len(all)
	return out
}

// atNextState runs f with the first state observed after this call, as soon
// as the watcher has it. It gives up after timeout, without running f.
func (w *decisionWatcher) atNextState(ctx context.Context, timeout time.Duration, f func(state []fleet.Slice)) {
	seen := len(w.History())
	go func() {
		var next []fleet.Slice
		err := w.WaitFor(ctx, timeout, func(state []fleet.Slice) bool {
			next = state
			return len(w.History()) > seen
		})
		if err == nil {
			f(next)
		}
	}()
}

// mark is a point in the history to read the states after it.
func (w *decisionWatcher) mark() int { return len(w.History()) }

// statesSince returns the observed states after the mark, with repeats of the
// same state (a write that changed nothing) folded.
func (w *decisionWatcher) statesSince(mark int) [][]fleet.Slice {
	var out [][]fleet.Slice
	for _, st := range w.History()[mark:] {
		if len(out) > 0 && reflect.DeepEqual(out[len(out)-1], st) {
			continue
		}
		out = append(out, st)
	}
	return out
}
