package simulate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/invariant"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// checker verifies the rollout invariants on every plan and on the state after
// it. It translates the model and the spec into the rules' snapshots and asks
// package invariant; it recomputes what it needs, not the planner's reasoning.
type checker struct {
	rev      string // update revision of the previous pass
	updated  map[roleKey]int32
	outdated map[int32]bool // replica had live outdated units at the previous pass
	prefix   map[int32]int  // role steps satisfied so far, per replica
	// underWay, while paused, is how many updated units each role may reach:
	// those it had when the pause began plus its indices emptied by then (a
	// replacement under way finishes on the update revision). Nil when not paused.
	underWay map[roleKey]int32
	// replicasUnderWay, while paused, are the PCS replicas that were empty or
	// terminating when the pause began: a ReplicaRecreate recreation under way
	// brings them back on the update revision.
	replicasUnderWay map[int32]bool
	// approved are the approvals given (revision@checkpoint); started when
	// each replica first had a unit on the update revision of rev
	approved map[string]bool
	// passed are the analyses measured as passed (revision@checkpoint)
	passed  map[string]bool
	started map[int32]time.Duration
}

// roleKey names a role of a replica at one of its template revisions.
type roleKey struct {
	replica   int32
	role, rev string
}

func newChecker() *checker {
	return &checker{updated: map[roleKey]int32{}, outdated: map[int32]bool{}, prefix: map[int32]int{}, approved: map[string]bool{},
		passed: map[string]bool{}, started: map[int32]time.Duration{}}
}

// approve notes an approval of gate in the rollout to rev.
func (c *checker) approve(rev, gate string) {
	c.approved[v1alpha1.ApprovalOf(rev, gate)] = true
}

// pass notes a passed analysis of gate in the rollout to rev.
func (c *checker) pass(rev, gate string) {
	c.passed[v1alpha1.ApprovalOf(rev, gate)] = true
}

// opened counts the checkpoints replicas-N of the rollout to rev in set.
func opened(set map[string]bool, rev string) int {
	n := 0
	for name := range set {
		if strings.HasPrefix(name, v1alpha1.ApprovalOf(rev, "replicas-")) {
			n++
		}
	}
	return n
}

// gates checks that no PodCliqueSet replica started past a closed gate: by
// count against the approvals, and by time against the soak.
func (c *checker) gates(s *sim) string {
	g := s.spec.UpdateStrategy.Gate
	typ := s.spec.UpdateStrategy.Type
	if g == nil || s.spec.Paused || typ == v1alpha1.OnDeleteStrategyType {
		return ""
	}
	hold := invariant.HoldOf(s.spec)
	var started []int32
	for _, r := range s.model.replicas {
		if r.terminating || r.index < hold.Partition || r.index >= *s.spec.Replicas {
			continue
		}
		for _, st := range s.roleStates(r) {
			if st.updated > 0 && s.roleChanging(st.name) {
				started = append(started, r.index)
				if _, seen := c.started[r.index]; !seen {
					c.started[r.index] = s.now
				}
				break
			}
		}
	}
	wave := int32(1)
	if typ == v1alpha1.ReplicaRecreateStrategyType {
		mu, ms := s.spec.UpdateStrategy.RollingUpdate.Limits()
		fp, err := rollout.ResolveFenceposts(ms, mu, *s.spec.Replicas)
		if err != nil {
			return err.Error()
		}
		wave = fp.MaxUnavailable + fp.MaxSurge
	}
	if g.Approval {
		if v := first(invariant.CheckReplicaGates(started, wave, opened(c.approved, s.revs.Update.Name))); v != "" {
			return v
		}
	} else if g.Analysis != nil {
		// an analysis alone opens a checkpoint only by passing
		if v := first(invariant.CheckReplicaGates(started, wave, opened(c.passed, s.revs.Update.Name))); v != "" {
			return v
		}
	}
	if g.SoakSeconds > 0 && wave == 1 {
		starts := slices.Sorted(maps.Values(c.started))
		if v := first(invariant.CheckSoak(starts, time.Duration(g.SoakSeconds)*time.Second)); v != "" {
			return v
		}
	}
	return ""
}

