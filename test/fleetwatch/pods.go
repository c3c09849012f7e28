package fleetwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unchecked turns a bound of PodBounds off.
const Unchecked = -1

// PodBounds are what a workload's pods, summed over every member, must keep
// to at every observed state. A negative bound is not checked.
type PodBounds struct {
	// MinAvailable: ready pods that are not terminating.
	MinAvailable int
	// MaxPods: pods that are not terminating (and not finished).
	MaxPods int
	// MaxUpdated: such pods the Updated function of the watcher calls updated.
	MaxUpdated int
}

// PodCounts is one observed state of the pods, fleet-wide or in one member.
type PodCounts struct {
	Pods, Available, Updated, Terminating int
}

func (c PodCounts) String() string {
	return fmt.Sprintf("%d pods, %d available, %d updated, %d terminating", c.Pods, c.Available, c.Updated, c.Terminating)
}

// PodViolation is one observed state outside the bounds.
type PodViolation struct {
	// Kind is "BelowMinAvailable", "AboveMaxPods" or "AboveMaxUpdated".
	Kind   string
	Counts PodCounts
	// Event is the watch event after which the state was seen, e.g.
	// "ADDED m1/web-5d8f-abcde@1234".
	Event string
}

func (v PodViolation) String() string {
	return fmt.Sprintf("%s after %s: %s", v.Kind, v.Event, v.Counts)
}

// podState is what the watcher keeps of one pod.
type podState struct {
	counted, available, updated, terminating bool
}

// PodWatcher follows one workload's pods in every member through a watch per
// member, independently of the hub, and checks the sum after every event. A
// member whose watch breaks (it is stopped, say) keeps its last observed pods
// until it answers again; its pods are then listed afresh.
type PodWatcher struct {
	updated func(*corev1.Pod) bool

	mu         sync.Mutex
	bounds     PodBounds
	pods       map[string]map[types.UID]podState
	reachable  map[string]bool
	created    int
	peak       PodCounts
	minAvail   int
	violations []PodViolation
	changed    chan struct{}
	// armed once every member has been listed: a sum over some members only
	// is no state of the fleet.
	armed bool

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// StartPods lists and then watches the pods matching selector in namespace of
// every member (by name). updated says which pods run the new revision.
// It returns once every member has been listed.
func StartPods(ctx context.Context, members map[string]client.WithWatch, namespace string, selector map[string]string,
	updated func(*corev1.Pod) bool, bounds PodBounds) (*PodWatcher, error) {
	w := &PodWatcher{
		updated: updated, bounds: bounds, pods: map[string]map[types.UID]podState{}, reachable: map[string]bool{},
		changed: make(chan struct{}), minAvail: -1,
	}
	ctx, w.cancel = context.WithCancel(ctx)
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabels(selector)}
	rvs := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		rv, err := w.list(ctx, name, members[name], opts)
		if err != nil {
			w.cancel()
			return nil, err
		}
		rvs[name] = rv
	}
	w.mu.Lock()
	w.armed = true
	w.observeLocked("LIST of every member")
	w.mu.Unlock()
	for name, c := range members {
		w.done.Go(func() { w.run(ctx, name, c, opts, rvs[name]) })
	}
	return w, nil
}

// list replaces a member's pods with a fresh list; new pods count as created
// unless this is the first list.
func (w *PodWatcher) list(ctx context.Context, member string, c client.WithWatch, opts []client.ListOption) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var list corev1.PodList
	if err := c.List(ctx, &list, opts...); err != nil {
		return "", fmt.Errorf("listing pods in %s: %w", member, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before, first := w.pods[member], w.pods[member] == nil
	now := map[types.UID]podState{}
	for i := range list.Items {
		p := &list.Items[i]
		now[p.UID] = w.stateOf(p)
		if _, seen := before[p.UID]; !seen && !first {
			w.created++
		}
	}
	w.pods[member] = now
	w.reachable[member] = true
	w.observeLocked(fmt.Sprintf("LIST %s@%s", member, list.ResourceVersion))
	return list.ResourceVersion, nil
}

// run follows one member's watch, listing again whenever it breaks.
func (w *PodWatcher) run(ctx context.Context, member string, c client.WithWatch, opts []client.ListOption, rv string) {
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = w.list(ctx, member, c, opts); err != nil {
				w.setReachable(member, false)
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
		}
		rv = w.follow(ctx, member, c, opts, rv)
	}
}

