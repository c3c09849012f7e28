package fleetwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unchecked turns a bound of PodBounds off.
const Unchecked = -1

// PodBounds are what a workload's pods, summed over every member, must keep
// to at every observed state. A negative bound is not checked.
type PodBounds struct {
	// MinAvailable: ready pods that are not terminating.
	MinAvailable int
	// MaxPods: pods that are not terminating (and not finished), each
	// ReplicaSet's counted up to its replicas (see PodCounts.Surplus).
	MaxPods int
	// MaxUpdated: such pods the Updated function of the watcher calls updated.
	MaxUpdated int
}

// PodCounts is one observed state of the pods, fleet-wide or in one member.
type PodCounts struct {
	Pods, Available, Updated, Terminating int
	// Surplus counts pods above their ReplicaSet's replicas, left out of
	// Pods and Updated: the ReplicaSet controller is about to delete them.
	// A Deployment alone runs such pods for a moment past its own maxSurge
	// when that controller creates the new ReplicaSet's pods before it
	// deletes the old one's; maxSurge bounds the ReplicaSets' replicas.
	Surplus int
}

func (c PodCounts) String() string {
	s := fmt.Sprintf("%d pods, %d available, %d updated, %d terminating", c.Pods, c.Available, c.Updated, c.Terminating)
	if c.Surplus > 0 {
		s += fmt.Sprintf(", %d above their ReplicaSet's replicas", c.Surplus)
	}
	return s
}

// PodViolation is one observed state outside the bounds.
type PodViolation struct {
	// Kind is "BelowMinAvailable", "AboveMaxPods" or "AboveMaxUpdated".
	Kind   string
	Counts PodCounts
	// Event is the watch event after which the state was seen, e.g.
	// "ADDED m1/web-5d8f-abcde@1234".
	Event string
	// Members is each member's share of Counts, in name order.
	Members string
}

func (v PodViolation) String() string {
	return fmt.Sprintf("%s after %s: %s (%s)", v.Kind, v.Event, v.Counts, v.Members)
}

// podState is what the watcher keeps of one pod.
type podState struct {
	counted, available, updated, terminating bool
	// replicaSet is the UID of the ReplicaSet that controls the pod, if any.
	replicaSet types.UID
}

// PodWatcher follows one workload's pods in every member through a watch per
// member, independently of the hub, and checks the sum after every event. A
// member whose watch breaks (it is stopped, say) keeps its last observed pods
// until it answers again; its pods are then listed afresh.
type PodWatcher struct {
	updated func(*corev1.Pod) bool

	mu     sync.Mutex
	bounds PodBounds
	pods   map[string]map[types.UID]podState
	// replicas is each member's ReplicaSets' spec.replicas, by UID.
	replicas   map[string]map[types.UID]int
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
		updated: updated, bounds: bounds, pods: map[string]map[types.UID]podState{}, replicas: map[string]map[types.UID]int{}, reachable: map[string]bool{},
		changed: make(chan struct{}), minAvail: -1,
	}
	ctx, w.cancel = context.WithCancel(ctx)
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabels(selector)}
	rvs, rsRVs := map[string]string{}, map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		rsRV, err := w.listReplicaSets(ctx, name, members[name], opts)
		if err != nil {
			w.cancel()
			return nil, err
		}
		rv, err := w.list(ctx, name, members[name], opts)
		if err != nil {
			w.cancel()
			return nil, err
		}
		rvs[name], rsRVs[name] = rv, rsRV
	}
	w.mu.Lock()
	w.armed = true
	w.observeLocked("LIST of every member")
	w.mu.Unlock()
	for name, c := range members {
		w.done.Go(func() {
			w.keepFollowing(ctx, c, &corev1.PodList{}, opts, rvs[name],
				func() (string, error) { return w.list(ctx, name, c, opts) },
				func() { w.setReachable(name, false) }, w.applyPod(name))
		})
		w.done.Go(func() {
			w.keepFollowing(ctx, c, &appsv1.ReplicaSetList{}, opts, rsRVs[name],
				func() (string, error) { return w.listReplicaSets(ctx, name, c, opts) },
				func() {}, w.applyReplicaSet(name))
		})
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

// applyFunc applies one watch event under the watcher's lock and names it
// for the check that follows.
type applyFunc func(watch.EventType, client.Object) string

// keepFollowing follows one member's watch of list's kind from rv, listing
// again through relist whenever the watch breaks; broken is told when the
// list fails too.
func (w *PodWatcher) keepFollowing(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, rv string,
	relist func() (string, error), broken func(), apply applyFunc) {
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = relist(); err != nil {
				broken()
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
		}
		rv = w.follow(ctx, c, list, opts, rv, apply)
	}
}

