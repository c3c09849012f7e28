package align

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// SimMember plays a member cluster's own controller for the planner's tests and
// the fleet simulation (`lockstep plan` plays whole members with
// fleetsim.Member instead): the single-cluster planner (rollout.PlanLevel)
// over its units, told the grant as a Deployment or a StatefulSet would be (a
// StatefulSet updates one unit at a time above its partition).
type SimMember struct {
	Name string
	Kind Kind
	// Desired is the replicas the hub wrote last; Scale those the member acts
	// on (behind Desired until it observes the write). Target is its share
	// under the division now.
	Desired, Scale, Target int32
	// scaled is the Scale a frozen member (not started, paused) last scaled
	// to: like a Deployment, it acts only on a change of replicas.
	scaled int32
	Units  []rollout.Unit
	// Written is the grant the hub wrote last; Applied the one the member acts
	// on (behind Written until it observes the write).
	Written, Applied *Grant
	// acting is the hub's record of what else the member may act on
	// (StillActing), all it knows of Applied: read back as Observed while
	// the member is stale.
	acting *Grant
	// Lost: the hub cannot reach the member.
	Lost bool
	// reported is the status the member last wrote, when it lags its units
	// (nil: it reports them as they are). A Deployment writes its status from
	// its ReplicaSets' counts, which trail the pods it just asked for, while
	// its observedGeneration is already current.
	reported *Status
}

// NewSimMember is a member with desired units, all old and available.
func NewSimMember(name string, kind Kind, desired int32) *SimMember {
	m := &SimMember{Name: name, Kind: kind, Desired: desired, Scale: desired, Target: desired, scaled: desired}
	for i := range desired {
		m.Units = append(m.Units, rollout.Unit{Index: i, Revision: "old", Scheduled: true, Ready: true, Available: true})
	}
	return m
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
}

// LagStatus makes the member keep reporting the status it has now (or the
// one it already lags at), until Report: what it does next is not in its
// status yet.
func (f *SimMember) LagStatus() {
	if f.reported == nil {
		st := f.live().Status
		f.reported = &st
	}
}

// Report makes the member's status what its units are.
func (f *SimMember) Report() {
	f.reported = nil
}

// Member is what the hub sees of it.
func (f *SimMember) Member() Member {
	m := f.live()
	if f.reported != nil && f.Kind == Deployment {
		live := m.Status
		m.Status = intentsOver(*f.reported, live)
		m.Status.Settling = m.Status != live
	}
	return m
}

// intentsOver is what the hub reads of a Deployment whose status lags: the
// lagging status, and what its ReplicaSets ask for (each revision's units
// counted as the more of asked and reported, available only when both say
// so), as the hub does.
func intentsOver(reported, units Status) Status {
	old := max(reported.Replicas-reported.Updated, units.Replicas-units.Updated)
	s := Status{Updated: max(reported.Updated, units.Updated), Terminating: reported.Terminating}
	s.Replicas = old + s.Updated
	s.UpdatedAvailable = min(reported.UpdatedAvailable, units.Updated)
	s.Available = s.UpdatedAvailable + min(reported.Available-reported.UpdatedAvailable, units.Replicas-units.Updated)
	return s
}

// live is the member with the status of its units as they are.
func (f *SimMember) live() Member {
	m := Member{Name: f.Name, Kind: f.Kind, Desired: f.Desired, Target: f.Target, Last: f.Written}
	if f.Written != f.Applied || f.Scale != f.Desired {
		m.Reach = Stale
		m.Observed = f.acting
	}
	if f.Lost {
		m.Reach = Lost
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
		if u.Revision == "new" {
			m.Status.Updated++
			if u.Available {
				m.Status.UpdatedAvailable++
			}
		}
	}
	return m
}

// policy is the member controller's own policy under its grant. A member
// not started or paused replaces nothing but still scales, as a Deployment
// does: new units on the template it holds.
func (f *SimMember) policy() (rollout.Policy, bool) {
	p := rollout.Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: f.Scale, UpdateRevision: "new", CurrentRevision: "old",
		UpdateOrder: rollout.LowestIndexFirst, ScaleIn: rollout.HighestIndexFirst}
	g := f.Applied
	switch {
	case f.Kind == Partitioned && g != nil && g.Started:
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(1), intstr.FromInt32(0)
		p.Partition = g.Partition
	case g == nil || !g.Started || g.Paused:
		if f.Scale == f.scaled {
			return p, false
		}
		p.Type = v1alpha1.OnDeleteStrategyType
		if g == nil || !g.Started {
			p.UpdateRevision = "old"
		}
	default:
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(g.MaxUnavailable), intstr.FromInt32(g.MaxSurge)
	}
	f.scaled = f.Scale
	return p, true
}

// Act runs one pass of the member's controller: deletes, then creates (new
// units start unavailable).
func (f *SimMember) Act() error {
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

// Settle lets terminating units go and new units become available.
func (f *SimMember) Settle() {
	f.Units = rollout.Settled(f.Units)
}

// Layout reads as "old=N new=M" plus the grant.
func (f *SimMember) Layout() string {
	m := f.live()
	s := fmt.Sprintf("%s new %d/%d", f.Name, m.Status.UpdatedAvailable, f.Desired)
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
	// Available and Units count over the fleet right after the members acted.
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
// what the members report and writes the grants, each member acts on its grant
// once, then the units it created become available and the ones it deleted go.
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
			if err := f.Act(); err != nil {
				return waves, false, err
			}
			st := f.Member().Status
			w.Available += st.Available
			w.Units += st.Replicas + st.Terminating
		}
		for _, mp := range plan.Members {
			f := byName[mp.Name]
			if f == nil {
				continue
			}
			f.Settle()
			st := f.Member().Status
			w.Members = append(w.Members, WaveMember{Name: f.Name, Desired: f.Desired, Updated: st.Updated,
				Available: st.Available, Grant: mp.Grant, Waiting: mp.Waiting})
		}
		waves = append(waves, w)
		if fmt.Sprint(layoutsOf(fleet)) == before {
			return waves, false, nil
		}
	}
	return waves, false, nil
}

// layoutsOf is every member's units and applied grant, to tell whether a wave
// changed anything.
func layoutsOf(fleet []*SimMember) []string {
	out := make([]string, 0, len(fleet))
	for _, f := range fleet {
		out = append(out, fmt.Sprint(f.Units, f.Applied))
	}
	return out
}
