package align

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/deploysim"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// SimMember plays a member cluster's own controller for the planner's tests and
// the fleet simulation (`lockstep plan` plays whole members with
// fleetsim.Member instead). A Deployment member is played as the Deployment
// and ReplicaSet controllers play it (deploysim), told the grant as the hub
// writes it (member.RolloutFields); a partitioned member with the
// single-cluster planner (rollout.PlanLevel) over its units, one unit at a
// time above its partition, as a StatefulSet does.
type SimMember struct {
	Name string
	Kind Kind
	// Desired is the replicas the hub wrote last; Scale those the member acts
	// on (behind Desired until it observes the write). Target is its share
	// under the division now.
	Desired, Scale, Target int32
	// scaled is the Scale a frozen partitioned member (not started) last
	// scaled to: it acts only on a change of replicas.
	scaled int32
	// Units are a partitioned member's units.
	Units []rollout.Unit
	// Deployment is a Deployment member's object as its controller sees it,
	// with its ReplicaSets and pods.
	Deployment *deploysim.Deployment
	// Written is the grant the hub wrote last; Applied the one the member acts
	// on (behind Written until it observes the write).
	Written, Applied *Grant
	// acting is the hub's record of what else the member may act on
	// (StillActing), all it knows of Applied: read back as Observed while
	// the member is stale.
	acting *Grant
	// Lost: the hub cannot reach the member.
	Lost bool
	// lagging: a Deployment member's ReplicaSet controller does not run (its
	// pods do not follow their ReplicaSets' replicas, their statuses stay)
	// until Report.
	lagging bool
}

// The templates of a simulated rollout: what every member runs at first,
// and what the rollout brings.
const (
	oldTemplate = "old"
	newTemplate = "new"
)

// NewSimMember is a member at rest with desired units, all old and
// available. A Deployment member with none was created paused (a member
// object the hub creates with no share is), so it has no ReplicaSet.
func NewSimMember(name string, kind Kind, desired int32) *SimMember {
	m := &SimMember{Name: name, Kind: kind, Desired: desired, Scale: desired, Target: desired, scaled: desired}
	if kind == Deployment {
		spec := DeploymentSpec(nil, desired)
		if desired > 0 {
			m.Deployment = deploysim.AtRest(spec)
		} else {
			m.Deployment = deploysim.New(spec)
			m.Deployment.Sync() // its controller has seen it: it is current
		}
		return m
	}
	for i := range desired {
		m.Units = append(m.Units, rollout.Unit{Index: i, Revision: oldTemplate, Scheduled: true, Ready: true, Available: true})
	}
	return m
}

// DeploymentSpec is the spec of a Deployment member object holding grant g
// (nil: none written yet) and replicas, as internal/fleet/member writes it:
// not started, it holds the old template, paused, with the placeholder
// limits 1 and 0; started, the new template with the grant as Stored says.
func DeploymentSpec(g *Grant, replicas int32) deploysim.Spec {
	s := deploysim.Spec{Replicas: replicas, Template: oldTemplate, Paused: true,
		MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(0)}
	if g == nil {
		return s
	}
	if st := Stored(Deployment, *g); st.Started {
		s.Template, s.Paused = newTemplate, st.Paused
		s.MaxUnavailable, s.MaxSurge = intstr.FromInt32(st.MaxUnavailable), intstr.FromInt32(st.MaxSurge)
	}
	return s
}

// Write is the hub writing the member object: its replicas and grant.
func (f *SimMember) Write(mp MemberPlan) {
	g := mp.Grant
	seen := f.Member()
	f.acting = StillActing(&seen, g)
	f.Written, f.Desired = &g, mp.Replicas
}

// Observe is the member's controller seeing the last write.
func (f *SimMember) Observe() {
	f.Applied, f.Scale = f.Written, f.Desired
	if f.Deployment != nil {
		f.Deployment.SetSpec(DeploymentSpec(f.Applied, f.Scale))
	}
}

// LagStatus stops a Deployment member's ReplicaSet controller until Report:
// the Deployment controller goes on scaling ReplicaSets whose pods do not
// follow and whose statuses do not change.
func (f *SimMember) LagStatus() {
	f.lagging = true
}

// Report lets a Deployment member's ReplicaSet controller run again: it
// reports the pods as they are, and creates and deletes them at its next
// pass.
func (f *SimMember) Report() {
	if f.Deployment != nil && f.lagging {
		f.Deployment.ReportReplicaSets()
	}
	f.lagging = false
}