// follow applies one watch's events and returns the resourceVersion to go on
// from ("" to list again).
func (w *PodWatcher) follow(ctx context.Context, member string, c client.WithWatch, opts []client.ListOption, rv string) string {
	wi, err := c.Watch(ctx, &corev1.PodList{}, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
	if err != nil {
		return ""
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv
			}
			if ev.Type == watch.Error {
				_ = apierrors.FromObject(ev.Object)
				return ""
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = p.ResourceVersion
			w.mu.Lock()
			pods := w.pods[member]
			switch ev.Type {
			case watch.Deleted:
				delete(pods, p.UID)
			case watch.Added, watch.Modified:
				if _, seen := pods[p.UID]; !seen {
					w.created++
				}
				pods[p.UID] = w.stateOf(p)
			}
			w.observeLocked(fmt.Sprintf("%s %s/%s@%s", ev.Type, member, p.Name, p.ResourceVersion))
			w.mu.Unlock()
		}
	}
}

func (w *PodWatcher) setReachable(member string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reachable[member] = ok
	w.notifyLocked()
}

func (w *PodWatcher) stateOf(p *corev1.Pod) podState {
	s := podState{terminating: p.DeletionTimestamp != nil}
	s.counted = !s.terminating && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
	if !s.counted {
		return s
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			s.available = true
		}
	}
	s.updated = w.updated(p)
	return s
}

func countsOf(pods map[types.UID]podState) PodCounts {
	var c PodCounts
	for _, p := range pods {
		if p.terminating {
			c.Terminating++
		}
		if !p.counted {
			continue
		}
		c.Pods++
		if p.available {
			c.Available++
		}
		if p.updated {
			c.Updated++
		}
	}
	return c
}

func (w *PodWatcher) totalLocked() PodCounts {
	var t PodCounts
	for _, pods := range w.pods {
		c := countsOf(pods)
		t.Pods += c.Pods
		t.Available += c.Available
		t.Updated += c.Updated
		t.Terminating += c.Terminating
	}
	return t
}

// observeLocked checks the fleet-wide sum after an event.
func (w *PodWatcher) observeLocked(event string) {
	if !w.armed {
		return
	}
	t := w.totalLocked()
	b := w.bounds
	if b.MinAvailable >= 0 && t.Available < b.MinAvailable {
		w.violations = append(w.violations, PodViolation{Kind: "BelowMinAvailable", Counts: t, Event: event})
	}
	if b.MaxPods >= 0 && t.Pods > b.MaxPods {
		w.violations = append(w.violations, PodViolation{Kind: "AboveMaxPods", Counts: t, Event: event})
	}
	if b.MaxUpdated >= 0 && t.Updated > b.MaxUpdated {
		w.violations = append(w.violations, PodViolation{Kind: "AboveMaxUpdated", Counts: t, Event: event})
	}
	w.peak.Pods = max(w.peak.Pods, t.Pods)
	w.peak.Updated = max(w.peak.Updated, t.Updated)
	w.peak.Terminating = max(w.peak.Terminating, t.Terminating)
	w.peak.Available = max(w.peak.Available, t.Available)
	if w.minAvail < 0 || t.Available < w.minAvail {
		w.minAvail = t.Available
	}
	w.notifyLocked()
}

func (w *PodWatcher) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// SetBounds replaces the bounds; states observed from now on are checked
// against them.
func (w *PodWatcher) SetBounds(b PodBounds) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bounds = b
}

// Counts is the latest observed fleet-wide state.
func (w *PodWatcher) Counts() PodCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.totalLocked()
}

// MemberCounts is the latest observed state of one member.
func (w *PodWatcher) MemberCounts(member string) PodCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return countsOf(w.pods[member])
}

// Reachable: the member's pods were last listed or watched without error.
func (w *PodWatcher) Reachable(member string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reachable[member]
}

// Created counts the pods first seen after the first list of their member.
func (w *PodWatcher) Created() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.created
}

// Extremes are the most pods, updated and terminating pods and the fewest
// available pods of any observed state.
func (w *PodWatcher) Extremes() (peak PodCounts, minAvailable int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, w.minAvail
}

// Violations are the states outside the bounds seen so far.
func (w *PodWatcher) Violations() []PodViolation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// WaitFor returns once done holds for the fleet-wide counts, or an error after
// timeout with the last counts.
func (w *PodWatcher) WaitFor(ctx context.Context, timeout time.Duration, done func(PodCounts) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		t, changed := w.totalLocked(), w.changed
		w.mu.Unlock()
		if done(t) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not reached within %s; last: %s", timeout, t)
		}
	}
}

// Stop ends the watches.
func (w *PodWatcher) Stop() {
	w.cancel()
	w.done.Wait()
}
