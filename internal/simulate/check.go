package simulate

import (
	"fmt"
	"slices"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// checker verifies the rollout invariants on every plan and on the state after
// it. It recomputes what it needs from the model and the spec, not from the
// planner's reasoning.
type checker struct {
	rev      string // update revision of the previous pass
	updated  map[roleKey]int32
	outdated map[int32]bool // replica had live outdated units at the previous pass
	prefix   map[int32]int  // role steps satisfied so far, per replica
}

// roleKey names a role of a replica at one of its template revisions.
type roleKey struct {
	replica   int32
	role, rev string
}

func newChecker() *checker {
	return &checker{updated: map[roleKey]int32{}, outdated: map[int32]bool{}, prefix: map[int32]int{}}
}

// plan checks the actions of one plan against the state they were planned on.
func (c *checker) plan(s *sim, in rollout.SetInput, tree rollout.TreePlan) string {
	paused := s.spec.Paused
	partition := partitionOf(s.spec)
	if v := checkLevel("podcliqueset", tree.Set.Policy, s.replicaUnits(in), tree.Set.Creates, tree.Set.Deletes); v != "" {
		return v
	}
	for _, d := range tree.Set.Deletes {
		if isUpdate(d.Reason) && (paused || d.Index < partition) {
			return fmt.Sprintf("podcliqueset: replica %d deleted for an update while paused or below partition %d", d.Index, partition)
		}
	}
	for _, cp := range tree.Children {
		units := childUnits(in, cp, s.spec)
		name := fmt.Sprintf("replica %d %s %s", cp.Replica, cp.Kind, cp.Role)
		if v := checkLevel(name, cp.Policy, units, cp.Level.Creates, cp.Level.Deletes); v != "" {
			return v
		}
		for _, d := range cp.Level.Deletes {
			if isUpdate(d.Reason) && (paused || cp.Replica < partition) {
				return fmt.Sprintf("%s: unit %d deleted for an update while paused or below partition %d", name, d.Index, partition)
			}
		}
	}
	return ""
}

func isUpdate(r rollout.DeleteReason) bool {
	return r == rollout.ReasonUpdate || r == rollout.ReasonReplaceFailed
}

// checkLevel: creates never take the level above replicas+maxSurge, deletes of
// available units never take it below replicas-maxUnavailable, and OnDelete never
// deletes for an update.
func checkLevel(name string, p rollout.Policy, units []rollout.Unit, creates []rollout.Create, deletes []rollout.Delete) string {
	fp, err := rollout.ResolveFenceposts(p.MaxSurge, p.MaxUnavailable, p.Replicas)
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	if p.Type == v1alpha1.OnDeleteStrategyType {
		fp.MaxSurge = 0
	}
	total := int32(len(units))
	if len(creates) > 0 && total+int32(len(creates)) > p.Replicas+fp.MaxSurge {
		return fmt.Sprintf("%s: %d units + %d creates exceed replicas %d + maxSurge %d", name, total, len(creates), p.Replicas, fp.MaxSurge)
	}
	available, lost := int32(0), int32(0)
	for _, u := range units {
		if u.Available && !u.Terminating {
			available++
			if slices.ContainsFunc(deletes, func(d rollout.Delete) bool { return d.Index == u.Index }) {
				lost++
			}
		}
	}
	if lost > 0 && available-lost < p.Replicas-fp.MaxUnavailable {
		return fmt.Sprintf("%s: deleting %d available units leaves %d available, below replicas %d - maxUnavailable %d", name, lost, available-lost, p.Replicas, fp.MaxUnavailable)
	}
	if p.Type == v1alpha1.OnDeleteStrategyType {
		for _, d := range deletes {
			if isUpdate(d.Reason) {
				return fmt.Sprintf("%s: OnDelete deleted unit %d for an update", name, d.Index)
			}
		}
	}
	return ""
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
				gs := groupSpec(spec, cp.Role)
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

func groupSpec(spec *v1alpha1.PodCliqueSetSpec, name string) *v1alpha1.PodCliqueScalingGroupConfig {
	for i := range spec.Template.PodCliqueScalingGroups {
		if spec.Template.PodCliqueScalingGroups[i].Name == name {
			return &spec.Template.PodCliqueScalingGroups[i]
		}
	}
	return nil
}

func partitionOf(spec *v1alpha1.PodCliqueSetSpec) int32 {
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// roleState is one role of one live PCS replica after a plan was applied.
type roleState struct {
	name, rev             string
	replicas              int32
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
		st := roleState{name: cs.Name, rev: roleRev(cs.Name), replicas: cs.Replicas}
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
		st := roleState{name: gs.Name, rev: roleRev(gs.Name), replicas: gs.Replicas}
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
		c.rev = rev
	}
	recreate := s.spec.UpdateStrategy.Type == v1alpha1.ReplicaRecreateStrategyType
	partition := partitionOf(s.spec)
	var steps []v1alpha1.RoleUpgradeStep
	if ru := s.spec.UpdateStrategy.RoleUpgrade; ru != nil && s.spec.UpdateStrategy.Type.IsRollingUpdate() {
		steps = ru.Steps
	}
	for _, r := range s.model.replicas {
		if r.terminating {
			continue
		}
		if recreate {
			if revs := r.setRevisions(); len(revs) > 1 {
				return fmt.Sprintf("ReplicaRecreate: replica %d runs revisions %v", r.index, revs)
			}
		}
		states := s.roleStates(r)
		c.advanceSteps(r.index, steps, states)
		hadOutdated := c.outdated[r.index]
		outdated := false
		for _, st := range states {
			k := roleKey{r.index, st.name, st.rev}
			// growth is measured against the most units this role ever had updated
			// for this revision, so a unit deleted by hand may come back
			prev, seen := c.updated[k]
			if seen && st.updated > prev && s.roleChanging(st.name) {
				if s.spec.Paused || r.index < partition {
					return fmt.Sprintf("replica %d role %s: updated units grew %d -> %d while paused or below partition %d", r.index, st.name, prev, st.updated, partition)
				}
				if hadOutdated && len(steps) > 0 {
					if j := firstStepAllowing(s.spec, steps, st.name, st.updated); c.prefix[r.index] < j {
						return fmt.Sprintf("replica %d role %s: %d units updated before role step %d started (steps satisfied: %d)", r.index, st.name, st.updated, j, c.prefix[r.index])
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

// advanceSteps moves a replica's satisfied-steps prefix forward on the readiness
// the planner saw in this pass (a plan never makes a unit ready, and deletes only
// outdated or surge units, so the state after it shows the same readiness).
func (c *checker) advanceSteps(replica int32, steps []v1alpha1.RoleUpgradeStep, states []roleState) {
	for c.prefix[replica] < len(steps) {
		st := steps[c.prefix[replica]]
		var rs roleState
		for _, x := range states {
			if x.name == st.Role {
				rs = x
			}
		}
		target, _ := rollout.ResolveUpdateTo(st.UpdateTo, rs.replicas)
		if rs.updatedReady < target {
			return
		}
		c.prefix[replica]++
	}
}

// firstStepAllowing is the first step that lets role reach n updated units;
// len(steps) for a role no step allows that far.
func firstStepAllowing(spec *v1alpha1.PodCliqueSetSpec, steps []v1alpha1.RoleUpgradeStep, role string, n int32) int {
	for j, st := range steps {
		if st.Role != role {
			continue
		}
		replicas := int32(0)
		if c := spec.Template.Clique(role); c != nil {
			replicas = c.Replicas
		} else if g := groupSpec(spec, role); g != nil {
			replicas = g.Replicas
		}
		if t, _ := rollout.ResolveUpdateTo(st.UpdateTo, replicas); t >= n {
			return j
		}
	}
	return len(steps)
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
	want := replicasOf(spec)
	var got []int32
	for _, r := range s.model.replicas {
		got = append(got, r.index)
	}
	slices.Sort(got)
	if !slices.Equal(got, seq(want)) {
		return fmt.Sprintf("completed with PCS replicas %v, want [0, %d)", got, want)
	}
	all := partitionOf(spec) == 0 && !spec.Paused
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