// plan checks the actions of one plan against the state they were planned on.
func (c *checker) plan(s *sim, in rollout.SetInput, tree rollout.TreePlan) string {
	hold := invariant.HoldOf(s.spec)
	c.notePause(hold, in, tree, s.spec)
	if v := checkLevel("podcliqueset", tree.Set.Policy, s.replicaUnits(in), tree.Set.Creates, tree.Set.Deletes); v != "" {
		return v
	}
	for _, d := range tree.Set.Deletes {
		if v := heldDelete(hold, d.Index, d); v != "" {
			return v
		}
	}
	for _, cp := range tree.Children {
		units := childUnits(in, cp, s.spec)
		name := fmt.Sprintf("replica %d %s %s", cp.Replica, cp.Kind, cp.Role)
		if v := checkLevel(name, cp.Policy, units, cp.Level.Creates, cp.Level.Deletes); v != "" {
			return v
		}
		for _, d := range cp.Level.Deletes {
			if v := heldDelete(hold, cp.Replica, d); v != "" {
				return v
			}
		}
	}
	return ""
}

// notePause records, on the first plan made while paused, the updated units each
// role may still reach: the ones it has plus its empty or terminating indices.
func (c *checker) notePause(hold invariant.Hold, in rollout.SetInput, tree rollout.TreePlan, spec *v1alpha1.PodCliqueSetSpec) {
	if !hold.Paused {
		c.underWay, c.replicasUnderWay = nil, nil
		return
	}
	if c.underWay != nil {
		return
	}
	c.underWay, c.replicasUnderWay = map[roleKey]int32{}, map[int32]bool{}
	if spec.UpdateStrategy.Type == v1alpha1.ReplicaRecreateStrategyType {
		live := map[int32]bool{}
		for _, r := range in.Replicas {
			live[r.Index] = live[r.Index] || !r.Terminating
		}
		for i := max(hold.Partition, 0); i < *spec.Replicas; i++ {
			c.replicasUnderWay[i] = !live[i]
		}
	}
	for _, cp := range tree.Children {
		if cp.Kind == rollout.KindMember {
			continue
		}
		// Indices, not units: a surge unit beside the one it replaces
		// (surgePlacement ReplacedIndex) fills no other index.
		live := map[int32]bool{}
		var updated int32
		for _, u := range childUnits(in, cp, spec) {
			if u.Terminating || u.Index < 0 || u.Index >= cp.Policy.Replicas {
				continue
			}
			live[u.Index] = true
			if u.Revision == cp.Policy.UpdateRevision {
				updated++
			}
		}
		c.underWay[roleKey{cp.Replica, cp.Role, cp.Policy.UpdateRevision}] = updated + max(0, cp.Policy.Replicas-int32(len(live)))
	}
}

// heldDelete: a deletion for an update moves its PCS replica toward the target.
func heldDelete(hold invariant.Hold, replica int32, d rollout.Delete) string {
	if !(invariant.Deletion{Index: d.Index, Reason: d.Reason}).ForUpdate() {
		return ""
	}
	return first(invariant.CheckHeld(hold, replica, fmt.Sprintf("unit %d deleted for an update", d.Index)))
}

// first is the first violation as the simulator reports it, "" for none.
func first(vs []invariant.Violation) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0].String()
}

// checkLevel judges one level's plan against the units it was planned on.
func checkLevel(name string, p rollout.Policy, units []rollout.Unit, creates []rollout.Create, deletes []rollout.Delete) string {
	fp, err := rollout.ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	if p.Type == v1alpha1.OnDeleteStrategyType {
		fp.MaxSurge = 0
	}
	before := invariant.Level{Name: name, Strategy: p.Type, Sizes: []invariant.Size{{Replicas: p.Replicas, Fenceposts: fp}},
		ReplaceWhileTerminating: p.ReplaceWhileTerminating, SurgeAtReplacedIndex: p.SurgeAtReplacedIndex}
	for _, u := range units {
		before.Units = append(before.Units, invariant.Unit{Index: u.Index, Available: u.Available, Terminating: u.Terminating, Revision: u.Revision, Key: u.Key})
	}
	vs := invariant.CheckLevelPlan(before, creates, deletes)
	return first(vs)
}

