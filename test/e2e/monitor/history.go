package monitor

import (
	"time"

	"github.com/lockstep-dev/lockstep/internal/invariant"
)

// history is what the checks remember from earlier snapshots: a snapshot alone
// cannot say which role steps were already passed, or what a role ran before its
// last pod went away.
type history struct {
	// stepsDone is how many roleUpgrade steps a PCS replica has satisfied for one
	// rollout target. A step once passed stays passed, as the planner keeps it.
	stepsDone map[replicaTarget]int
	// updating marks PCS replicas that had pods off the target's templates: only
	// those are being rolled, so only those are held to the step order (a brand-new
	// replica starts on the target at once).
	updating map[replicaTarget]bool
	// lastRan is what each role of each PCS replica ran the last time it had pods.
	lastRan map[roleKey][]cliqueHash
	// slots is what happened last at each pod index.
	slots map[slotKey]slot
}

// slotKey is one pod index of one clique (of one scaling-group replica).
type slotKey struct {
	replica      int32
	group        string
	groupReplica int32
	clique       string
	index        int32
}

// slot: the template hash of the last pod created at an index, and whether and
// when the operator (not the test) emptied it since.
type slot struct {
	hash        string
	emptiedAt   time.Time
	byOperator  bool
	everCreated bool
}

func slotOf(ev Event) slotKey {
	return slotKey{ev.Replica, ev.Group, ev.GroupReplica, ev.Clique, ev.Index}
}

// note takes in a pod event after the checks have seen it.
func (h *history) note(ev Event) {
	k := slotOf(ev)
	switch ev.Kind {
	case PodCreated:
		h.slots[k] = slot{hash: ev.TemplateHash, everCreated: true}
	case PodDeleting, PodDeleted:
		s := h.slots[k]
		if s.emptiedAt.IsZero() {
			s.emptiedAt, s.byOperator = ev.Time, !ev.Announced
			h.slots[k] = s
		}
	}
}

type replicaTarget struct {
	target  string
	replica int32
}

type roleKey struct {
	replica int32
	role    string
}

type cliqueHash struct {
	clique, hash string
}

func newHistory() *history {
	return &history{stepsDone: map[replicaTarget]int{}, updating: map[replicaTarget]bool{}, lastRan: map[roleKey][]cliqueHash{}, slots: map[slotKey]slot{}}
}

// advance takes in a snapshot that the checks have passed on.
func (h *history) advance(targets []*target, s *snapshot) {
	ran := map[roleKey][]cliqueHash{}
	for _, p := range s.pods {
		k := roleKey{p.Replica, p.role()}
		ran[k] = append(ran[k], cliqueHash{p.Clique, p.TemplateHash})
	}
	for k, v := range ran {
		h.lastRan[k] = v
	}
	for _, t := range targets {
		if len(t.steps) == 0 {
			continue
		}
		for replica := range s.replicaIndices() {
			k := replicaTarget{t.key, replica}
			h.updating[k] = h.updating[k] || hasOutdated(t, s, replica)
			h.stepsDone[k] = invariant.StepsDone(t.steps, h.stepsDone[k], stepRoles(t, s, replica))
		}
	}
}

// restart forgets the step progress of a rollout target that becomes the
// target again (a rollback): the planner starts the steps over whenever the
// update revision changes.
func (h *history) restart(target string) {
	for k := range h.stepsDone {
		if k.target == target {
			delete(h.stepsDone, k)
		}
	}
	for k := range h.updating {
		if k.target == target {
			delete(h.updating, k)
		}
	}
}

// ran is what a role of a PCS replica runs: its pods now, or what it ran when it
// last had pods. Empty for a role that never had a pod.
func (h *history) ran(s *snapshot, replica int32, role string) []cliqueHash {
	pods := s.podsOfRole(replica, role)
	if len(pods) == 0 {
		return h.lastRan[roleKey{replica, role}]
	}
	out := make([]cliqueHash, 0, len(pods))
	for _, p := range pods {
		out = append(out, cliqueHash{p.Clique, p.TemplateHash})
	}
	return out
}