// Member is what the hub sees of it.
func (f *SimMember) Member() Member {
	m := Member{Name: f.Name, Kind: f.Kind, Desired: f.Desired, Target: f.Target, Last: f.Written}
	if f.stale() {
		m.Reach = Stale
		m.Observed = f.acting
	}
	if f.Lost {
		m.Reach = Lost
	}
	if f.Deployment != nil {
		m.Status = DeploymentStatus(f.Deployment, DeploymentSpec(f.Written, f.Desired).Template == newTemplate)
		return m
	}
	for _, u := range f.Units {
		if u.Terminating {
			m.Status.Terminating++
			continue
		}
		m.Status.Replicas++
		if u.Available {
			m.Status.Available++
		}
		if u.Revision == newTemplate {
			m.Status.Updated++
			if u.Available {
				m.Status.UpdatedAvailable++
			}
		}
	}
	return m
}

// stale: the member's status does not describe the last write yet. A
// Deployment's is current once its controller synced the spec written last
// (its observedGeneration).
func (f *SimMember) stale() bool {
	if d := f.Deployment; d != nil {
		return d.Spec != DeploymentSpec(f.Written, f.Desired) || d.Status.ObservedGeneration < d.Generation
	}
	return f.Written != f.Applied || f.Scale != f.Desired
}

// DeploymentStatus is what the hub reads of a Deployment member (holding the
// new template or not), as internal/fleet/member reads it (StatusOf, then
// WithReplicaSets; fleetsim's tests check the two agree): the Deployment's
// status, which trails its ReplicaSets' statuses, folded with what each
// ReplicaSet asks for (WithReplicaSets).
func DeploymentStatus(d *deploysim.Deployment, holdsNew bool) Status {
	ds := d.Status
	s := Status{Replicas: ds.Replicas, Terminating: ds.Terminating, Available: ds.Available}
	if holdsNew {
		s.Updated = ds.Updated
	}
	s.UpdatedAvailable = min(s.Updated, max(0, s.Available-(s.Replicas-s.Updated)))
	rss := make([]ReplicaSetCounts, 0, len(d.ReplicaSets))
	for _, rs := range d.ReplicaSets {
		rss = append(rss, ReplicaSetCounts{Spec: rs.Replicas, Replicas: rs.Status.Replicas, Available: rs.Status.AvailableReplicas,
			Observed: rs.Status.ObservedGeneration >= rs.Generation, Newest: d.Revision != 0 && rs.Revision == d.Revision})
	}
	return WithReplicaSets(s, holdsNew, rss)
}

// Counted is the member's units as a watcher outside it bounds them (the
// e2e tests' fleetwatch): a partitioned member's every unit, terminating
// ones too; a Deployment's pods that are not terminating, each ReplicaSet's
// counted up to its replicas (its controller bounds those by maxSurge, not
// the pods it has yet to delete). Available and updated (new) units alike.
func (f *SimMember) Counted() (units, available, updated int32) {
	if f.Deployment != nil {
		return f.Deployment.Counted(newTemplate)
	}
	for _, u := range f.Units {
		units++
		if u.Available {
			available++
		}
		if u.Revision == newTemplate && !u.Terminating {
			updated++
		}
	}
	return units, available, updated
}

// policy is a partitioned member's own policy under its grant. Before its
// first grant it replaces nothing but still scales, new units on the old
// template.
func (f *SimMember) policy() (rollout.Policy, bool) {
	p := rollout.Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: f.Scale, UpdateRevision: newTemplate, CurrentRevision: oldTemplate,
		UpdateOrder: rollout.LowestIndexFirst, ScaleIn: rollout.HighestIndexFirst}
	if g := f.Applied; g == nil || !g.Started {
		if f.Scale == f.scaled {
			return p, false
		}
		p.Type, p.UpdateRevision = v1alpha1.OnDeleteStrategyType, oldTemplate
	} else {
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(PartitionedInFlight), intstr.FromInt32(0)
		p.Partition = g.Partition
	}
	f.scaled = f.Scale
	return p, true
}

// Act runs one pass of the member's controllers. A Deployment's controller
// syncs once, then (unless lagging) its ReplicaSet controller makes the pods
// follow (new pods start unavailable); a partitioned member deletes, then
// creates.
func (f *SimMember) Act() error {
	if d := f.Deployment; d != nil {
		d.Sync()
		if !f.lagging {
			d.SyncReplicaSets()
		}
		return nil
	}
	p, ok := f.policy()
	if !ok {
		return nil
	}
	plan, err := rollout.PlanLevel(p, f.Units)
	if err != nil {
		return fmt.Errorf("member %s: %w", f.Name, err)
	}
	f.Units = rollout.Played(f.Units, plan)
	return nil
}

// Settle lets time pass: terminating units go and new units become
// available (a Deployment's ReplicaSets, unless lagging, report them).
func (f *SimMember) Settle() {
	if d := f.Deployment; d != nil {
		d.StartPods()
		d.RemoveTerminating()
		if !f.lagging {
			d.ReportReplicaSets()
		}
		return
	}
	f.Units = rollout.Settled(f.Units)
}

// StartUnits lets time pass for the new units only: they become available,
// while terminating ones stay (a pod's grace period can outlast another's
// start-up).
func (f *SimMember) StartUnits() {
	if d := f.Deployment; d != nil {
		d.StartPods()
		if !f.lagging {
			d.ReportReplicaSets()
		}
		return
	}
	for i := range f.Units {
		if !f.Units[i].Terminating {
			f.Units[i].Ready, f.Units[i].Available = true, true
		}
	}
}