// follow applies one watch's events and returns the resourceVersion to go on
// from ("" to list again).
func (w *PodWatcher) follow(ctx context.Context, c client.WithWatch, list client.ObjectList, opts []client.ListOption, rv string, apply applyFunc) string {
	wi, err := c.Watch(ctx, list, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
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
			obj, ok := ev.Object.(client.Object)
			if ev.Type == watch.Error || !ok {
				return ""
			}
			rv = obj.GetResourceVersion()
			w.mu.Lock()
			w.observeLocked(apply(ev.Type, obj))
			w.mu.Unlock()
		}
	}
}

// applyPod keeps one pod event of member.
func (w *PodWatcher) applyPod(member string) applyFunc {
	return func(t watch.EventType, obj client.Object) string {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return string(t)
		}
		pods := w.pods[member]
		switch t {
		case watch.Deleted:
			delete(pods, p.UID)
		case watch.Added, watch.Modified:
			if _, seen := pods[p.UID]; !seen {
				w.created++
			}
			pods[p.UID] = w.stateOf(p)
		}
		return fmt.Sprintf("%s %s/%s@%s", t, member, p.Name, p.ResourceVersion)
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
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" {
		s.replicaSet = ref.UID
	}
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

// countsOf counts one member's pods; replicas are its ReplicaSets'. Every
// available pod counts as available, whatever its ReplicaSet asks for.
func countsOf(pods map[types.UID]podState, replicas map[types.UID]int) PodCounts {
	var c PodCounts
	kept := map[types.UID]int{}
	for _, p := range pods {
		if p.terminating {
			c.Terminating++
		}
		if !p.counted {
			continue
		}
		if p.available {
			c.Available++
		}
		if want, ok := replicas[p.replicaSet]; ok && p.replicaSet != "" {
			if kept[p.replicaSet] >= want {
				c.Surplus++
				continue
			}
			kept[p.replicaSet]++
		}
		c.Pods++
		if p.updated {
			c.Updated++
		}
	}
	return c
}

func (w *PodWatcher) totalLocked() PodCounts {
	var t PodCounts
	for m, pods := range w.pods {
		c := countsOf(pods, w.replicas[m])
		t.Pods += c.Pods
		t.Available += c.Available
		t.Updated += c.Updated
		t.Terminating += c.Terminating
		t.Surplus += c.Surplus
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
	violation := func(kind string) PodViolation {
		var per []string
		for _, m := range slices.Sorted(maps.Keys(w.pods)) {
			per = append(per, fmt.Sprintf("%s: %s", m, countsOf(w.pods[m], w.replicas[m])))
		}
		return PodViolation{Kind: kind, Counts: t, Event: event, Members: strings.Join(per, "; ")}
	}
	if b.MinAvailable >= 0 && t.Available < b.MinAvailable {
		w.violations = append(w.violations, violation("BelowMinAvailable"))
	}
	if b.MaxPods >= 0 && t.Pods > b.MaxPods {
		w.violations = append(w.violations, violation("AboveMaxPods"))
	}
	if b.MaxUpdated >= 0 && t.Updated > b.MaxUpdated {
		w.violations = append(w.violations, violation("AboveMaxUpdated"))
	}
	w.peak.Pods = max(w.peak.Pods, t.Pods)
	w.peak.Updated = max(w.peak.Updated, t.Updated)
	w.peak.Terminating = max(w.peak.Terminating, t.Terminating)
	w.peak.Surplus = max(w.peak.Surplus, t.Surplus)
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
	return countsOf(w.pods[member], w.replicas[member])
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

// Extremes are the most pods, updated, terminating and surplus pods and the
// fewest available pods of any observed state.
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

// listReplicaSets replaces a member's ReplicaSets' replicas with a fresh list.
func (w *PodWatcher) listReplicaSets(ctx context.Context, member string, c client.WithWatch, opts []client.ListOption) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var list appsv1.ReplicaSetList
	if err := c.List(ctx, &list, opts...); err != nil {
		return "", fmt.Errorf("listing ReplicaSets in %s: %w", member, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := map[types.UID]int{}
	for i := range list.Items {
		now[list.Items[i].UID] = int(ptr.Deref(list.Items[i].Spec.Replicas, 1))
	}
	w.replicas[member] = now
	w.observeLocked(fmt.Sprintf("LIST ReplicaSets %s@%s", member, list.ResourceVersion))
	return list.ResourceVersion, nil
}

// applyReplicaSet keeps one ReplicaSet event of member. A state is checked
// after it too: replicas seen late may have hidden pods it keeps.
func (w *PodWatcher) applyReplicaSet(member string) applyFunc {
	return func(t watch.EventType, obj client.Object) string {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			return string(t)
		}
		if t == watch.Deleted {
			delete(w.replicas[member], rs.UID)
		} else {
			w.replicas[member][rs.UID] = int(ptr.Deref(rs.Spec.Replicas, 1))
		}
		return fmt.Sprintf("%s ReplicaSet %s/%s@%s", t, member, rs.Name, rs.ResourceVersion)
	}
}
