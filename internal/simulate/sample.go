package simulate

import (
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// sample records, after a plan was applied, the available and updated units of
// every role summed over PCS replicas, the minimum availability per role, and
// which replicas hold pods of more than one PodCliqueSet revision.
func (s *sim) sample() {
	now := s.clock()
	obs := s.model.observe(s.spec.MinReadySeconds, now)
	var roles []RoleSample
	add := func(role string, avail, updated int32) {
		for i := range roles {
			if roles[i].Role == role {
				roles[i].Available += avail
				roles[i].Updated += updated
				return
			}
		}
		roles = append(roles, RoleSample{Role: role, Available: avail, Updated: updated})
	}
	roleRev := func(role string) string {
		if rev, ok := s.revs.Update.Role(role); ok {
			return rev
		}
		return s.revs.Update.Name
	}
	count := func(units []rollout.Unit, rev string) (avail, updated int32) {
		for _, u := range units {
			if u.Terminating {
				continue
			}
			if u.Available {
				avail++
			}
			if u.Revision == rev {
				updated++
			}
		}
		return avail, updated
	}
	tpl := &s.spec.Template
	for _, cs := range tpl.Cliques {
		if tpl.ScalingGroupOf(cs.Name) == nil {
			add(cs.Name, 0, 0)
		}
	}
	for _, gs := range tpl.PodCliqueScalingGroups {
		add(gs.Name, 0, 0)
	}
	for _, o := range obs {
		if o.Terminating {
			continue
		}
		for _, c := range o.Cliques {
			a, u := count(c.Pods, roleRev(c.Name))
			add(c.Name, a, u)
		}
		for _, g := range o.Groups {
			gs := s.spec.Template.ScalingGroup(g.Name)
			if gs == nil {
				continue
			}
			a, u := count(rollout.GroupUnits(memberMinimums(s.spec, gs), g.Replicas), roleRev(g.Name))
			add(g.Name, a, u)
		}
	}
	for _, r := range roles {
		s.trackMin(r.Role, r.Available)
	}
	smp := Sample{At: s.now, Roles: roles}
	if n := len(s.samples); n > 0 && s.samples[n-1].At == s.now {
		s.samples[n-1] = smp
	} else {
		s.samples = append(s.samples, smp)
	}
}

// endInstant counts mixed-revision replicas in the state that lasts until the
// next event (intermediate passes at one instant take no time).
func (s *sim) endInstant() {
	for _, r := range s.model.replicas {
		if !r.terminating && len(r.setRevisions()) > 1 {
			s.mixed[r.index]++
		}
	}
}

func (s *sim) trackMin(role string, v int32) {
	for i := range s.minAvl {
		if s.minAvl[i].Role == role {
			s.minAvl[i].Value = min(s.minAvl[i].Value, v)
			return
		}
	}
	s.minAvl = append(s.minAvl, RoleFigure{Role: role, Value: v})
}
