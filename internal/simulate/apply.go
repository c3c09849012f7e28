package simulate

import (
	"fmt"

	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// apply carries out a tree plan on the model, as the three controllers would, and
// records every action. It reports whether anything was created or deleted.
func (s *sim) apply(tree rollout.TreePlan) bool {
	now := s.clock()
	before := len(s.timeline)
	set := tree.Set
	for _, d := range set.Deletes {
		if r := s.model.live(d.Index); r != nil {
			r.terminate(now, s.sc.Grace)
			s.record(Action{Level: LevelPodCliqueSet, Replica: d.Index, Index: d.Index, GroupReplica: -1, Op: OpDelete, From: r.rev, Reason: d.Reason})
		}
	}
	for _, c := range set.Creates {
		s.model.replicas = append(s.model.replicas, &replica{index: c.Index, rev: c.Revision, surge: c.Surge, created: now})
		s.record(Action{Level: LevelPodCliqueSet, Replica: c.Index, Index: c.Index, GroupReplica: -1, Op: OpCreate, To: c.Revision, Surge: c.Surge})
	}
	for _, rp := range set.Replicas {
		s.writeTargets(rp)
	}
	for _, c := range tree.Children {
		s.applyChild(c)
	}
	s.peak = max(s.peak, s.countPods())
	return len(s.timeline) > before
}

func (s *sim) record(a Action) {
	a.At = s.now
	s.timeline = append(s.timeline, a)
}

// writeTargets writes each child's target into its spec, creating missing children.
func (s *sim) writeTargets(rp rollout.ReplicaPlan) {
	r := s.model.live(rp.Index)
	if r == nil {
		return
	}
	for _, ct := range rp.Cliques {
		if ct.Target == nil {
			continue
		}
		c := r.clique(ct.Role)
		if c == nil {
			c = &clique{name: ct.Role}
			r.cliques = append(r.cliques, c)
		}
		c.target = ct.Target.Written(s.revs, ct.Role)
	}
	for _, ct := range rp.Groups {
		if ct.Target == nil {
			continue
		}
		g := r.group(ct.Role)
		if g == nil {
			g = &group{name: ct.Role}
			r.groups = append(r.groups, g)
		}
		g.target = ct.Target.Written(s.revs, ct.Role)
	}
}

func (s *sim) applyChild(cp rollout.ChildPlan) {
	r := s.model.live(cp.Replica)
	if r == nil {
		return
	}
	now := s.clock()
	switch cp.Kind {
	case rollout.KindClique:
		c := r.clique(cp.Role)
		if c == nil {
			return
		}
		s.applyPods(cp, c, r.clique(cp.Role).target.SetRevision, false)
	case rollout.KindGroup:
		g := r.group(cp.Role)
		if g == nil {
			return
		}
		for _, d := range cp.Level.Deletes {
			if gr := g.live(d.Index); gr != nil {
				gr.terminate(now, s.sc.Grace)
				s.record(Action{Level: LevelPodCliqueScalingGroup, Replica: cp.Replica, Role: cp.Role, Index: d.Index, GroupReplica: -1, Op: OpDelete, From: gr.rev, Reason: d.Reason})
			}
		}
		for _, c := range cp.Level.Creates {
			gr := &groupReplica{index: c.Index, rev: c.Revision, setRev: g.target.SetRevision, surge: c.Surge, created: now}
			if c.Revision != g.target.UpdateRevision {
				gr.setRev = s.setRevisionHolding(cp.Role, c.Revision)
			}
			g.replicas = append(g.replicas, gr)
			s.record(Action{Level: LevelPodCliqueScalingGroup, Replica: cp.Replica, Role: cp.Role, Index: c.Index, GroupReplica: -1, Op: OpCreate, To: c.Revision, Surge: c.Surge})
			// a broken group replica: every pod of it never becomes ready
			if s.readyAt(cp.Role, false).IsZero() {
				gr.broken = true
			}
		}
	case rollout.KindMember:
		g := r.group(cp.Group)
		if g == nil {
			return
		}
		gr := g.live(cp.GroupReplica)
		if gr == nil {
			return
		}
		c := gr.clique(cp.Role)
		if c == nil {
			c = &clique{name: cp.Role}
			gr.cliques = append(gr.cliques, c)
		}
		s.applyPods(cp, c, gr.setRev, gr.broken)
	}
}

// applyPods applies a pod-level plan to clique c.
func (s *sim) applyPods(cp rollout.ChildPlan, c *clique, setRev string, broken bool) {
	now := s.clock()
	gri := int32(-1)
	if cp.Kind == rollout.KindMember {
		gri = cp.GroupReplica
	}
	for _, d := range cp.Level.Deletes {
		if p := c.live(d); p != nil {
			p.terminate(now, s.sc.Grace)
			s.record(Action{Level: LevelPodClique, Replica: cp.Replica, Role: cp.Role, Group: cp.Group, GroupReplica: gri, Index: d.Index, Op: OpDelete, From: p.rev, Reason: d.Reason})
		}
	}
	for _, cr := range cp.Level.Creates {
		sr := setRev
		if cp.Kind == rollout.KindClique && cr.Revision != cp.Policy.UpdateRevision {
			sr = s.setRevisionHolding(cp.Role, cr.Revision)
		}
		beside := c.liveAt(cr.Index) != nil
		s.pods++
		p := &pod{name: fmt.Sprintf("pod-%d", s.pods), index: cr.Index, rev: cr.Revision, setRev: sr, surge: cr.Surge, created: now, readyAt: s.readyAt(cp.Role, broken)}
		c.pods = append(c.pods, p)
		s.record(Action{Level: LevelPodClique, Replica: cp.Replica, Role: cp.Role, Group: cp.Group, GroupReplica: gri, Index: cr.Index, Op: OpCreate, To: cr.Revision, Surge: cr.Surge || beside})
	}
}

// setRevisionHolding names the set revision in which role has template
// revision rev: the revision a held-back unit is made from.
func (s *sim) setRevisionHolding(role, rev string) string {
	if set, ok := s.revs.Holding(role, rev); ok {
		return set.Name
	}
	return rev
}

func (s *sim) countPods() int {
	now, n := s.clock(), 0
	s.anyPod(func(p *pod) bool {
		if !p.terminating || p.goneAt.After(now) { // a pod deleted with no grace is gone at once
			n++
		}
		return false
	})
	return n
}
