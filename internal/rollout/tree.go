package rollout

import (
	"fmt"

	"k8s.io/utils/ptr"

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
	Policy       Policy
	Level        LevelPlan
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
			pol := ChildPolicy(*ct.Target, r.replicas, r.maxUnavailable, r.maxSurge, KindClique)
			lvl, err := PlanLevel(pol, pods)
			if err != nil {
				return TreePlan{}, fmt.Errorf("planning clique %s of replica %d: %w", ct.Role, rp.Index, err)
			}
			tree.Children = append(tree.Children, ChildPlan{Kind: KindClique, Replica: rp.Index, Role: ct.Role, GroupReplica: -1, Policy: pol, Level: lvl})
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
	pol := ChildPolicy(t, r.replicas, r.maxUnavailable, r.maxSurge, KindGroup)
	lvl, err := PlanLevel(pol, GroupUnits(r.memberMinimums(), reps))
	if err != nil {
		return nil, fmt.Errorf("planning scaling group %s of replica %d: %w", r.name, replica, err)
	}
	out := []ChildPlan{{Kind: KindGroup, Replica: replica, Role: r.name, GroupReplica: -1, Policy: pol, Level: lvl}}
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
	if set, ok := revs.setHolding(group, groupRevision); ok {
		if r, ok := set.Role(clique); ok {
			rev = r
		}
	}
	return Policy{Type: v1alpha1.OnDeleteStrategyType, Replicas: replicas, UpdateRevision: rev, CurrentRevision: rev}
}

// PolicyFromChildSpec builds the policy a PodClique or PodCliqueScalingGroup
// controller plans with, from what its PodCliqueSet wrote into its spec.
func PolicyFromChildSpec(st v1alpha1.ChildUpdateStrategy, replicas int32, updateRevision, currentRevision string, kind ChildKind) Policy {
	t := Target{Type: v1alpha1.RollingUpdateStrategyType, UpdateRevision: updateRevision, CurrentRevision: currentRevision, MaxUpdated: st.MaxUpdated}
	if st.Type == v1alpha1.OnDeleteStrategyType {
		t.Type = v1alpha1.OnDeleteStrategyType
	}
	unavailable, surge := v1alpha1.DefaultMaxUnavailable, v1alpha1.DefaultMaxSurge
	if st.MaxUnavailable != nil {
		unavailable = *st.MaxUnavailable
	}
	if st.MaxSurge != nil {
		surge = *st.MaxSurge
	}
	return ChildPolicy(t, replicas, unavailable, surge, kind)
}

// ChildUpdateStrategy is the child spec's updateStrategy for target t with the
// role's own limits.
func (t Target) ChildUpdateStrategy(maxUnavailable, maxSurge intstr.IntOrString) v1alpha1.ChildUpdateStrategy {
	st := v1alpha1.ChildUpdateStrategy{Type: v1alpha1.RollingUpdateStrategyType, MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}
	if t.Type == v1alpha1.OnDeleteStrategyType {
		st.Type = v1alpha1.OnDeleteStrategyType
	}
	if t.MaxUpdated != nil {
		st.MaxUpdated = ptr.To(*t.MaxUpdated)
	}
	return st
}