// replicaUnits are the PCS replicas as units; a replica is available when every
// standalone clique and scaling group has at least its minAvailable available.
func (s *sim) replicaUnits(in rollout.SetInput) []rollout.Unit {
	var out []rollout.Unit
	for _, r := range in.Replicas {
		u := rollout.Unit{Index: r.Index, Revision: r.Revision, Terminating: r.Terminating, Available: true}
		for _, cs := range s.spec.Template.Cliques {
			if s.spec.Template.ScalingGroupOf(cs.Name) != nil {
				continue
			}
			var pods []rollout.Unit
			for _, c := range r.Cliques {
				if c.Name == cs.Name {
					pods = c.Pods
				}
			}
			u.Available = u.Available && countAvailable(pods) >= cs.EffectiveMinAvailable()
		}
		for _, gs := range s.spec.Template.PodCliqueScalingGroups {
			var reps []rollout.GroupReplicaObservation
			for _, g := range r.Groups {
				if g.Name == gs.Name {
					reps = g.Replicas
				}
			}
			u.Available = u.Available && countAvailable(rollout.GroupUnits(memberMinimums(s.spec, &gs), reps)) >= gs.EffectiveMinAvailable()
		}
		out = append(out, u)
	}
	return out
}

func countAvailable(units []rollout.Unit) int32 {
	n := int32(0)
	for _, u := range units {
		if u.Available && !u.Terminating {
			n++
		}
	}
	return n
}

func memberMinimums(spec *v1alpha1.PodCliqueSetSpec, g *v1alpha1.PodCliqueScalingGroupConfig) []rollout.MemberMinimum {
	var out []rollout.MemberMinimum
	for _, n := range g.CliqueNames {
		out = append(out, rollout.MemberMinimum{Clique: n, MinAvailable: spec.Template.Clique(n).EffectiveMinAvailable()})
	}
	return out
}

// childUnits are the observed units of the level a child plan is for.
func childUnits(in rollout.SetInput, cp rollout.ChildPlan, spec *v1alpha1.PodCliqueSetSpec) []rollout.Unit {
	var r *rollout.ReplicaObservation
	for i := range in.Replicas {
		if in.Replicas[i].Index == cp.Replica && !in.Replicas[i].Terminating {
			r = &in.Replicas[i]
		}
	}
	if r == nil {
		return nil
	}
	switch cp.Kind {
	case rollout.KindClique:
		for _, c := range r.Cliques {
			if c.Name == cp.Role {
				return c.Pods
			}
		}
	case rollout.KindGroup:
		for _, g := range r.Groups {
			if g.Name == cp.Role {
				gs := spec.Template.ScalingGroup(cp.Role)
				return rollout.GroupUnits(memberMinimums(spec, gs), g.Replicas)
			}
		}
	case rollout.KindMember:
		for _, g := range r.Groups {
			if g.Name != cp.Group {
				continue
			}
			for _, gr := range g.Replicas {
				if gr.Index == cp.GroupReplica && !gr.Terminating {
					for _, c := range gr.Cliques {
						if c.Name == cp.Role {
							return c.Pods
						}
					}
				}
			}
		}
	}
	return nil
}

// roleState is one role of one live PCS replica after a plan was applied.
type roleState struct {
	name, rev             string
	updated, updatedReady int32
	outdated              bool
}

