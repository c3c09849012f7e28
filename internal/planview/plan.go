// Package planview runs a PodCliqueSet rollout through the simulator and renders
// it for people and programs: a text timeline, a JSON document and an SVG chart of
// available and updated units per role. It is the presentation half of
// `lockstep plan`; reading and validating manifests is the command's job.
package planview

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// Input is one planned rollout: the PodCliqueSet running at From, updated to To at
// simulated time zero, and how the simulated pods behave.
type Input struct {
	// Name is the PodCliqueSet's name.
	Name string
	// From and To are the current and the new spec, both defaulted.
	From, To *v1alpha1.PodCliqueSetSpec
	// FromRevision and ToRevision are their revisions (internal/revision.ForSpec).
	FromRevision, ToRevision rollout.SetRevision
	// Startup is how long a created pod takes to become ready; Jitter varies it
	// by up to ±Jitter×Startup, drawn from Seed.
	Startup time.Duration
	Jitter  float64
	Seed    uint64
	// Grace is how long a deleted pod takes to go away.
	Grace time.Duration
	// Faults make chosen new units never become ready.
	Faults []simulate.Fault
	// Approvals approve gates at simulated times, as `kubectl lockstep
	// approve` would.
	Approvals []simulate.Approval
	// Analyses are the scripted results of gates' analyses (--analysis).
	Analyses []gate.Scripted
}

// Plan is a simulated rollout with what the renderings need to explain it.
type Plan struct {
	Input
	Result simulate.Result
	// Roles are the standalone cliques and then the scaling groups of To, in
	// template order (the order of simulate.Sample.Roles).
	Roles []Role
}

// Role is an updatable part of a PodCliqueSet replica: a standalone clique (whose
// units are pods) or a scaling group (whose units are group replicas).
type Role struct {
	Name  string
	Group bool
	// Members are a group's cliques.
	Members []string
	// FromUnits and Units are the units per PodCliqueSet replica before and after.
	FromUnits, Units int32
	// PodsPerUnit is 1 for a clique and the pods of one group replica otherwise.
	PodsPerUnit int32
	// FromRevision and ToRevision are the role's template revisions.
	FromRevision, ToRevision string
	// ChangedMembers are a group's cliques whose template revision changed.
	ChangedMembers []string
	// MaxUnavailable and MaxSurge are the role's limits under RollingUpdate.
	MaxUnavailable, MaxSurge intstr.IntOrString
}

// Changed reports whether the role's template differs between the revisions.
func (r Role) Changed() bool { return r.FromRevision != r.ToRevision }

// Simulate runs the rollout described by in.
func Simulate(in Input) *Plan {
	res := simulate.Run(simulate.Scenario{
		From: in.From, FromRevision: in.FromRevision,
		To: in.To, ToRevision: in.ToRevision,
		Startup: in.Startup, Jitter: in.Jitter, Seed: in.Seed, Grace: in.Grace,
		Faults: in.Faults, Approvals: in.Approvals, Analyses: in.Analyses,
	})
	return New(in, res)
}

// New wraps a result that was simulated from in.
func New(in Input, res simulate.Result) *Plan {
	return &Plan{Input: in, Result: res, Roles: roles(in)}
}

