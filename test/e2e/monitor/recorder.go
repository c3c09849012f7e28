package monitor

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// maxViolations bounds the violations kept; the first one is what matters.
const maxViolations = 100

// recorder turns observed objects into timeline events and checks every event.
// It has no client and no clock of its own: the Monitor feeds it from watches,
// unit tests feed it by hand.
type recorder struct {
	opts       Options
	snap       *snapshot
	hist       *history
	specs      specTracker
	expected   expectedDeletions
	timeline   *timeline
	violations []Violation
	// setGone: the PodCliqueSet is being deleted and its children go with it;
	// nothing is checked any more.
	setGone bool
	// readSpec reads the PodCliqueSet from the apiserver, past the watch, when a
	// check needs a spec the watch may not have delivered yet; nil in unit tests.
	readSpec func() (*v1alpha1.PodCliqueSet, error)
	// missed are pods whose deletion the watch missed and a relist found
	// out, as they were last seen, until the deletion is judged.
	missed map[string]podState
	// watchLost: a watch failed, so the next events are a relist's, handed
	// over in an order of their own (see lostWatch); judging resumes at
	// relistUntil.
	watchLost   bool
	relistUntil time.Time
	// doomed are the pods (by name, with their creation time) of PodCliques
	// being deleted: their deletion was judged when their PodClique's began.
	doomed map[string]time.Time
	// pending are PodCliques whose deletion the PodClique watch delivered
	// before the pod watch reached it, in the order seen; podRV is the newest
	// resourceVersion the pod watch delivered (see settleDooms).
	pending []pendingDoom
	podRV   uint64
}

// pendingDoom is a PodClique being deleted whose pods wait to be judged until
// the pod watch has delivered every change made before the deletion (rv).
type pendingDoom struct {
	clique childState
	rv     uint64
}

func newRecorder(o Options, start time.Time) *recorder {
	return &recorder{
		opts:     o,
		snap:     newSnapshot(),
		hist:     newHistory(),
		specs:    specTracker{grace: o.SpecGrace, maxLag: o.MaxSpecLag},
		timeline: newTimeline(start, o.TimelineSize),
		missed:   map[string]podState{},
		doomed:   map[string]time.Time{},
	}
}

// observePod takes in a pod added or updated; initial marks pods that were
// there when the monitor started.
func (r *recorder) observePod(now time.Time, pod *corev1.Pod, initial bool) {
	p, err := podStateOf(pod)
	if err != nil {
		r.timeline.add(noLabels(now, Ignored, "pod/"+pod.Name, err.Error()))
		return
	}
	if m, ok := r.missed[p.Name]; ok && !m.Created.Equal(p.Created) {
		// a new pod of the name: the old one's deletion comes first
		r.judgeMissedPod(now, p.Name)
	}
	if created, ok := r.doomed[p.Name]; ok && created.Equal(p.Created) {
		p.Doomed = true
	}
	old, existed := r.snap.pods[p.Name]
	switch {
	case existed && old.Ready && !p.Ready:
		p.UnreadyAt, p.WasReadySince = now, old.ReadySince
	case existed && !p.Ready:
		p.UnreadyAt, p.WasReadySince = old.UnreadyAt, old.WasReadySince
	case existed && !old.Ready && p.Ready:
		p.ReadyAt = now
	case existed:
		p.ReadyAt = old.ReadyAt
	}
	after := r.snap.clone()
	after.pods[p.Name] = p
	r.process(now, after, podChanges(now, old, existed, p, initial))
}

// relistWindow is how long after a lost watch the monitor records events
// without judging them.
const relistWindow = time.Second

// lostWatch notes that a watch failed (the apiserver went away, say). When it
// comes back, the informer lists again and hands over what changed meanwhile
// in an order that is not the order it happened in (a pod made in place of
// one being deleted can come before that deletion): those events are recorded
// but not judged, and the checks resume on the state they leave.
func (r *recorder) lostWatch(now time.Time, err error) {
	if !r.watchLost {
		r.timeline.add(noLabels(now, WatchLost, "watch", err.Error()))
	}
	r.watchLost = true
}

// missPod takes in a deletion the watch missed. The pod no longer counts
// (it is marked terminating) but its deletion is judged only by
// judgeMissedPod: the relist that found it out hands over such deletions
// before the updates of the pods still there, though those may have
// happened first.
func (r *recorder) missPod(now time.Time, name string) {
	old, ok := r.snap.pods[name]
	if !ok || old.Terminating {
		if ok { // its deletion was seen begin: nothing to judge
			r.forgetPod(now, name, "")
		}
		return
	}
	r.missed[name] = old
	gone := old
	gone.Terminating = true
	after := r.snap.clone()
	after.pods[name] = gone
	r.snap = after
	r.hist.advance(r.specs.live(now), after)
}

