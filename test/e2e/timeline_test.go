//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// What held at every moment of a rollout, rebuilt from the monitor's timeline:
// the end state alone cannot show the order pods were replaced in or how low
// availability went on the way.

// podRecord is a pod as the timeline knows it.
type podRecord struct {
	replica, groupReplica, index int32
	group, clique, hash          string
	ready, terminating           bool
}

// replay walks the timeline, calling visit after each event with the pods
// that exist at that moment. Pods already present when the monitor started
// count as Ready (tests start their monitor before creating anything, so
// there are none).
func replay(events []monitor.Event, visit func(e monitor.Event, pods map[string]*podRecord)) {
	pods := map[string]*podRecord{}
	for _, e := range events {
		p := pods[e.Name]
		switch e.Kind {
		case monitor.PodPresent, monitor.PodCreated:
			p = &podRecord{replica: e.Replica, groupReplica: e.GroupReplica, index: e.Index, group: e.Group, clique: e.Clique,
				hash: e.TemplateHash, ready: e.Kind == monitor.PodPresent}
			pods[e.Name] = p
		case monitor.PodReady, monitor.PodUnready:
			if p != nil {
				p.ready = e.Kind == monitor.PodReady
			}
		case monitor.PodRelabel:
			if p != nil {
				p.hash = e.TemplateHash
			}
		case monitor.PodDeleting:
			if p != nil {
				p.terminating = true
			}
		case monitor.PodDeleted:
			delete(pods, e.Name)
		}
		visit(e, pods)
	}
}

// availableUnits counts the units of a role of one PCS replica that are
// available (Ready and not going away; minReadySeconds is 0 in these tests): pods of a
// standalone clique, or group replicas whose every member clique has its
// minAvailable.
func availableUnits(spec *v1alpha1.PodCliqueSetSpec, pods map[string]*podRecord, replica int32, role string) int32 {
	for _, g := range spec.Template.PodCliqueScalingGroups {
		if g.Name != role {
			continue
		}
		ready := map[int32]map[string]int32{} // group replica → member clique → available pods
		for _, p := range pods {
			if p.replica == replica && p.group == role && p.ready && !p.terminating {
				if ready[p.groupReplica] == nil {
					ready[p.groupReplica] = map[string]int32{}
				}
				ready[p.groupReplica][p.clique]++
			}
		}
		n := int32(0)
		for _, members := range ready {
			whole := true
			for _, name := range g.CliqueNames {
				if c := spec.Template.Clique(name); c == nil || members[name] < c.EffectiveMinAvailable() {
					whole = false
				}
			}
			if whole {
				n++
			}
		}
		return n
	}
	n := int32(0)
	for _, p := range pods {
		if p.replica == replica && p.group == "" && p.clique == role && p.ready && !p.terminating {
			n++
		}
	}
	return n
}

// leastAvailable is, for each "<replica>/<role>", the fewest available units
// at any moment from from on.
func leastAvailable(events []monitor.Event, spec *v1alpha1.PodCliqueSetSpec, from time.Time) map[string]int32 {
	out := map[string]int32{}
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		if e.Time.Before(from) {
			return
		}
		for r := range *spec.Replicas {
			for _, role := range roles(spec) {
				k := fmt.Sprintf("%d/%s", r, role)
				n := availableUnits(spec, pods, r, role)
				if least, ok := out[k]; !ok || n < least {
					out[k] = n
				}
			}
		}
	})
	return out
}

// roles are the standalone cliques and the scaling groups of spec.
func roles(spec *v1alpha1.PodCliqueSetSpec) []string {
	var out []string
	for _, c := range spec.Template.Cliques {
		if spec.Template.ScalingGroupOf(c.Name) == nil {
			out = append(out, c.Name)
		}
	}
	for _, g := range spec.Template.PodCliqueScalingGroups {
		out = append(out, g.Name)
	}
	return out
}

// roleUnits is the number of units of a role: pods of a standalone clique,
// replicas of a scaling group.
func roleUnits(spec *v1alpha1.PodCliqueSetSpec, role string) int32 {
	for _, g := range spec.Template.PodCliqueScalingGroups {
		if g.Name == role {
			return g.Replicas
		}
	}
	if c := spec.Template.Clique(role); c != nil {
		return c.Replicas
	}
	return 0
}