func (s *sim) roleStates(r *replica) []roleState {
	var out []roleState
	roleRev := func(role string) string {
		if rev, ok := s.revs.Update.Role(role); ok {
			return rev
		}
		return s.revs.Update.Name
	}
	now := s.clock()
	for _, cs := range s.spec.Template.Cliques {
		if s.spec.Template.ScalingGroupOf(cs.Name) != nil {
			continue
		}
		st := roleState{name: cs.Name, rev: roleRev(cs.Name)}
		if c := r.clique(cs.Name); c != nil {
			for _, p := range c.pods {
				if p.terminating || p.index >= cs.Replicas {
					continue
				}
				if p.rev == roleRev(cs.Name) {
					st.updated++
					if !p.readyAt.IsZero() && !now.Before(p.readyAt) {
						st.updatedReady++
					}
				} else {
					st.outdated = true
				}
			}
		}
		out = append(out, st)
	}
	for _, gs := range s.spec.Template.PodCliqueScalingGroups {
		st := roleState{name: gs.Name, rev: roleRev(gs.Name)}
		if g := r.group(gs.Name); g != nil {
			obs := s.model.observe(s.spec.MinReadySeconds, now)
			var reps []rollout.GroupReplicaObservation
			for _, o := range obs {
				if o.Index == r.index && !o.Terminating {
					for _, og := range o.Groups {
						if og.Name == gs.Name {
							reps = og.Replicas
						}
					}
				}
			}
			for _, u := range rollout.GroupUnits(memberMinimums(s.spec, &gs), reps) {
				if u.Terminating || u.Index >= gs.Replicas {
					continue
				}
				if u.Revision == roleRev(gs.Name) {
					st.updated++
					if u.Ready {
						st.updatedReady++
					}
				} else {
					st.outdated = true
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// state checks the model after a plan was applied: ReplicaRecreate replicas run
// one revision; below the partition and while paused no updated count grows; role
// steps are taken in order.
func (c *checker) state(s *sim) string {
	rev := s.revs.Update.Name
	if rev != c.rev {
		c.outdated, c.prefix = map[int32]bool{}, map[int32]int{}
		c.started = map[int32]time.Duration{}
		c.rev = rev
	}
	if v := c.gates(s); v != "" {
		return v
	}
	hold := invariant.HoldOf(s.spec)
	steps, err := invariant.Steps(s.spec)
	if err != nil {
		return err.Error()
	}
	for _, r := range s.model.replicas {
		if r.terminating {
			continue
		}
		if v := first(invariant.CheckOneRevisionPerReplica(s.spec.UpdateStrategy.Type, r.index, r.setRevisions(), "")); v != "" {
			return v
		}
		states := s.roleStates(r)
		// the readiness the planner saw in this pass: a plan never makes a unit
		// ready, and deletes only outdated or surge units, so the state after it
		// shows the same readiness
		c.prefix[r.index] = invariant.StepsDone(steps, c.prefix[r.index], roleReadiness(states))
		hadOutdated := c.outdated[r.index]
		outdated := false
		for _, st := range states {
			k := roleKey{r.index, st.name, st.rev}
			// growth is measured against the most units this role ever had updated
			// for this revision, so a unit deleted by hand may come back
			prev, seen := c.updated[k]
			if seen && st.updated > prev && s.roleChanging(st.name) {
				finishing := hold.Paused && r.index >= hold.Partition && (st.updated <= c.underWay[k] || c.replicasUnderWay[r.index])
				if v := first(invariant.CheckHeld(hold, r.index, fmt.Sprintf("updated units of role %s grew %d -> %d", st.name, prev, st.updated))); v != "" && !finishing {
					return v
				}
				if hadOutdated {
					if v := first(invariant.CheckRoleStepOrder(steps, c.prefix[r.index], r.index, st.name, st.updated)); v != "" {
						return v
					}
				}
			}
			c.updated[k] = max(prev, st.updated)
			outdated = outdated || st.outdated
		}
		c.outdated[r.index] = outdated
	}
	return ""
}

func roleReadiness(states []roleState) []invariant.Role {
	out := make([]invariant.Role, 0, len(states))
	for _, st := range states {
		out = append(out, invariant.Role{Name: st.name, UpdatedReady: st.updatedReady})
	}
	return out
}

// setRevisions lists the PodCliqueSet revisions of a replica's live pods and group replicas.
func (r *replica) setRevisions() []string {
	var revs []string
	add := func(rev string) {
		if !slices.Contains(revs, rev) {
			revs = append(revs, rev)
		}
	}
	pods := func(cs []*clique) {
		for _, c := range cs {
			for _, p := range c.pods {
				if !p.terminating {
					add(p.setRev)
				}
			}
		}
	}
	pods(r.cliques)
	for _, g := range r.groups {
		for _, gr := range g.replicas {
			if !gr.terminating {
				add(gr.setRev)
				pods(gr.cliques)
			}
		}
	}
	slices.Sort(revs)
	return revs
}

// final checks a completed rollout: indices [0, replicas) at every level, and
// every unit on the newest revision unless a partition or pause holds some back.
func (c *checker) final(s *sim) string {
	spec := s.spec
	want := spec.DesiredReplicas()
	var got []int32
	for _, r := range s.model.replicas {
		got = append(got, r.index)
	}
	slices.Sort(got)
	if !slices.Equal(got, seq(want)) {
		return fmt.Sprintf("completed with PCS replicas %v, want [0, %d)", got, want)
	}
	all := invariant.HoldOf(spec) == invariant.Hold{}
	roleRev := func(role string) string {
		if rev, ok := s.revs.Update.Role(role); ok {
			return rev
		}
		return s.revs.Update.Name
	}
	checkPods := func(where string, c *clique, replicas int32, rev string) string {
		var idx []int32
		for _, p := range c.pods {
			idx = append(idx, p.index)
			if all && p.rev != rev {
				return fmt.Sprintf("completed with %s pod %d at %s, want %s", where, p.index, p.rev, rev)
			}
		}
		slices.Sort(idx)
		if !slices.Equal(idx, seq(replicas)) {
			return fmt.Sprintf("completed with %s pods %v, want [0, %d)", where, idx, replicas)
		}
		return ""
	}
	for _, r := range s.model.replicas {
		for _, cs := range spec.Template.Cliques {
			if spec.Template.ScalingGroupOf(cs.Name) != nil {
				continue
			}
			cl := r.clique(cs.Name)
			if cl == nil {
				return fmt.Sprintf("completed without clique %s in replica %d", cs.Name, r.index)
			}
			if v := checkPods(fmt.Sprintf("replica %d %s", r.index, cs.Name), cl, cs.Replicas, roleRev(cs.Name)); v != "" {
				return v
			}
		}
		for _, gs := range spec.Template.PodCliqueScalingGroups {
			g := r.group(gs.Name)
			if g == nil {
				return fmt.Sprintf("completed without group %s in replica %d", gs.Name, r.index)
			}
			var idx []int32
			for _, gr := range g.replicas {
				idx = append(idx, gr.index)
				if all && gr.rev != roleRev(gs.Name) {
					return fmt.Sprintf("completed with replica %d %s-%d at %s", r.index, gs.Name, gr.index, gr.rev)
				}
				for _, n := range gs.CliqueNames {
					cl := gr.clique(n)
					if cl == nil {
						return fmt.Sprintf("completed without clique %s in replica %d %s-%d", n, r.index, gs.Name, gr.index)
					}
					if v := checkPods(fmt.Sprintf("replica %d %s-%d %s", r.index, gs.Name, gr.index, n), cl, spec.Template.Clique(n).Replicas, roleRevAt(s, gs.Name, gr.rev, n)); v != "" {
						return v
					}
				}
			}
			slices.Sort(idx)
			if !slices.Equal(idx, seq(gs.Replicas)) {
				return fmt.Sprintf("completed with replica %d %s replicas %v, want [0, %d)", r.index, gs.Name, idx, gs.Replicas)
			}
		}
	}
	return ""
}

// roleRevAt is the revision of member clique at the set revision where group has groupRev.
func roleRevAt(s *sim, group, groupRev, clique string) string {
	for _, set := range append([]rollout.SetRevision{s.revs.Update, s.revs.Current}, s.revs.History...) {
		if r, ok := set.Role(group); ok && r == groupRev {
			if cr, ok := set.Role(clique); ok {
				return cr
			}
		}
	}
	return groupRev
}

func seq(n int32) []int32 {
	out := make([]int32, 0, max(n, 0))
	for i := range max(n, 0) {
		out = append(out, i)
	}
	return out
}

// roleChanging: the role's template differs between the current and update revisions.
func (s *sim) roleChanging(role string) bool {
	cur, _ := s.revs.Current.Role(role)
	upd, _ := s.revs.Update.Role(role)
	return cur != upd
}
