package rollout

import (
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// PodRules are the PodCliqueSet's rules for the pods of a standalone clique:
// when a replacement may start and at which index a surge pod starts.
type PodRules struct {
	Replacement v1alpha1.PodReplacementPolicy
	Surge       v1alpha1.SurgePlacement
}

// PodRulesOf are the pod rules a PodCliqueSet spec sets.
func PodRulesOf(s *v1alpha1.PodCliqueSetSpec) PodRules {
	return PodRules{Replacement: s.PodReplacementPolicy, Surge: s.SurgePlacement}
}

// ChildSpec is the part of a PodClique's or PodCliqueScalingGroup's spec that
// carries its Target. It is the one encoding of a target: the PodCliqueSet
// controller writes it (EncodeTarget), PlanTree plans from it, and the child's
// controller and PlanTree read it back the same way (Policy, DecodeTarget).
type ChildSpec struct {
	// Replicas is the child's spec.replicas (see ChildReplicas).
	Replicas int32
	// Revision is the PodCliqueSet revision the child's template is taken from.
	Revision       string
	UpdateStrategy v1alpha1.ChildUpdateStrategy
}

// EncodeTarget is the ChildSpec of role for target t. limits are the role's own
// maxUnavailable/maxSurge from the PodCliqueSet template (nil: the defaults);
// OnDelete children carry none. A held-back unit's template is named by the set
// revision that holds the role at t.CurrentRevision. pods are the
// PodCliqueSet's pod rules for a standalone clique, zero for a scaling group.
func EncodeTarget(t Target, revs Revisions, role string, limits *v1alpha1.ComponentUpdateStrategy, replicas int32,
	pods PodRules) ChildSpec {
	st := v1alpha1.ChildUpdateStrategy{Type: v1alpha1.RollingUpdateStrategyType, PodReplacementPolicy: pods.Replacement,
		SurgePlacement: pods.Surge}
	if t.Type == v1alpha1.OnDeleteStrategyType {
		st.Type = v1alpha1.OnDeleteStrategyType
	} else {
		mu, ms := limits.Limits()
		st.MaxUnavailable, st.MaxSurge = &mu, &ms
	}
	if t.MaxUpdated != nil {
		n := *t.MaxUpdated
		st.MaxUpdated = &n
	}
	if t.CurrentRevision != t.UpdateRevision {
		if set, ok := revs.Holding(role, t.CurrentRevision); ok {
			st.CurrentRevision = set.Name
		}
	}
	return ChildSpec{Replicas: replicas, Revision: t.SetRevision, UpdateStrategy: st}
}

// DecodeTarget reads back the target written into a child's spec, whose
// template hashes to updateRevision. A current revision the history no longer
// holds reads as the update revision.
func DecodeTarget(spec ChildSpec, updateRevision, role string, revs Revisions) *Target {
	st := spec.UpdateStrategy
	t := &Target{Type: v1alpha1.RollingUpdateStrategyType, SetRevision: spec.Revision, UpdateRevision: updateRevision,
		CurrentRevision: updateRevision, MaxUpdated: st.MaxUpdated}
	if st.Type == v1alpha1.OnDeleteStrategyType {
		t.Type = v1alpha1.OnDeleteStrategyType
	}
	if st.CurrentRevision != "" {
		if set, ok := revs.find(st.CurrentRevision); ok {
			if h, ok := set.Role(role); ok {
				t.CurrentRevision = h
			}
		}
	}
	return t
}

// Written is the target a child reads back once its PodCliqueSet wrote t into
// its spec: what a simulated child must see to behave as a real one.
func (t Target) Written(revs Revisions, role string) *Target {
	return DecodeTarget(EncodeTarget(t, revs, role, nil, 0, PodRules{}), t.UpdateRevision, role, revs)
}

// Policy is the policy a child plans with: what its spec says, its template
// hashed to updateRevision, and currentRevision the hash of the template its
// held-back units are recreated from.
func (c ChildSpec) Policy(kind ChildKind, updateRevision, currentRevision string) Policy {
	t := Target{Type: v1alpha1.RollingUpdateStrategyType, UpdateRevision: updateRevision, CurrentRevision: currentRevision,
		MaxUpdated: c.UpdateStrategy.MaxUpdated}
	if c.UpdateStrategy.Type == v1alpha1.OnDeleteStrategyType {
		t.Type = v1alpha1.OnDeleteStrategyType
	}
	mu, ms := c.UpdateStrategy.Limits()
	p := ChildPolicy(t, c.Replicas, mu, ms, kind)
	p.ReplaceWhileTerminating = kind == KindClique && c.UpdateStrategy.PodReplacementPolicy.ReplacesWhileTerminating()
	p.SurgeAtReplacedIndex = p.ReplaceWhileTerminating && c.UpdateStrategy.SurgePlacement == v1alpha1.ReplacedIndex
	return p
}

// ChildReplicasObservation is what a child's spec.replicas holds now, and the
// template replicas the PodCliqueSet last wrote into it.
type ChildReplicasObservation struct {
	Spec, Template int32
}

// ChildReplicas is the spec.replicas to write into a child whose template asks
// for template replicas. While the template keeps the number last written, the
// child's own replicas stand: someone scaled it through /scale (an HPA). A change
// of the template wins again. A child not created yet (nil) takes the template's.
func ChildReplicas(observed *ChildReplicasObservation, template int32) int32 {
	if observed != nil && observed.Template == template {
		return observed.Spec
	}
	return template
}
