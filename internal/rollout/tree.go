package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// ChildKind says which level a ChildPlan is for.
type ChildKind string

const (
	// KindClique is a standalone PodClique: its units are pods.
	KindClique ChildKind = "clique"
	// KindGroup is a PodCliqueScalingGroup: its units are group replicas.
	KindGroup ChildKind = "group"
	// KindMember is a PodClique inside one scaling-group replica: its units are pods.
	KindMember ChildKind = "member"
)

// ChildPlan is the plan of one child level of a PCS replica.
type ChildPlan struct {
	Kind    ChildKind
	Replica int32 // PCS replica index
	// Role is the clique or scaling-group name; for KindMember the member clique.
	Role string
	// Group and GroupReplica locate a KindMember clique.
	Group        string
	GroupReplica int32
	// Spec is what the PodCliqueSet writes into the child's spec (nil for
	// KindMember, which its scaling group writes); Policy is decoded from it.
	Spec   *ChildSpec
	Policy Policy
	Level  LevelPlan
}

// TreePlan is PlanSet plus the plan of every child level.
type TreePlan struct {
	Set      SetPlan
	Children []ChildPlan
}

// PlanTree plans every level at once: the PodCliqueSet, then each child with the
// target PlanSet gives it, as the controllers would one after the other. Children
// of replicas and group replicas created by this plan are planned empty, so their
// first units appear in the same plan. The simulator and benchmarks use it.
func PlanTree(in SetInput) (TreePlan, error) {
	set, err := PlanSet(in)
	if err != nil {
		return TreePlan{}, err
	}
	shape, _ := newSetShape(in.Spec)
	tree := TreePlan{Set: set}
	for _, rp := range set.Replicas {
		obs := findReplica(in.Replicas, rp.Index)
		for _, ct := range rp.Cliques {
			if ct.Target == nil {
				continue
			}
			var pods []Unit
			if obs != nil {
				if c := findClique(obs.Cliques, ct.Role); c != nil {
					pods = c.Pods
				}
			}
			r := shape.role(ct.Role)
			spec := EncodeTarget(*ct.Target, in.Revisions, ct.Role, r.limits, ChildReplicas(observedClique(obs, ct.Role), r.replicas),
				PodRulesOf(in.Spec))
			pol := decodePolicy(spec, KindClique, ct.Target.UpdateRevision, ct.Role, in.Revisions)
			lvl, err := PlanLevel(pol, pods)
			if err != nil {
				return TreePlan{}, fmt.Errorf("planning clique %s of replica %d: %w", ct.Role, rp.Index, err)
			}
			tree.Children = append(tree.Children, ChildPlan{Kind: KindClique, Replica: rp.Index, Role: ct.Role, GroupReplica: -1, Spec: &spec, Policy: pol, Level: lvl})
		}
		for _, ct := range rp.Groups {
			if ct.Target == nil {
				continue
			}
			var g *GroupObservation
			if obs != nil {
				g = findGroup(obs.Groups, ct.Role)
			}
			children, err := planGroup(in.Revisions, shape.role(ct.Role), rp.Index, *ct.Target, g)
			if err != nil {
				return TreePlan{}, err
			}
			tree.Children = append(tree.Children, children...)
		}
	}
	return tree, nil
}

// planGroup plans a scaling group and the member cliques of each group replica.
func planGroup(revs Revisions, r *roleShape, replica int32, t Target, g *GroupObservation) ([]ChildPlan, error) {
	var reps []GroupReplicaObservation
	if g != nil {
		reps = g.Replicas
	}
	var observed *ChildReplicasObservation
	if g != nil {
		observed = &ChildReplicasObservation{Spec: g.SpecReplicas, Template: g.TemplateReplicas}
	}
	spec := EncodeTarget(t, revs, r.name, r.limits, ChildReplicas(observed, r.replicas), PodRules{})
	pol := decodePolicy(spec, KindGroup, t.UpdateRevision, r.name, revs)
	lvl, err := PlanLevel(pol, GroupUnits(r.memberMinimums(), reps))
	if err != nil {
		return nil, fmt.Errorf("planning scaling group %s of replica %d: %w", r.name, replica, err)
	}
	out := []ChildPlan{{Kind: KindGroup, Replica: replica, Role: r.name, GroupReplica: -1, Spec: &spec, Policy: pol, Level: lvl}}
	member := func(index int32, groupRev string, cliques []CliqueObservation) error {
		for _, m := range r.members {
			var pods []Unit
			if c := findClique(cliques, m.name); c != nil {
				pods = c.Pods
			}
			mp := MemberPolicy(revs, r.name, groupRev, m.name, m.replicas)
			ml, err := PlanLevel(mp, pods)
			if err != nil {
				return fmt.Errorf("planning clique %s of group replica %s-%d: %w", m.name, r.name, index, err)
			}
			out = append(out, ChildPlan{Kind: KindMember, Replica: replica, Role: m.name, Group: r.name, GroupReplica: index, Policy: mp, Level: ml})
		}
		return nil
	}
	for i := range reps {
		if reps[i].Terminating {
			continue
		}
		if err := member(reps[i].Index, reps[i].Revision, reps[i].Cliques); err != nil {
			return nil, err
		}
	}
	for _, c := range lvl.Creates {
		if err := member(c.Index, c.Revision, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// observedClique is what a standalone clique's spec.replicas holds now, or nil.
func observedClique(obs *ReplicaObservation, role string) *ChildReplicasObservation {
	if obs == nil {
		return nil
	}
	c := findClique(obs.Cliques, role)
	if c == nil {
		return nil
	}
	return &ChildReplicasObservation{Spec: c.SpecReplicas, Template: c.TemplateReplicas}
}

func findReplica(rs []ReplicaObservation, index int32) *ReplicaObservation {
	for i := range rs {
		if rs[i].Index == index && !rs[i].Terminating {
			return &rs[i]
		}
	}
	return nil
}

// ChildPolicy is the policy of a standalone clique (KindClique) or a scaling group
// (KindGroup) told target t by its PodCliqueSet. Pods update oldest first and
// scale in outdated first; group replicas go by index.
func ChildPolicy(t Target, replicas int32, maxUnavailable, maxSurge intstr.IntOrString, kind ChildKind) Policy {
	p := Policy{Type: t.Type, Replicas: replicas, MaxUnavailable: maxUnavailable, MaxSurge: maxSurge,
		UpdateRevision: t.UpdateRevision, CurrentRevision: t.CurrentRevision, MaxUpdated: t.MaxUpdated}
	if kind == KindGroup {
		p.UpdateOrder, p.ScaleIn = LowestIndexFirst, HighestIndexFirst
	}
	return p
}

// MemberPolicy is the policy of a clique inside one scaling-group replica. Its
// pods always run the member template of the revision the group replica was made
// from; a group replica is updated by replacing it whole, never pod by pod.
func MemberPolicy(revs Revisions, group, groupRevision, clique string, replicas int32) Policy {
	rev := groupRevision
	if set, ok := revs.Holding(group, groupRevision); ok {
		if r, ok := set.Role(clique); ok {
			rev = r
		}
	}
	return Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: replicas, UpdateRevision: rev, CurrentRevision: rev}
}

// decodePolicy is the policy a child's controller derives from spec: its
// template hashes to updateRevision, and its held-back units come from the set
// revision the spec names.
func decodePolicy(spec ChildSpec, kind ChildKind, updateRevision, role string, revs Revisions) Policy {
	return spec.Policy(kind, updateRevision, DecodeTarget(spec, updateRevision, role, revs).CurrentRevision)
}