func roles(in Input) []Role {
	tpl, old := &in.To.Template, &in.From.Template
	rev := func(set rollout.SetRevision, role string) string {
		r, _ := set.Role(role)
		return r
	}
	var out []Role
	for i := range tpl.Cliques {
		c := &tpl.Cliques[i]
		if tpl.ScalingGroupOf(c.Name) != nil {
			continue
		}
		r := Role{Name: c.Name, Units: c.Replicas, PodsPerUnit: 1,
			FromRevision: rev(in.FromRevision, c.Name), ToRevision: rev(in.ToRevision, c.Name)}
		if oc := old.Clique(c.Name); oc != nil {
			r.FromUnits = oc.Replicas
		}
		r.MaxUnavailable, r.MaxSurge = c.UpdateStrategy.Limits()
		out = append(out, r)
	}
	for i := range tpl.PodCliqueScalingGroups {
		g := &tpl.PodCliqueScalingGroups[i]
		r := Role{Name: g.Name, Group: true, Members: g.CliqueNames, Units: g.Replicas,
			FromRevision: rev(in.FromRevision, g.Name), ToRevision: rev(in.ToRevision, g.Name)}
		for _, m := range g.CliqueNames {
			if c := tpl.Clique(m); c != nil {
				r.PodsPerUnit += c.Replicas
			}
			if rev(in.FromRevision, m) != rev(in.ToRevision, m) {
				r.ChangedMembers = append(r.ChangedMembers, m)
			}
		}
		for j := range old.PodCliqueScalingGroups {
			if old.PodCliqueScalingGroups[j].Name == g.Name {
				r.FromUnits = old.PodCliqueScalingGroups[j].Replicas
			}
		}
		r.MaxUnavailable, r.MaxSurge = g.UpdateStrategy.Limits()
		out = append(out, r)
	}
	return out
}

// role returns the role named name, or nil.
func (p *Plan) role(name string) *Role {
	for i := range p.Roles {
		if p.Roles[i].Name == name {
			return &p.Roles[i]
		}
	}
	return nil
}

// total is how many units of r exist over all PodCliqueSet replicas once the
// rollout is done.
func (p *Plan) total(r *Role) int32 { return p.To.DesiredReplicas() * r.Units }

// initial is the steady state before time zero: every unit of From available,
// and updated when its template does not change.
func (p *Plan) initial() simulate.Sample {
	s := simulate.Sample{At: 0}
	for _, r := range p.Roles {
		avail := p.From.DesiredReplicas() * r.FromUnits
		var updated int32
		if !r.Changed() {
			updated = avail
		}
		s.Roles = append(s.Roles, simulate.RoleSample{Role: r.Name, Available: avail, Updated: updated})
	}
	return s
}

// strategy is the update strategy type of the new spec.
func (p *Plan) strategy() v1alpha1.UpdateStrategyType {
	if t := p.To.UpdateStrategy.Type; t != "" && t != v1alpha1.RollingRecreateStrategyType {
		return t
	}
	return v1alpha1.RollingUpdateStrategyType
}

// Explained reports whether a Stuck outcome is explained by injected faults.
func (p *Plan) Explained() bool {
	return p.Result.Outcome.Kind == simulate.Stuck && p.Result.Outcome.FaultsFired > 0
}

// AtGate reports whether a Stuck outcome is a gate awaiting an approval the
// simulation was not given: held by design, as a pause is.
func (p *Plan) AtGate() bool {
	return p.Result.Outcome.Kind == simulate.Stuck && strings.HasPrefix(p.Result.Outcome.Reason, string(v1alpha1.ReasonAwaitingApproval))
}

// ExitCode is what `lockstep plan` exits with: 0 when the rollout completes or
// stalls only because of an injected fault, 1 otherwise.
func (p *Plan) ExitCode() int {
	switch p.Result.Outcome.Kind {
	case simulate.Complete:
		return 0
	case simulate.Stuck:
		if p.Explained() || p.AtGate() {
			return 0
		}
	}
	return 1
}

// faultHits finds, for every fault that fired, the index in the timeline of the
// create it broke: the After-th unit created for its role.
func (p *Plan) faultHits() map[int]simulate.Fault {
	hits := map[int]simulate.Fault{}
	created := map[string]int{}
	for i, a := range p.Result.Timeline {
		if a.Op != simulate.OpCreate || a.Role == "" {
			continue
		}
		created[a.Role]++
		for _, f := range p.Faults {
			if f.Role == a.Role && f.After == created[a.Role] {
				hits[i] = f
			}
		}
	}
	return hits
}

// shortRevision drops the PodCliqueSet name from a set revision name.
func shortRevision(pcs, rev string) string {
	return strings.TrimPrefix(rev, pcs+"-")
}

// ordinal renders 1 as "1st", 2 as "2nd" and so on.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