// judgeMissedPod records the deletion of a pod taken in by missPod, judged
// against the pods as they are now, the deleted one as it was last seen.
func (r *recorder) judgeMissedPod(now time.Time, name string) {
	old, ok := r.missed[name]
	if !ok {
		return
	}
	delete(r.missed, name)
	if cur, ok := r.snap.pods[name]; !ok || !cur.Created.Equal(old.Created) {
		return
	}
	before := r.snap.clone()
	before.pods[name] = old
	r.snap = before
	r.forgetPod(now, name, "missed by the watch, found by a relist")
}

// forgetPod records that a pod is gone; detail, if any, says how it was seen.
func (r *recorder) forgetPod(now time.Time, name, detail string) {
	old, ok := r.snap.pods[name]
	if !ok {
		return
	}
	after := r.snap.clone()
	delete(after.pods, name)
	delete(r.doomed, name)
	e := podEvent(now, PodDeleted, old)
	if detail != "" {
		e.Detail = detail
	}
	r.process(now, after, []Event{e})
}

// podChanges are the events between two states of a pod; one update of a pod
// can carry several (bound and ready at once after a missed watch event).
func podChanges(now time.Time, old podState, existed bool, p podState, initial bool) []Event {
	if !existed && initial {
		return []Event{podEvent(now, PodPresent, p)}
	}
	var out []Event
	if !existed {
		out = append(out, podEvent(now, PodCreated, p))
		old = podState{Ready: p.Ready, Node: p.Node}
	}
	if old.Node == "" && p.Node != "" {
		e := podEvent(now, PodBound, p)
		e.Detail = "node " + p.Node
		out = append(out, e)
	}
	if !old.Ready && p.Ready {
		out = append(out, podEvent(now, PodReady, p))
	}
	if old.Ready && !p.Ready {
		out = append(out, podEvent(now, PodUnready, p))
	}
	if existed && (old.TemplateHash != p.TemplateHash || old.SetRevision != p.SetRevision) {
		e := podEvent(now, PodRelabel, p)
		e.Detail = fmt.Sprintf("was hash %s revision %s", old.TemplateHash, old.SetRevision)
		out = append(out, e)
	}
	// A doomed pod's deletion was recorded when its PodClique's began.
	if !old.Terminating && p.Terminating && !p.Doomed {
		e := podEvent(now, PodDeleting, p)
		if p.Grace != nil {
			e.Detail = fmt.Sprintf("grace %ds", *p.Grace)
		}
		out = append(out, e)
	}
	return out
}

// childKinds are the event kinds of one child kind (PodClique or scaling group).
type childKinds struct {
	present, created, scaled, deleting, deleted EventKind
}

var (
	podCliqueKinds    = childKinds{PodCliquePresent, PodCliqueCreated, PodCliqueScaled, PodCliqueDeleting, PodCliqueDeleted}
	scalingGroupKinds = childKinds{ScalingGroupPresent, ScalingGroupCreated, ScalingGroupScaled, ScalingGroupDeleting, ScalingGroupDeleted}
)

func (r *recorder) observeClique(now time.Time, pc *v1alpha1.PodClique, initial bool) {
	c, err := cliqueStateOf(pc)
	if err != nil {
		r.timeline.add(noLabels(now, Ignored, "podclique/"+pc.Name, err.Error()))
		return
	}
	old, existed := r.snap.cliques[c.Name]
	after := r.snap.clone()
	after.cliques[c.Name] = c
	events := childChanges(now, podCliqueKinds, old, existed, c, initial)
	if c.Terminating && (!existed || !old.Terminating) {
		events = append(events, r.beginDoom(now, after, c, pc.ResourceVersion)...)
	}
	r.process(now, after, events)
}

// beginDoom dooms the pods of a PodClique whose deletion began (at
// resourceVersion rv): at once, or, when the pod watch has not passed rv yet,
// once it has. The two watches do not keep time with each other, and the
// pods as they were when the deletion began are known only then.
func (r *recorder) beginDoom(now time.Time, after *snapshot, c childState, rv string) []Event {
	if n := resourceVersion(rv); n > r.podRV {
		r.pending = append(r.pending, pendingDoom{clique: c, rv: n})
		return nil
	}
	return r.doom(now, after, c)
}

