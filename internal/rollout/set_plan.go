package rollout

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// roleView is one role of one PCS replica as observed.
type roleView struct {
	shape *roleShape
	// replicas the child has now: the template's, or what /scale set (an HPA).
	replicas int32
	exists   bool
	target   *Target
	units    []Unit
	// at the role's update revision
	status LevelStatus
	// surgeLeft names the role's surge units that still hold pods the
	// boundary rule waits for (see surgeLeft).
	surgeLeft []string
}

// allAt reports whether every live unit of the role runs rev.
func (rv *roleView) allAt(rev string) bool {
	for i := range rv.units {
		if u := &rv.units[i]; !u.Terminating && u.Revision != rev {
			return false
		}
	}
	return true
}

// replicaView is one PCS replica as observed.
type replicaView struct {
	obs                         *ReplicaObservation // nil for a replica created by this plan
	index                       int32
	revision                    string
	roles                       []roleView
	scheduled, ready, available bool
	// updated: every role holds exactly its replicas, all at the update revision.
	updated bool
	// allUpdated: every live unit of every role runs the update revision and
	// each role has its replicas so; units above them (a scale-in under way)
	// may remain. The status counts such a replica as updated, as a
	// Deployment counts the updated pods that exist.
	allUpdated bool
	// current: every role has live units and all of them run the update
	// revision (a finished replica, scaled out or in since): nothing in it is
	// held back, so what it makes runs the update revision.
	current bool
	// settled: every unit of every role exists and is available.
	settled bool
	// outdated: some live unit runs another revision than the update revision
	// (what a rollout has to change; a replica short of units is only scaling).
	outdated bool
	// reported: what the children's own statuses say of ready, available,
	// updated and settled (see Report). The status counts a replica only when
	// both the pods and the children say so; the plan goes by the pods alone.
	reported struct{ ready, available, updated, settled bool }
	// surgeLeft names the surge units of every role that still hold pods: the
	// replica's update has not ended while there are any (see surgeLeft).
	surgeLeft []string
}

// done: the replica's update has ended, as its pods say: every unit runs the
// update revision and is available, and no surge unit holds a pod the
// boundary rule waits for.
func (v *replicaView) done() bool { return v.updated && v.settled && len(v.surgeLeft) == 0 }

type setPlanner struct {
	in    SetInput
	shape *setShape
	views []*replicaView
	// the replica checkpoint, decided once per plan (replicaGate)
	gateDecided bool
	gate        *gateWait
	gatesPassed int32
}

func (p *setPlanner) paused() bool { return p.shape.spec.Paused }

func (p *setPlanner) updateRoleRevision(role string) string {
	if rev, ok := p.in.Revisions.Update.Role(role); ok {
		return rev
	}
	return p.in.Revisions.Update.Name
}

func (p *setPlanner) currentRoleRevision(role string) string {
	if rev, ok := p.in.Revisions.Current.Role(role); ok {
		return rev
	}
	return p.updateRoleRevision(role)
}

func (p *setPlanner) plan() (SetPlan, error) {
	obs := make([]*ReplicaObservation, len(p.in.Replicas))
	for i := range p.in.Replicas {
		obs[i] = &p.in.Replicas[i]
	}
	slices.SortFunc(obs, func(a, b *ReplicaObservation) int { return cmp.Compare(a.Index, b.Index) })
	for _, o := range obs {
		p.views = append(p.views, p.observeReplica(o))
	}
	pol := p.replicaPolicy()
	level, err := PlanLevel(pol, p.replicaUnits())
	if err != nil {
		return SetPlan{}, fmt.Errorf("planning PodCliqueSet replicas: %w", err)
	}
	plan := SetPlan{Creates: level.Creates, Deletes: level.Deletes, Policy: pol}
	for _, c := range level.Creates {
		p.views = append(p.views, p.newReplica(c))
	}
	slices.SortFunc(p.views, func(a, b *replicaView) int { return cmp.Compare(a.index, b.index) })

	updating := p.updatingReplicas(level)
	plan.Status = p.status(updating)
	if plan.Status.CurrentRevision == p.in.Revisions.Update.Name {
		// The rollout is complete as of this plan: the children are told so now,
		// not on a later pass, so their targets agree with the status written.
		p.in.Revisions.Current = p.in.Revisions.Update
	}
	for _, v := range p.views {
		if v.obs != nil && v.obs.Terminating {
			continue
		}
		plan.Replicas = append(plan.Replicas, p.replicaPlan(v, updating))
	}
	return plan, nil
}

