package align

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// fakeMember plays a member cluster's own controller: the single-cluster
// planner (rollout.PlanLevel) over its units, told the grant as a Deployment or
// a StatefulSet would be (a StatefulSet updates one unit at a time above its
// partition).
type fakeMember struct {
	name    string
	kind    Kind
	desired int32
	units   []rollout.Unit
	// written is the grant the hub wrote last; applied the one the member acts
	// on (behind written until it observes the write).
	written, applied *Grant
	lost             bool
}

func newFakeMember(name string, kind Kind, desired int32) *fakeMember {
	m := &fakeMember{name: name, kind: kind, desired: desired}
	for i := range desired {
		m.units = append(m.units, rollout.Unit{Index: i, Revision: "old", Scheduled: true, Ready: true, Available: true})
	}
	return m
}

// member is what the hub sees of it.
func (f *fakeMember) member() Member {
	m := Member{Name: f.name, Kind: f.kind, Desired: f.desired, Last: f.written}
	if f.written != f.applied {
		m.Reach = Stale
		if f.applied != nil {
			m.Observed = f.applied
		} else {
			g := initial(&m)
			m.Observed = &g
		}
	}
	if f.lost {
		m.Reach = Lost
	}
	for _, u := range f.units {
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

// policy is the member controller's own policy under its grant.
func (f *fakeMember) policy() (rollout.Policy, bool) {
	g := f.applied
	if g == nil || !g.Started {
		return rollout.Policy{}, false
	}
	p := rollout.Policy{Type: v1alpha1.RollingUpdateStrategyType, Replicas: f.desired, UpdateRevision: "new", CurrentRevision: "old",
		UpdateOrder: rollout.LowestIndexFirst, ScaleIn: rollout.HighestIndexFirst}
	switch f.kind {
	case Partitioned:
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(1), intstr.FromInt32(0)
		p.Partition = g.Partition
	case Deployment:
		if g.Paused {
			return rollout.Policy{}, false
		}
		p.MaxUnavailable, p.MaxSurge = intstr.FromInt32(g.MaxUnavailable), intstr.FromInt32(g.MaxSurge)
	}
	return p, true
}

// act runs one pass of the member's controller: deletes, then creates (new
// units start unavailable).
func (f *fakeMember) act() error {
	p, ok := f.policy()
	if !ok {
		return nil
	}
	plan, err := rollout.PlanLevel(p, f.units)
	if err != nil {
		return fmt.Errorf("member %s: %w", f.name, err)
	}
	for _, d := range plan.Deletes {
		for i := range f.units {
			if f.units[i].Index == d.Index && !f.units[i].Terminating {
				f.units[i].Terminating, f.units[i].Available, f.units[i].Ready = true, false, false
			}
		}
	}
	for _, c := range plan.Creates {
		f.units = append(f.units, rollout.Unit{Index: c.Index, Revision: c.Revision, Surge: c.Surge, Scheduled: true})
	}
	return nil
}

// settle lets terminating units go and new units become available.
func (f *fakeMember) settle() {
	f.units = slices.DeleteFunc(f.units, func(u rollout.Unit) bool { return u.Terminating })
	for i := range f.units {
		f.units[i].Ready, f.units[i].Available = true, true
	}
}

// layout reads as "old=N new=M" plus the grant.
func (f *fakeMember) layout() string {
	m := f.member()
	s := fmt.Sprintf("%s new %d/%d", f.name, m.Status.UpdatedAvailable, f.desired)
	if f.applied != nil && f.kind == Partitioned {
		s += fmt.Sprintf(" partition %d", f.applied.Partition)
	}
	return s
}
