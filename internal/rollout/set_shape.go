package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// PlanSet plans the PodCliqueSet level: PCS replicas to create and delete, the
// target of every child, and the set's status.
//
// RollingUpdate updates one PCS replica at a time (a replica already updating
// first, then unscheduled, then below minAvailable, then lowest index); inside
// it roles update concurrently, or by roleUpgrade.steps. ReplicaRecreate runs
// PlanLevel over whole PCS replicas. OnDelete only moves targets. Replicas below
// the partition and every replica while paused keep their updated count frozen.
func PlanSet(in SetInput) (SetPlan, error) {
	shape, err := newSetShape(in.Spec)
	if err != nil {
		return SetPlan{}, err
	}
	p := &setPlanner{in: in, shape: shape}
	if in.Previous.UpdateRevision == in.Revisions.Update.Name {
		p.gatesPassed = in.Previous.ReplicaGatesPassed
	}
	return p.plan()
}

// roleShape is one role of the spec, normalized.
type roleShape struct {
	name                   string
	group                  bool
	replicas, minAvailable int32
	// limits are the role's own maxUnavailable/maxSurge (nil: the defaults).
	limits  *v1alpha1.ComponentUpdateStrategy
	members []roleShape // cliques of a group
}

type setShape struct {
	spec      *v1alpha1.PodCliqueSetSpec
	replicas  int32
	strategy  v1alpha1.UpdateStrategyType
	partition int32
	roles     []roleShape // standalone cliques then groups, spec order
	steps     []v1alpha1.RoleUpgradeStep
}

func newSetShape(spec *v1alpha1.PodCliqueSetSpec) (*setShape, error) {
	if spec == nil {
		return nil, fmt.Errorf("planning a PodCliqueSet: spec is nil")
	}
	s := &setShape{spec: spec, replicas: 1, strategy: spec.UpdateStrategy.Type}
	if spec.Replicas != nil {
		s.replicas = *spec.Replicas
	}
	if s.strategy.IsRollingUpdate() {
		s.strategy = v1alpha1.RollingUpdateStrategyType
		if ru := spec.UpdateStrategy.RoleUpgrade; ru != nil {
			s.steps = ru.Steps
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		s.partition = *ru.Partition
	}
	tpl := &spec.Template
	for i := range tpl.Cliques {
		c := &tpl.Cliques[i]
		if tpl.ScalingGroupOf(c.Name) == nil {
			s.roles = append(s.roles, cliqueShape(c))
		}
	}
	for i := range tpl.PodCliqueScalingGroups {
		g := &tpl.PodCliqueScalingGroups[i]
		r := roleShape{name: g.Name, group: true, replicas: g.Replicas, minAvailable: g.EffectiveMinAvailable()}
		r.limits = g.UpdateStrategy
		for _, n := range g.CliqueNames {
			c := tpl.Clique(n)
			if c == nil {
				return nil, fmt.Errorf("scaling group %q names unknown clique %q", g.Name, n)
			}
			r.members = append(r.members, cliqueShape(c))
		}
		s.roles = append(s.roles, r)
	}
	for _, st := range s.steps {
		r := s.role(st.Role)
		if r == nil {
			return nil, fmt.Errorf("roleUpgrade step names unknown role %q", st.Role)
		}
		if _, err := ResolveUpdateTo(st.UpdateTo, r.replicas); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func cliqueShape(c *v1alpha1.PodCliqueTemplateSpec) roleShape {
	r := roleShape{name: c.Name, replicas: c.Replicas, minAvailable: c.EffectiveMinAvailable()}
	r.limits = c.UpdateStrategy
	return r
}

func (s *setShape) role(name string) *roleShape {
	for i := range s.roles {
		if s.roles[i].name == name {
			return &s.roles[i]
		}
	}
	return nil
}

// setLimits are the PCS-level maxUnavailable/maxSurge (ReplicaRecreate only).
func (s *setShape) setLimits() (intstr.IntOrString, intstr.IntOrString) {
	if s.strategy != v1alpha1.ReplicaRecreateStrategyType {
		return (*v1alpha1.PodCliqueSetRollingUpdate)(nil).Limits()
	}
	return s.spec.UpdateStrategy.RollingUpdate.Limits()
}