// settleAndReact lets time pass, then lets a Deployment's controllers react
// at once to its pods' new counts (its controller syncs on its ReplicaSets'
// statuses), on the grant it holds.
func (f *SimMember) settleAndReact() error {
	f.Settle()
	if f.Deployment == nil || f.Lost {
		return nil
	}
	return f.actUntilStill()
}

// actUntilStill runs the member's controllers until they wait for time to
// pass: a Deployment's pass after pass until a pass changes nothing (its
// controller takes one step a sync), a partitioned member's planner once.
func (f *SimMember) actUntilStill() error {
	d := f.Deployment
	if d == nil {
		return f.Act()
	}
	for range 100 {
		changed := d.Sync()
		if !f.lagging {
			changed = d.SyncReplicaSets() || changed
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("member %s: its controllers never came to rest: %s", f.Name, d)
}

// state is the member's units (a Deployment's ReplicaSets and pods) and
// applied grant, to tell whether anything moved.
func (f *SimMember) state() string {
	if f.Deployment != nil {
		return fmt.Sprint(f.Deployment, f.Applied)
	}
	return fmt.Sprint(f.Units, f.Applied)
}

// Layout reads as "name new N/M": N units new and available of M desired,
// plus a partitioned member's partition.
func (f *SimMember) Layout() string {
	var newAvailable int32
	if f.Deployment != nil {
		if rs := f.Deployment.Of(newTemplate); rs != nil {
			newAvailable = rs.Pods.Available
		}
	} else {
		newAvailable = f.Member().Status.UpdatedAvailable
	}
	s := fmt.Sprintf("%s new %d/%d", f.Name, newAvailable, f.Desired)
	if f.Applied != nil && f.Kind == Partitioned {
		s += fmt.Sprintf(" partition %d", f.Applied.Partition)
	}
	return s
}

// Wave is one wave of a simulated rollout: the grants the hub handed out, the
// fleet right after the members acted on them (its fewest available and most
// units), and each member once its new units became available.
type Wave struct {
	Plan Plan
	// Available and Units count over the fleet right after the members
	// acted, as SimMember.Counted counts them.
	Available, Units int32
	Members          []WaveMember
}

// WaveMember is one member at the end of a wave.
type WaveMember struct {
	Name                        string
	Desired, Updated, Available int32
	Grant                       Grant
	Waiting                     string
}

// Play runs a rollout wave by wave, as the hub and the members' controllers
// would with every unit taking one start-up time: each wave the hub aligns on
// what the members report and writes the grants, each member's controllers
// act on its grant until they wait for time to pass, then the units they
// created become available and the ones they deleted go. Units are counted as
// a watcher outside the members counts them (SimMember.Counted).
// It stops when Align reports the rollout done, when a wave changed nothing
// (stuck: paused, or waiting for ever), or after maxWaves; done says whether
// it finished.
func Play(s Strategy, fleet []*SimMember, maxWaves int) (waves []Wave, done bool, err error) {
	byName := make(map[string]*SimMember, len(fleet))
	for _, f := range fleet {
		byName[f.Name] = f
	}
	for range maxWaves {
		before := fmt.Sprint(layoutsOf(fleet))
		ms := make([]Member, 0, len(fleet))
		for _, f := range fleet {
			ms = append(ms, f.Member())
		}
		plan, err := Align(s, ms)
		if err != nil {
			return waves, false, err
		}
		if plan.Done {
			return waves, true, nil
		}
		w := Wave{Plan: plan}
		for _, mp := range plan.Members {
			if f := byName[mp.Name]; f != nil && !f.Lost {
				f.Write(mp)
				f.Observe()
			}
		}
		for _, f := range fleet {
			if err := f.actUntilStill(); err != nil {
				return waves, false, err
			}
			units, available, _ := f.Counted()
			w.Available += available
			w.Units += units
		}
		for _, mp := range plan.Members {
			f := byName[mp.Name]
			if f == nil {
				continue
			}
			if err := f.settleAndReact(); err != nil {
				return waves, false, err
			}
			_, available, updated := f.Counted()
			w.Members = append(w.Members, WaveMember{Name: f.Name, Desired: f.Desired, Updated: updated,
				Available: available, Grant: mp.Grant, Waiting: mp.Waiting})
		}
		waves = append(waves, w)
		if fmt.Sprint(layoutsOf(fleet)) == before {
			return waves, false, nil
		}
	}
	return waves, false, nil
}

// layoutsOf is every member's state, to tell whether a wave changed
// anything.
func layoutsOf(fleet []*SimMember) []string {
	out := make([]string, 0, len(fleet))
	for _, f := range fleet {
		out = append(out, f.state())
	}
	return out
}
