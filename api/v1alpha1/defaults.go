package v1alpha1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/limit"
)

// Defaults the API applies. The CRD schema applies the ones it can express; the
// defaulting webhook applies all of them through Default, so objects look the same
// whichever path they took.
const (
	DefaultReplicas                = 1
	DefaultProgressDeadlineSeconds = 600
	DefaultRevisionHistoryLimit    = 10
	DefaultScalingGroupMinAvail    = 1
)

var (
	// DefaultMaxUnavailable is the maxUnavailable of every level when unset
	// (limit.DefaultMaxUnavailable, the one default of both halves).
	DefaultMaxUnavailable = intstr.FromInt32(limit.DefaultMaxUnavailable)
	// DefaultMaxSurge is the maxSurge of every level when unset
	// (limit.DefaultMaxSurge).
	DefaultMaxSurge = intstr.FromInt32(limit.DefaultMaxSurge)
)

// DesiredReplicas is spec.replicas with its default applied: the count every
// reader that may see an object not yet defaulted (the plan, the plugin, the
// monitor) takes as desired.
func (s *PodCliqueSetSpec) DesiredReplicas() int32 {
	if s.Replicas == nil {
		return DefaultReplicas
	}
	return *s.Replicas
}

// Default fills in every unset field of a PodCliqueSet that has a default and
// rewrites the RollingRecreate synonym to RollingUpdate. It never fails: invalid
// values are left for validation to report.
func (p *PodCliqueSet) Default() {
	s := &p.Spec
	if s.Replicas == nil {
		s.Replicas = ptr.To[int32](DefaultReplicas)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr.To[int32](DefaultProgressDeadlineSeconds)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr.To[int32](DefaultRevisionHistoryLimit)
	}
	if s.PodReplacementPolicy == "" {
		s.PodReplacementPolicy = TerminationStarted
	}
	if s.SurgePlacement == "" {
		s.SurgePlacement = AboveReplicas
	}
	if s.ReplicaReplacementPolicy == "" {
		s.ReplicaReplacementPolicy = Immediate
	}
	switch s.UpdateStrategy.Type {
	case "", RollingRecreateStrategyType:
		s.UpdateStrategy.Type = RollingUpdateStrategyType
	case ReplicaRecreateStrategyType:
		// Only ReplicaRecreate uses PodCliqueSet-level limits; elsewhere they are
		// rejected, so defaulting them would turn a valid object invalid.
		ru := s.UpdateStrategy.RollingUpdate
		if ru == nil {
			ru = &PodCliqueSetRollingUpdate{}
			s.UpdateStrategy.RollingUpdate = ru
		}
		ru.MaxUnavailable, ru.MaxSurge = defaultLimits(ru.MaxUnavailable, ru.MaxSurge)
	}
	for i := range s.Template.Cliques {
		c := &s.Template.Cliques[i]
		if c.MinAvailable == nil && c.Replicas > 0 {
			c.MinAvailable = ptr.To(c.Replicas)
		}
		if c.PeerDNS == "" {
			c.PeerDNS = PeerDNSReplica
		}
		if c.UpdateStrategy != nil {
			c.UpdateStrategy.MaxUnavailable, c.UpdateStrategy.MaxSurge = defaultLimits(c.UpdateStrategy.MaxUnavailable, c.UpdateStrategy.MaxSurge)
		}
	}
	for i := range s.Template.PodCliqueScalingGroups {
		g := &s.Template.PodCliqueScalingGroups[i]
		if g.MinAvailable == nil && g.Replicas > 0 {
			g.MinAvailable = ptr.To[int32](DefaultScalingGroupMinAvail)
		}
		if g.UpdateStrategy != nil {
			g.UpdateStrategy.MaxUnavailable, g.UpdateStrategy.MaxSurge = defaultLimits(g.UpdateStrategy.MaxUnavailable, g.UpdateStrategy.MaxSurge)
		}
	}
}

// defaultLimits fills the unset half of a maxUnavailable/maxSurge pair.
func defaultLimits(maxUnavailable, maxSurge *intstr.IntOrString) (*intstr.IntOrString, *intstr.IntOrString) {
	mu, ms := limit.Defaulted(maxUnavailable, maxSurge)
	return &mu, &ms
}