// operatorDeletions are the pod deletions from from on that the test did not
// announce, in the order they happened, of pods that had been scheduled.
//
// A pod deleted before it was ever bound is left out, and logged: no rollout
// step deletes a pod it has just created, but kwok (which plays the kubelet
// here) deletes pods by name, without a UID precondition, so a delete it
// retries for a pod already gone can hit the new pod that took its name. The
// operator has to recreate that pod, which the tests' end states check.
func operatorDeletions(t testing.TB, events []monitor.Event, from time.Time) []monitor.Event {
	t.Helper()
	var out []monitor.Event
	// pod names come back (stable indices): a deletion is the first
	// deleting-or-deleted event since the pod of that name was created
	deleting, bound := map[string]bool{}, map[string]bool{}
	for _, e := range events {
		switch e.Kind {
		case monitor.PodCreated, monitor.PodPresent:
			delete(deleting, e.Name)
			bound[e.Name] = e.Kind == monitor.PodPresent
		case monitor.PodBound:
			bound[e.Name] = true
		case monitor.PodDeleting, monitor.PodDeleted:
			switch {
			case deleting[e.Name] || e.Announced || e.Time.Before(from):
			case !bound[e.Name]:
				t.Logf("pod %s (hash %s) was deleted before it was ever scheduled, not by a rollout step; left out of the deletions checked", e.Name, e.TemplateHash)
			default:
				out = append(out, e)
			}
			deleting[e.Name] = true
		}
	}
	return out
}

// firstMoment is the time of the first event from from on after which cond
// holds, and whether there is one.
func firstMoment(events []monitor.Event, from time.Time, cond func(pods map[string]*podRecord) bool) (time.Time, bool) {
	var at time.Time
	found := false
	replay(events, func(e monitor.Event, pods map[string]*podRecord) {
		if found || e.Time.Before(from) {
			return
		}
		if cond(pods) {
			at, found = e.Time, true
		}
	})
	return at, found
}

// startup is how long the pods created from from on took to go from bound to
// Ready (and from created to Ready), when the last of them turned Ready, and
// how long the pods deleted from from on took to go away.
type startup struct {
	pods               int
	mean, longest      time.Duration
	meanCreateToUp     time.Duration
	lastReady          time.Time
	deleted            int
	meanDeletingToGone time.Duration
}

func startupOf(events []monitor.Event, from time.Time) startup {
	var s startup
	var total, totalFromCreate, totalGone time.Duration
	created, bound, deleting := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	for _, e := range events {
		if e.Time.Before(from) {
			continue
		}
		switch e.Kind {
		case monitor.PodCreated:
			created[e.Name], bound[e.Name] = e.Time, time.Time{}
		case monitor.PodBound:
			if _, ok := created[e.Name]; ok {
				bound[e.Name] = e.Time
			}
		case monitor.PodReady:
			b, ok := bound[e.Name]
			if !ok || b.IsZero() {
				continue
			}
			d := e.Time.Sub(b)
			s.pods++
			total += d
			totalFromCreate += e.Time.Sub(created[e.Name])
			s.longest = max(s.longest, d)
			s.lastReady = e.Time
			delete(bound, e.Name)
		case monitor.PodDeleting:
			deleting[e.Name] = e.Time
		case monitor.PodDeleted:
			if at, ok := deleting[e.Name]; ok {
				s.deleted++
				totalGone += e.Time.Sub(at)
				delete(deleting, e.Name)
			}
		}
	}
	if s.pods > 0 {
		s.mean = total / time.Duration(s.pods)
		s.meanCreateToUp = totalFromCreate / time.Duration(s.pods)
	}
	if s.deleted > 0 {
		s.meanDeletingToGone = totalGone / time.Duration(s.deleted)
	}
	return s
}

// indicesOf are the pod indices of events, in order.
func indicesOf(events []monitor.Event) []int32 {
	out := make([]int32, 0, len(events))
	for _, e := range events {
		out = append(out, e.Index)
	}
	return out
}

// filterEvents keeps the events keep accepts.
func filterEvents(events []monitor.Event, keep func(monitor.Event) bool) []monitor.Event {
	return slices.DeleteFunc(slices.Clone(events), func(e monitor.Event) bool { return !keep(e) })
}