// settleDooms is told of every event of the pod watch (resourceVersion rv,
// before the event itself is recorded). The pod watch delivers changes in
// the order they were made, so the PodClique deletions made before rv are
// judged now, against the pods as they were when each was made. Like every
// resourceVersion comparison here, it relies on one etcd numbering the
// changes of pods and PodCliques alike, as the test clusters do.
func (r *recorder) settleDooms(now time.Time, rv uint64) {
	if rv == 0 {
		return
	}
	for len(r.pending) > 0 && r.pending[0].rv <= rv {
		d := r.pending[0]
		r.pending = r.pending[1:]
		after := r.snap.clone()
		r.process(now, after, r.doom(now, after, d.clique))
	}
	r.podRV = max(r.podRV, rv)
}

// resourceVersion reads a resourceVersion as the number etcd made it; 0 when
// it is not one.
func resourceVersion(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// doom marks the live pods of a PodClique being deleted as going away and
// returns their deletions, to be judged now. Deleting a PodClique is the
// operator's act; the garbage collector deletes its pods later (up to half a
// minute on a fresh cluster), when a fault may have taken other pods down
// meanwhile: judging then would blame the operator for the fault. The pods'
// own deletions later are recorded but not judged again.
func (r *recorder) doom(now time.Time, after *snapshot, c childState) []Event {
	var names []string
	for name, p := range after.pods {
		if p.cliqueKey == c.cliqueKey && !p.Terminating && !p.Doomed {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]Event, 0, len(names))
	for _, name := range names {
		p := after.pods[name]
		p.Doomed = true
		after.pods[name] = p
		r.doomed[name] = p.Created
		e := podEvent(now, PodDeleting, p)
		e.Detail = "its PodClique " + c.Name + " is being deleted"
		out = append(out, e)
	}
	return out
}

// forgetClique records that a PodClique is gone (at resourceVersion rv). One
// deleted in the background goes at once, before its pods: they are doomed
// then, as for a foreground deletion.
func (r *recorder) forgetClique(now time.Time, name, rv string) {
	old, ok := r.snap.cliques[name]
	if !ok {
		return
	}
	after := r.snap.clone()
	delete(after.cliques, name)
	events := []Event{childEvent(now, PodCliqueDeleted, old, "")}
	if !old.Terminating {
		events = append(events, r.beginDoom(now, after, old, rv)...)
	}
	r.process(now, after, events)
}

func (r *recorder) observeGroup(now time.Time, g *v1alpha1.PodCliqueScalingGroup, initial bool) {
	c, err := groupStateOf(g)
	if err != nil {
		r.timeline.add(noLabels(now, Ignored, "podcliquescalinggroup/"+g.Name, err.Error()))
		return
	}
	old, existed := r.snap.groups[c.Name]
	after := r.snap.clone()
	after.groups[c.Name] = c
	r.process(now, after, childChanges(now, scalingGroupKinds, old, existed, c, initial))
}

func (r *recorder) forgetGroup(now time.Time, name string) {
	old, ok := r.snap.groups[name]
	if !ok {
		return
	}
	after := r.snap.clone()
	delete(after.groups, name)
	r.process(now, after, []Event{childEvent(now, ScalingGroupDeleted, old, "")})
}

func childChanges(now time.Time, k childKinds, old childState, existed bool, c childState, initial bool) []Event {
	switch {
	case !existed && initial:
		return []Event{childEvent(now, k.present, c, fmt.Sprintf("replicas %d", c.Replicas))}
	case !existed:
		return []Event{childEvent(now, k.created, c, fmt.Sprintf("replicas %d", c.Replicas))}
	}
	var out []Event
	if old.Replicas != c.Replicas {
		out = append(out, childEvent(now, k.scaled, c, fmt.Sprintf("replicas %d → %d", old.Replicas, c.Replicas)))
	}
	if !old.Terminating && c.Terminating {
		out = append(out, childEvent(now, k.deleting, c, ""))
	}
	return out
}

// observeSet takes in the PodCliqueSet: a new spec generation, the operator
// catching up with one, or the start of its deletion.
func (r *recorder) observeSet(now time.Time, pcs *v1alpha1.PodCliqueSet) {
	r.takeSet(now, pcs)
	if pcs.DeletionTimestamp != nil && !r.setGone {
		r.setGone = true
		r.timeline.add(noLabels(now, SetDeleting, pcs.Name, "checks stop"))
	}
	r.hist.advance(r.specs.live(now), r.snap)
}

func (r *recorder) forgetSet(now time.Time, name string) {
	if !r.setGone {
		r.setGone = true
		r.timeline.add(noLabels(now, SetDeleting, name, "deleted; checks stop"))
	}
}

// takeSet records a PodCliqueSet's spec and status; it reports whether the spec
// is newer than every one seen before.
func (r *recorder) takeSet(now time.Time, pcs *v1alpha1.PodCliqueSet) bool {
	newer := false
	previous := r.specs.newest()
	if t, err := newTarget(pcs); err != nil {
		r.timeline.add(noLabels(now, SpecUnusable, pcs.Name, err.Error()))
	} else if r.specs.add(t, now) {
		newer = true
		r.timeline.add(noLabels(now, SpecChanged, pcs.Name, t.summary()))
		if previous != nil && previous.key != t.key {
			r.hist.restart(t.key)
		}
	}
	if r.specs.observe(pcs.Status.ObservedGeneration, now) {
		r.timeline.add(noLabels(now, SpecObserved, pcs.Name, fmt.Sprintf("observedGeneration %d", pcs.Status.ObservedGeneration)))
	}
	return newer
}

// announce records a deletion the test is about to make.
func (r *recorder) announce(now time.Time, x expectedDeletion, what string) {
	x.at = now
	r.expected.add(x)
	r.timeline.add(noLabels(now, DeletionAnnounced, what, ""))
}

// process records events that took the snapshot to after, checking each one.
func (r *recorder) process(now time.Time, after *snapshot, events []Event) {
	if r.watchLost {
		r.watchLost = false
		r.relistUntil = now.Add(relistWindow)
		r.timeline.add(noLabels(now, Relisted, "watch", fmt.Sprintf("the events of the next %s are a relist's: recorded, not judged", relistWindow)))
	}
	before := r.snap
	for _, ev := range events {
		judged := true
		if ev.Kind == PodDeleting || ev.Kind == PodDeleted {
			if p, ok := before.pods[ev.Name]; ok && !p.Terminating && !p.Doomed {
				ev.Announced = r.expected.claim(p)
			}
			// judged when its PodClique's deletion began (doom)
			judged = !before.pods[ev.Name].Doomed
		}
		r.timeline.add(ev)
		if judged && !r.setGone && !now.Before(r.relistUntil) {
			r.record(r.check(now, before, after, ev))
		}
		r.hist.note(ev)
	}
	r.snap = after
	r.hist.advance(r.specs.live(now), after)
}

// check runs the invariants on one event. A violation found against the
// watched spec is confirmed against a fresh read first: the operator may have
// acted on a spec the watch has not delivered yet.
func (r *recorder) check(now time.Time, before, after *snapshot, ev Event) []Violation {
	switch ev.Kind {
	case PodCreated, PodDeleting, PodDeleted, PodCliqueCreated, ScalingGroupCreated:
	default:
		return nil
	}
	if r.specs.newest() == nil {
		r.readFreshSpec(now, before)
	}
	vs := checkEvent(r.specs.live(now), r.hist, before, after, ev)
	if len(vs) > 0 && r.readFreshSpec(now, before) {
		vs = checkEvent(r.specs.live(now), r.hist, before, after, ev)
	}
	if len(vs) > 0 && (ev.Kind == PodDeleting || ev.Kind == PodDeleted) && !ev.Announced && r.opts.DeletedByNodeAgent != nil {
		if evidence, ok := r.opts.DeletedByNodeAgent(ev.Name, before.pods[ev.Name].Created, now); ok {
			r.timeline.add(noLabels(now, NodeAgentDeletion, ev.Name, evidence))
			return nil
		}
	}
	return vs
}

// readFreshSpec reads the PodCliqueSet past the watch and reports whether that
// gave a newer spec.
func (r *recorder) readFreshSpec(now time.Time, current *snapshot) bool {
	if r.readSpec == nil {
		return false
	}
	pcs, err := r.readSpec()
	if err != nil {
		r.timeline.add(noLabels(now, SpecUnusable, "", "reading the PodCliqueSet: "+err.Error()))
		return false
	}
	if !r.takeSet(now, pcs) {
		return false
	}
	r.hist.advance(r.specs.live(now), current)
	return true
}

func (r *recorder) record(vs []Violation) {
	for _, v := range vs {
		r.timeline.add(noLabels(v.Time, ViolationFound, string(v.Invariant), v.Detail))
		v.Timeline = r.timeline.tail(r.opts.ExcerptSize)
		v.start = r.timeline.start
		if len(r.violations) < maxViolations {
			r.violations = append(r.violations, v)
		}
	}
}
