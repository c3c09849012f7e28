package simulate

import (
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// The model cluster: the objects the controllers would create, reduced to what
// the planner observes.

type pod struct {
	// name tells two pods of one index apart (a surge pod beside the pod it
	// replaces), as a real pod's name does
	name        string
	index       int32
	rev         string // template revision
	setRev      string // PodCliqueSet revision it was made from
	surge       bool
	created     time.Time
	readyAt     time.Time // zero: never becomes ready
	terminating bool
	goneAt      time.Time
}

type clique struct {
	name   string
	target *rollout.Target
	pods   []*pod
}

type groupReplica struct {
	index       int32
	rev         string
	setRev      string
	surge       bool
	created     time.Time
	terminating bool
	goneAt      time.Time
	cliques     []*clique
	// broken: a fault hit this group replica; none of its pods becomes ready
	broken bool
}

type group struct {
	name     string
	target   *rollout.Target
	replicas []*groupReplica
}

type replica struct {
	index       int32
	rev         string
	surge       bool
	created     time.Time
	terminating bool
	goneAt      time.Time
	cliques     []*clique
	groups      []*group
}

type cluster struct {
	replicas []*replica
}

// liveAt is a live pod at index (a user deletes one by its index).
func (c *clique) liveAt(index int32) *pod {
	for _, p := range c.pods {
		if p.index == index && !p.terminating {
			return p
		}
	}
	return nil
}

// live is the live pod a delete names.
func (c *clique) live(d rollout.Delete) *pod {
	for _, p := range c.pods {
		if p.index == d.Index && p.name == d.Key && !p.terminating {
			return p
		}
	}
	return nil
}

func (g *group) live(index int32) *groupReplica {
	for _, r := range g.replicas {
		if r.index == index && !r.terminating {
			return r
		}
	}
	return nil
}

func (c *cluster) live(index int32) *replica {
	for _, r := range c.replicas {
		if r.index == index && !r.terminating {
			return r
		}
	}
	return nil
}

func (r *replica) clique(name string) *clique {
	for _, c := range r.cliques {
		if c.name == name {
			return c
		}
	}
	return nil
}

func (r *replica) group(name string) *group {
	for _, g := range r.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

func (g *groupReplica) clique(name string) *clique {
	for _, c := range g.cliques {
		if c.name == name {
			return c
		}
	}
	return nil
}

// terminate marks a pod as going away; it disappears at goneAt.
func (p *pod) terminate(now time.Time, grace time.Duration) {
	if !p.terminating {
		p.terminating, p.goneAt = true, now.Add(grace)
	}
}

func (g *groupReplica) terminate(now time.Time, grace time.Duration) {
	g.terminating, g.goneAt = true, now.Add(grace)
	for _, c := range g.cliques {
		for _, p := range c.pods {
			p.terminate(now, grace)
		}
	}
}

func (r *replica) terminate(now time.Time, grace time.Duration) {
	r.terminating, r.goneAt = true, now.Add(grace)
	for _, c := range r.cliques {
		for _, p := range c.pods {
			p.terminate(now, grace)
		}
	}
	for _, g := range r.groups {
		for _, gr := range g.replicas {
			gr.terminate(now, grace)
		}
	}
}

// sweep removes everything whose termination has finished by now.
func (c *cluster) sweep(now time.Time) {
	gone := func(term bool, at time.Time) bool { return term && !at.After(now) }
	sweepPods := func(cs []*clique) {
		for _, c := range cs {
			kept := c.pods[:0]
			for _, p := range c.pods {
				if !gone(p.terminating, p.goneAt) {
					kept = append(kept, p)
				}
			}
			c.pods = kept
		}
	}
	kept := c.replicas[:0]
	for _, r := range c.replicas {
		if gone(r.terminating, r.goneAt) {
			continue
		}
		sweepPods(r.cliques)
		for _, g := range r.groups {
			gk := g.replicas[:0]
			for _, gr := range g.replicas {
				if gone(gr.terminating, gr.goneAt) {
					continue
				}
				sweepPods(gr.cliques)
				gk = append(gk, gr)
			}
			g.replicas = gk
		}
		kept = append(kept, r)
	}
	c.replicas = kept
}

// observe turns the model into the planner's input at now.
func (c *cluster) observe(minReady int32, now time.Time) []rollout.ReplicaObservation {
	units := func(cl *clique) []rollout.Unit {
		out := make([]rollout.Unit, 0, len(cl.pods))
		for _, p := range cl.pods {
			ready := !p.readyAt.IsZero() && !now.Before(p.readyAt)
			var since time.Time
			if ready {
				since = p.readyAt
			}
			out = append(out, rollout.Unit{Index: p.index, Revision: p.rev, Surge: p.surge, Scheduled: true, Ready: ready && !p.terminating,
				Available: !p.terminating && rollout.PodAvailable(ready, since, minReady, now), Terminating: p.terminating,
				CreatedAt: p.created, ReadySince: since, Key: p.name})
		}
		return out
	}
	cliques := func(cs []*clique) []rollout.CliqueObservation {
		out := make([]rollout.CliqueObservation, 0, len(cs))
		for _, cl := range cs {
			out = append(out, rollout.CliqueObservation{Name: cl.name, Target: cl.target, Pods: units(cl)})
		}
		return out
	}
	var out []rollout.ReplicaObservation
	for _, r := range c.replicas {
		o := rollout.ReplicaObservation{Index: r.index, Revision: r.rev, Surge: r.surge, Terminating: r.terminating, CreatedAt: r.created, Cliques: cliques(r.cliques)}
		for _, g := range r.groups {
			group := rollout.GroupObservation{Name: g.name, Target: g.target}
			for _, gr := range g.replicas {
				group.Replicas = append(group.Replicas, rollout.GroupReplicaObservation{Index: gr.index, Revision: gr.rev, Surge: gr.surge,
					Terminating: gr.terminating, CreatedAt: gr.created, Cliques: cliques(gr.cliques)})
			}
			o.Groups = append(o.Groups, group)
		}
		out = append(out, o)
	}
	return out
}

// initialCluster is spec running steadily at rev: every index present and ready
// long before time zero, created in index order.
func initialCluster(spec *v1alpha1.PodCliqueSetSpec, rev rollout.SetRevision, start time.Time) *cluster {
	c := &cluster{}
	born := start.Add(-time.Hour)
	roleRev := func(role string) string {
		if r, ok := rev.Role(role); ok {
			return r
		}
		return rev.Name
	}
	newClique := func(name string, replicas int32, target *rollout.Target) *clique {
		cl := &clique{name: name, target: target}
		for i := range replicas {
			at := born.Add(time.Duration(i) * time.Second)
			cl.pods = append(cl.pods, &pod{index: i, rev: roleRev(name), setRev: rev.Name, created: at, readyAt: at})
		}
		return cl
	}
	target := func(role string) *rollout.Target {
		r := roleRev(role)
		return &rollout.Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: rev.Name, UpdateRevision: r, CurrentRevision: r}
	}
	tpl := &spec.Template
	for i := range spec.DesiredReplicas() {
		r := &replica{index: i, rev: rev.Name, created: born}
		for _, cs := range tpl.Cliques {
			if tpl.ScalingGroupOf(cs.Name) == nil {
				r.cliques = append(r.cliques, newClique(cs.Name, cs.Replicas, target(cs.Name)))
			}
		}
		for _, gs := range tpl.PodCliqueScalingGroups {
			g := &group{name: gs.Name, target: target(gs.Name)}
			for j := range gs.Replicas {
				gr := &groupReplica{index: j, rev: roleRev(gs.Name), setRev: rev.Name, created: born.Add(time.Duration(j) * time.Second)}
				for _, n := range gs.CliqueNames {
					gr.cliques = append(gr.cliques, newClique(n, tpl.Clique(n).Replicas, nil))
				}
				g.replicas = append(g.replicas, gr)
			}
			r.groups = append(r.groups, g)
		}
		c.replicas = append(c.replicas, r)
	}
	return c
}