func (p *setPlanner) observeReplica(o *ReplicaObservation) *replicaView {
	v := &replicaView{obs: o, index: o.Index, revision: o.Revision, scheduled: true, ready: true, available: true, updated: true, settled: true,
		allUpdated: true, current: true}
	v.reported.ready, v.reported.available, v.reported.updated, v.reported.settled = true, true, true, true
	for i := range p.shape.roles {
		r := &p.shape.roles[i]
		rv := roleView{shape: r, replicas: r.replicas}
		scaled := int32(0)
		var report *Report
		if r.group {
			if g := findGroup(o.Groups, r.name); g != nil {
				rv.exists, rv.target, scaled, report = true, g.Target, g.SpecReplicas, g.Report
				rv.units = GroupUnits(r.memberMinimums(), g.Replicas)
			}
		} else if c := findClique(o.Cliques, r.name); c != nil {
			rv.exists, rv.target, rv.units, scaled, report = true, c.Target, c.Pods, c.SpecReplicas, c.Report
		}
		v.reported.ready = v.reported.ready && report.readyAtLeast(r.minAvailable)
		v.reported.available = v.reported.available && report.availableAtLeast(r.minAvailable)
		v.reported.updated = v.reported.updated && report.updated()
		v.reported.settled = v.reported.settled && report.settled()
		if scaled > 0 {
			rv.replicas = scaled
		}
		rv.status = levelStatus(rv.replicas, p.updateRoleRevision(r.name), rv.units)
		if r.group {
			if g := findGroup(o.Groups, r.name); g != nil {
				rv.surgeLeft = groupSurgeLeft(r.name, rv.replicas, g.Replicas, p.shape.spec.ReplicaReplacementPolicy.WaitsForTermination())
			}
		} else {
			rv.surgeLeft = cliqueSurgeLeft(r.name, rv.units, p.shape.spec.PodReplacementPolicy == v1alpha1.TerminationComplete)
		}
		v.surgeLeft = append(v.surgeLeft, rv.surgeLeft...)
		v.outdated = v.outdated || countUnits(rv.units, func(u *Unit) bool {
			return !u.Terminating && u.Revision != p.updateRoleRevision(r.name)
		}) > 0
		v.roles = append(v.roles, rv)
		v.scheduled = v.scheduled && countUnits(rv.units, func(u *Unit) bool { return u.Scheduled }) >= r.minAvailable
		v.ready = v.ready && rv.status.ReadyReplicas >= r.minAvailable
		v.available = v.available && rv.status.AvailableReplicas >= r.minAvailable
		v.updated = v.updated && rv.exists && rv.status.Complete
		onUpdate := rv.exists && rv.allAt(p.updateRoleRevision(r.name))
		v.allUpdated = v.allUpdated && onUpdate && rv.status.UpdatedReplicas >= rv.replicas
		v.current = v.current && onUpdate && countUnits(rv.units, func(*Unit) bool { return true }) > 0
		v.settled = v.settled && rv.exists && rv.status.AvailableReplicas >= rv.replicas
	}
	if p.shape.strategy == v1alpha1.ReplicaRecreateStrategyType {
		v.updated = v.updated && o.Revision == p.in.Revisions.Update.Name
		v.allUpdated = v.allUpdated && o.Revision == p.in.Revisions.Update.Name
		v.current = v.current && o.Revision == p.in.Revisions.Update.Name
	}
	return v
}

// newReplica is the view of a replica this plan creates: no children yet.
func (p *setPlanner) newReplica(c Create) *replicaView {
	v := &replicaView{index: c.Index, revision: c.Revision}
	for i := range p.shape.roles {
		v.roles = append(v.roles, roleView{shape: &p.shape.roles[i]})
	}
	return v
}

// MemberMinimum is the minAvailable of one member clique of a scaling group.
type MemberMinimum struct {
	Clique       string
	MinAvailable int32
}

func (r *roleShape) memberMinimums() []MemberMinimum {
	out := make([]MemberMinimum, 0, len(r.members))
	for _, m := range r.members {
		out = append(out, MemberMinimum{Clique: m.name, MinAvailable: m.minAvailable})
	}
	return out
}

