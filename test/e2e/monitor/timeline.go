package monitor

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// EventKind says what happened to an object.
type EventKind string

// What the monitor records. Pods get the most detail: they are the units whose
// order a rollout test asserts.
const (
	MonitorStarted EventKind = "monitor-started"
	WatchLost      EventKind = "watch-lost" // a watch failed; a relist follows
	Relisted       EventKind = "relisted"   // the first event after a lost watch

	PodPresent  EventKind = "pod-present" // already there when the monitor started
	PodCreated  EventKind = "pod-created"
	PodBound    EventKind = "pod-bound"
	PodReady    EventKind = "pod-ready"
	PodUnready  EventKind = "pod-unready"
	PodRelabel  EventKind = "pod-relabelled" // template hash or revision label changed
	PodDeleting EventKind = "pod-deleting"   // got a deletionTimestamp
	PodDeleted  EventKind = "pod-deleted"    // gone from the apiserver
	Ignored     EventKind = "ignored"        // labels missing: the monitor cannot place the object

	PodCliquePresent  EventKind = "podclique-present"
	PodCliqueCreated  EventKind = "podclique-created"
	PodCliqueScaled   EventKind = "podclique-scaled"
	PodCliqueDeleting EventKind = "podclique-deleting"
	PodCliqueDeleted  EventKind = "podclique-deleted"

	ScalingGroupPresent  EventKind = "scalinggroup-present"
	ScalingGroupCreated  EventKind = "scalinggroup-created"
	ScalingGroupScaled   EventKind = "scalinggroup-scaled"
	ScalingGroupDeleting EventKind = "scalinggroup-deleting"
	ScalingGroupDeleted  EventKind = "scalinggroup-deleted"

	SpecChanged  EventKind = "pcs-spec"     // a new generation of the PodCliqueSet spec
	SpecObserved EventKind = "pcs-observed" // status.observedGeneration caught up
	SetDeleting  EventKind = "pcs-deleting" // checks stop: everything is going away
	SpecUnusable EventKind = "pcs-unusable" // a spec the checks cannot read

	DeletionAnnounced EventKind = "deletion-announced"
	// NodeAgentDeletion: a deletion the node agent made on its own, by its
	// own record (Options.DeletedByNodeAgent), not judged.
	NodeAgentDeletion EventKind = "node-agent-deletion"
	ViolationFound    EventKind = "violation"
)

// Event is one entry of the timeline. Fields that do not apply are empty, or -1
// for indices.
type Event struct {
	Time time.Time
	Kind EventKind
	// Name is the object's name.
	Name         string
	Replica      int32
	Group        string
	GroupReplica int32
	Clique       string
	Index        int32 // pod index
	TemplateHash string
	Revision     string // PodCliqueSet revision label
	// Announced marks a pod deletion the test announced with ExpectDeletion.
	Announced bool
	Detail    string
}

// noLabels is an Event with every index unset.
func noLabels(now time.Time, kind EventKind, name, detail string) Event {
	return Event{Time: now, Kind: kind, Name: name, Replica: -1, GroupReplica: -1, Index: -1, Detail: detail}
}

func podEvent(now time.Time, kind EventKind, p podState) Event {
	return Event{Time: now, Kind: kind, Name: p.Name, Replica: p.Replica, Group: p.Group, GroupReplica: p.GroupReplica,
		Clique: p.Clique, Index: p.Index, TemplateHash: p.TemplateHash, Revision: p.SetRevision}
}

func childEvent(now time.Time, kind EventKind, c childState, detail string) Event {
	return Event{Time: now, Kind: kind, Name: c.Name, Replica: c.Replica, Group: c.Group, GroupReplica: c.GroupReplica,
		Clique: c.Clique, Index: -1, Detail: detail}
}

// format renders an event on one line, its time relative to start.
func (e Event) format(start time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%9.3fs %-22s %s", e.Time.Sub(start).Seconds(), e.Kind, e.Name)
	var attrs []string
	if e.Replica >= 0 {
		attrs = append(attrs, fmt.Sprintf("replica=%d", e.Replica))
	}
	if e.Group != "" {
		if e.GroupReplica >= 0 {
			attrs = append(attrs, fmt.Sprintf("group=%s-%d", e.Group, e.GroupReplica))
		} else {
			attrs = append(attrs, "group="+e.Group)
		}
	}
	if e.Clique != "" {
		attrs = append(attrs, "clique="+e.Clique)
	}
	if e.Index >= 0 {
		attrs = append(attrs, fmt.Sprintf("index=%d", e.Index))
	}
	if e.TemplateHash != "" {
		attrs = append(attrs, "hash="+e.TemplateHash)
	}
	if e.Revision != "" {
		attrs = append(attrs, "revision="+e.Revision)
	}
	if e.Announced {
		attrs = append(attrs, "announced")
	}
	if len(attrs) > 0 {
		b.WriteString(" [" + strings.Join(attrs, " ") + "]")
	}
	if e.Detail != "" {
		b.WriteString(" " + e.Detail)
	}
	return b.String()
}

// timeline is a ring of the most recent events: memory stays bounded however
// long a test runs.
type timeline struct {
	start   time.Time
	buf     []Event
	next    int
	full    bool
	dropped int
}

func newTimeline(start time.Time, size int) *timeline {
	return &timeline{start: start, buf: make([]Event, size)}
}

func (t *timeline) add(e Event) {
	if t.full {
		t.dropped++
	}
	t.buf[t.next] = e
	t.next = (t.next + 1) % len(t.buf)
	t.full = t.full || t.next == 0
}

// events are the kept events, oldest first.
func (t *timeline) events() []Event {
	if !t.full {
		return append([]Event(nil), t.buf[:t.next]...)
	}
	return append(append([]Event(nil), t.buf[t.next:]...), t.buf[:t.next]...)
}

// tail is the last n events, oldest first.
func (t *timeline) tail(n int) []Event {
	all := t.events()
	return all[max(0, len(all)-n):]
}

// writeEvents prints events one a line, times relative to start.
func writeEvents(w io.Writer, start time.Time, dropped int, events []Event) error {
	if dropped > 0 {
		if _, err := fmt.Fprintf(w, "(%d earlier events dropped)\n", dropped); err != nil {
			return err
		}
	}
	for _, e := range events {
		if _, err := fmt.Fprintln(w, e.format(start)); err != nil {
			return err
		}
	}
	return nil
}
