package planview

import (
	"fmt"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// An entry is one line of the text timeline: one action, or a delete and a
// create of the same unit at the same instant (a replace), with the pods created
// inside a new group replica or PodCliqueSet replica folded into it.
type entry struct {
	at      time.Duration
	level   simulate.Level
	replica int32
	role    string // clique or scaling group; "" for a whole PodCliqueSet replica
	member  bool   // a pod of a clique inside a scaling group
	index   int32  // the unit's index at its level
	unit    string // object name without "<pcs>-<replica>-"; "" for a whole replica
	op      string // create, delete or replace
	from    string // revision label of the deleted unit
	to      string // revision label of the created unit
	toNew   bool   // the created unit is on the new revision
	surge   bool
	reason  rollout.DeleteReason
	byHand  bool
	pods    int // pods created with it
	fault   *simulate.Fault
}

// unitKey identifies a unit at one level.
type unitKey struct {
	level        simulate.Level
	replica      int32
	role, group  string
	groupReplica int32
	index        int32
}

func keyOf(a simulate.Action) unitKey {
	k := unitKey{level: a.Level, replica: a.Replica, role: a.Role, index: a.Index}
	if a.Group != "" {
		k.group, k.groupReplica = a.Group, a.GroupReplica
	}
	return k
}

// entries turns the timeline into lines.
func (p *Plan) entries() []entry {
	tl := p.Result.Timeline
	hits := p.faultHits()
	var out []entry
	for start := 0; start < len(tl); {
		end := start
		for end < len(tl) && tl[end].At == tl[start].At {
			end++
		}
		out = append(out, p.instant(tl[start:end], start, hits)...)
		start = end
	}
	return out
}

// instant builds the entries of the actions of one instant; offset is the index
// of the first of them in the timeline.
func (p *Plan) instant(acts []simulate.Action, offset int, hits map[int]simulate.Fault) []entry {
	// parents: units created at this instant that hold other units
	newReplica := map[int32]int{} // PCS replica -> entry index
	newGroup := map[unitKey]int{} // group replica -> entry index
	deleted := map[unitKey]int{}  // unit -> entry index of its delete
	var out []entry
	attach := func(i, j int) {
		if acts[j].Level == simulate.LevelPodClique {
			out[i].pods++
		}
		if f, ok := hits[offset+j]; ok && out[i].fault == nil {
			out[i].fault = &f
		}
	}
	for j, a := range acts {
		k := keyOf(a)
		if a.Op == simulate.OpCreate {
			if i, ok := newReplica[a.Replica]; ok && a.Level != simulate.LevelPodCliqueSet {
				attach(i, j)
				continue
			}
			if a.Group != "" {
				gk := unitKey{level: simulate.LevelPodCliqueScalingGroup, replica: a.Replica, role: a.Group, index: a.GroupReplica}
				if i, ok := newGroup[gk]; ok {
					attach(i, j)
					continue
				}
			}
		}
		e := p.entryOf(a)
		if f, ok := hits[offset+j]; ok {
			e.fault = &f
		}
		if a.Op == simulate.OpCreate {
			if i, ok := deleted[k]; ok {
				// the delete and this create are one replace
				d := &out[i]
				d.op, d.to, d.toNew, d.surge, d.fault = "replace", e.to, e.toNew, e.surge, e.fault
				d.pods = e.pods
				delete(deleted, k)
				p.registerParent(a, i, newReplica, newGroup)
				continue
			}
			out = append(out, e)
			p.registerParent(a, len(out)-1, newReplica, newGroup)
			continue
		}
		out = append(out, e)
		deleted[k] = len(out) - 1
	}
	return out
}

func (p *Plan) registerParent(a simulate.Action, i int, newReplica map[int32]int, newGroup map[unitKey]int) {
	switch a.Level {
	case simulate.LevelPodCliqueSet:
		newReplica[a.Replica] = i
	case simulate.LevelPodCliqueScalingGroup:
		newGroup[keyOf(a)] = i
	}
}

// entryOf renders one action as an entry of its own.
func (p *Plan) entryOf(a simulate.Action) entry {
	e := entry{at: a.At, level: a.Level, replica: a.Replica, role: a.Role, member: a.Group != "",
		index: a.Index, op: string(a.Op), surge: a.Surge, reason: a.Reason, byHand: a.ByHand}
	switch {
	case a.Level == simulate.LevelPodCliqueSet:
		e.role = ""
	case a.Group != "":
		e.unit = fmt.Sprintf("%s-%d-%s-%d", a.Group, a.GroupReplica, a.Role, a.Index)
	default:
		e.unit = fmt.Sprintf("%s-%d", a.Role, a.Index)
	}
	if a.Level == simulate.LevelPodClique {
		e.pods = 1
	}
	from, to := p.revisionsOf(a)
	label := func(rev string) string {
		switch {
		case from == to:
			// the template did not change: name the revision itself
		case rev == to:
			return "new"
		case rev == from:
			return "old"
		}
		return "@" + shortRevision(p.Name, rev)
	}
	if a.Op == simulate.OpCreate {
		e.to, e.toNew = label(a.To), a.To == to
	} else {
		e.from = label(a.From)
	}
	return e
}

// revisionsOf returns the old and the new revision at the level of a.
func (p *Plan) revisionsOf(a simulate.Action) (from, to string) {
	if a.Level == simulate.LevelPodCliqueSet {
		return p.FromRevision.Name, p.ToRevision.Name
	}
	from, _ = p.FromRevision.Role(a.Role)
	to, _ = p.ToRevision.Role(a.Role)
	return from, to
}

// stepper works out which role step of a RollingUpdate with roleUpgrade steps
// each update belongs to.
type stepper struct {
	steps   []v1alpha1.RoleUpgradeStep
	targets []int32 // resolved updateTo of each step
	// updated holds the indices created on the new revision per replica and role
	updated map[int32]map[string]map[int32]bool
}

func (p *Plan) newStepper() *stepper {
	st := p.To.UpdateStrategy
	if p.strategy() != v1alpha1.RollingUpdateStrategyType || st.RoleUpgrade == nil || len(st.RoleUpgrade.Steps) == 0 {
		return nil
	}
	s := &stepper{steps: st.RoleUpgrade.Steps, updated: map[int32]map[string]map[int32]bool{}}
	for _, step := range s.steps {
		n := int32(0)
		if r := p.role(step.Role); r != nil {
			n, _ = rollout.ResolveUpdateTo(step.UpdateTo, r.Units)
		}
		s.targets = append(s.targets, n)
	}
	return s
}

// updates reports whether an entry moves a unit of a role towards the new
// revision: it creates a new-revision unit, or deletes an old one for the update.
func (e entry) updates() bool {
	if e.role == "" || e.member || e.level == simulate.LevelPodCliqueSet {
		return false
	}
	if e.op == "delete" {
		return e.from == "old" && (e.reason == rollout.ReasonUpdate || e.reason == rollout.ReasonReplaceFailed)
	}
	return e.toNew
}

// step returns the step (0-based) an update of a role belongs to, len(steps)
// for roles updated after the last step, and -1 for entries that are no update.
// A delete belongs to the step of the create that will refill its index.
func (s *stepper) step(e entry) int {
	if !e.updates() {
		return -1
	}
	if s.updated[e.replica] == nil {
		s.updated[e.replica] = map[string]map[int32]bool{}
	}
	seen := s.updated[e.replica][e.role]
	if seen == nil {
		seen = map[int32]bool{}
		s.updated[e.replica][e.role] = seen
	}
	n := int32(len(seen))
	switch {
	case e.op != "delete":
		seen[e.index] = true
		n = int32(len(seen))
	case !seen[e.index]:
		n++
	}
	for i, step := range s.steps {
		if step.Role == e.role && s.targets[i] >= n {
			return i
		}
	}
	return len(s.steps)
}