// GroupUnits turns observed scaling-group replicas into units for PlanLevel. A
// group replica is scheduled, ready or available when every member clique has at
// least its minAvailable pods so; a missing member clique counts as no pods.
func GroupUnits(members []MemberMinimum, replicas []GroupReplicaObservation) []Unit {
	units := make([]Unit, 0, len(replicas))
	for i := range replicas {
		g := &replicas[i]
		u := Unit{Index: g.Index, Revision: g.Revision, Surge: g.Surge, Terminating: g.Terminating, CreatedAt: g.CreatedAt,
			Scheduled: true, Ready: true, Available: true}
		for _, m := range members {
			var pods []Unit
			need := m.MinAvailable
			if c := findClique(g.Cliques, m.Clique); c != nil {
				pods = c.Pods
				if c.MinAvailable > 0 {
					need = c.MinAvailable
				}
			}
			u.Scheduled = u.Scheduled && countUnits(pods, func(p *Unit) bool { return p.Scheduled }) >= need
			u.Ready = u.Ready && countUnits(pods, func(p *Unit) bool { return p.Ready }) >= need
			u.Available = u.Available && countUnits(pods, func(p *Unit) bool { return p.Available }) >= need
		}
		units = append(units, u)
	}
	return units
}

func countUnits(units []Unit, pred func(u *Unit) bool) int32 {
	n := int32(0)
	for i := range units {
		if !units[i].Terminating && pred(&units[i]) {
			n++
		}
	}
	return n
}

func findClique(cs []CliqueObservation, name string) *CliqueObservation {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func findGroup(gs []GroupObservation, name string) *GroupObservation {
	for i := range gs {
		if gs[i].Name == name {
			return &gs[i]
		}
	}
	return nil
}

// levelStatus is the status of a level at revision rev, without planning actions.
func levelStatus(replicas int32, rev string, units []Unit) LevelStatus {
	p := Policy{Replicas: replicas, UpdateRevision: rev, CurrentRevision: rev}
	v := observeLevel(p, Fenceposts{MaxUnavailable: 1}, units, false)
	return v.status(nil)
}

// replicaPolicy is the policy of the PCS-replica level. Only ReplicaRecreate
// replaces PCS replicas for an update; the other types only scale them.
func (p *setPlanner) replicaPolicy() Policy {
	rev := p.in.Revisions
	pol := Policy{Replicas: p.shape.replicas, UpdateRevision: rev.Update.Name, CurrentRevision: rev.Current.Name,
		Partition: p.shape.partition, UpdateOrder: LowestIndexFirst, ScaleIn: HighestIndexFirst}
	if p.shape.strategy != v1alpha1.ReplicaRecreateStrategyType {
		pol.Type = v1alpha1.OnDeleteStrategyType
		pol.MaxUnavailable = v1alpha1.DefaultMaxUnavailable
		if p.paused() {
			pol.UpdateRevision = rev.Current.Name
		}
		return pol
	}
	pol.Type = v1alpha1.RollingUpdateStrategyType
	pol.MaxUnavailable, pol.MaxSurge = p.shape.setLimits()
	if p.paused() || p.replicaGate() != nil {
		// as paused, a closed gate lets the recreations under way finish and
		// starts none
		units := p.replicaUnits()
		frozen := countUnits(units, func(u *Unit) bool { return u.Index < p.shape.replicas && u.Revision == rev.Update.Name })
		frozen += int32(len(p.recreationsUnderWay(units)))
		pol.MaxUpdated = &frozen
	}
	return pol
}

// recreationsUnderWay are the ReplicaRecreate replicas the last plan was
// recreating whose index is empty or terminating now: while paused they come
// back on the update revision, never on the old one.
func (p *setPlanner) recreationsUnderWay(units []Unit) []int32 {
	live := map[int32]bool{}
	for _, u := range units {
		if !u.Terminating {
			live[u.Index] = true
		}
	}
	var out []int32
	for _, r := range p.in.Previous.UpdatingReplicas {
		if r.Index >= max(p.shape.partition, 0) && r.Index < p.shape.replicas && !live[r.Index] {
			out = append(out, r.Index)
		}
	}
	return out
}

func (p *setPlanner) replicaUnits() []Unit {
	units := make([]Unit, 0, len(p.views))
	for _, v := range p.views {
		if v.obs == nil {
			continue
		}
		units = append(units, Unit{Index: v.index, Revision: v.revision, Surge: v.obs.Surge, Terminating: v.obs.Terminating,
			CreatedAt: v.obs.CreatedAt, Scheduled: v.scheduled, Ready: v.ready, Available: v.available})
	}
	return units
}