// IsRollingUpdate reports whether t means RollingUpdate (including its synonym and
// the empty default).
func (t UpdateStrategyType) IsRollingUpdate() bool {
	return t == "" || t == RollingUpdateStrategyType || t == RollingRecreateStrategyType
}

// ScalingGroupOf returns the scaling group that holds the named clique, or nil for
// a standalone clique.
func (t *PodCliqueSetTemplateSpec) ScalingGroupOf(clique string) *PodCliqueScalingGroupConfig {
	for i := range t.PodCliqueScalingGroups {
		for _, n := range t.PodCliqueScalingGroups[i].CliqueNames {
			if n == clique {
				return &t.PodCliqueScalingGroups[i]
			}
		}
	}
	return nil
}

// Clique returns the clique with the given name, or nil.
func (t *PodCliqueSetTemplateSpec) Clique(name string) *PodCliqueTemplateSpec {
	for i := range t.Cliques {
		if t.Cliques[i].Name == name {
			return &t.Cliques[i]
		}
	}
	return nil
}

// EffectiveMinAvailable is minAvailable with its default (replicas) applied.
func (c *PodCliqueTemplateSpec) EffectiveMinAvailable() int32 {
	if c.MinAvailable == nil {
		return c.Replicas
	}
	return *c.MinAvailable
}

// EffectiveMinAvailable is minAvailable with its default (1, at most replicas)
// applied.
func (g *PodCliqueScalingGroupConfig) EffectiveMinAvailable() int32 {
	if g.MinAvailable == nil {
		return min(DefaultScalingGroupMinAvail, g.Replicas)
	}
	return *g.MinAvailable
}

// Members are copies of the member cliques of scaling group g, in its order.
func (t *PodCliqueSetTemplateSpec) Members(g *PodCliqueScalingGroupConfig) []PodCliqueTemplateSpec {
	var out []PodCliqueTemplateSpec
	for _, n := range g.CliqueNames {
		if c := t.Clique(n); c != nil {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}

// ScalingGroup returns the scaling group with the given name, or nil.
func (t *PodCliqueSetTemplateSpec) ScalingGroup(name string) *PodCliqueScalingGroupConfig {
	for i := range t.PodCliqueScalingGroups {
		if t.PodCliqueScalingGroups[i].Name == name {
			return &t.PodCliqueScalingGroups[i]
		}
	}
	return nil
}

// Limits are maxUnavailable and maxSurge with their defaults applied; a nil
// strategy has the defaults.
func (s *ComponentUpdateStrategy) Limits() (maxUnavailable, maxSurge intstr.IntOrString) {
	if s == nil {
		return limit.Defaulted(nil, nil)
	}
	return limit.Defaulted(s.MaxUnavailable, s.MaxSurge)
}

// Limits are the PodCliqueSet-level maxUnavailable and maxSurge with their
// defaults applied; a nil rolling update has the defaults.
func (r *PodCliqueSetRollingUpdate) Limits() (maxUnavailable, maxSurge intstr.IntOrString) {
	if r == nil {
		return limit.Defaulted(nil, nil)
	}
	return limit.Defaulted(r.MaxUnavailable, r.MaxSurge)
}

// Limits are the child's maxUnavailable and maxSurge with their defaults applied.
func (s *ChildUpdateStrategy) Limits() (maxUnavailable, maxSurge intstr.IntOrString) {
	return limit.Defaulted(s.MaxUnavailable, s.MaxSurge)
}

// EffectiveMinAvailable is minAvailable with its default (replicas) applied.
func (s *PodCliqueSpec) EffectiveMinAvailable() int32 {
	if s.MinAvailable == nil {
		return s.Replicas
	}
	return *s.MinAvailable
}

// EffectiveMinAvailable is minAvailable with its default (replicas) applied; the
// PodCliqueSet always writes it.
func (s *PodCliqueScalingGroupSpec) EffectiveMinAvailable() int32 {
	if s.MinAvailable == nil {
		return s.Replicas
	}
	return *s.MinAvailable
}
