package gang

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// The layout: each PodCliqueSet replica has a base gang, owned by the
// PodCliqueSet, and each scaling-group replica at or above the group's
// minAvailable a scaled gang of its own, owned by the PodCliqueScalingGroup
// (InBaseGang says which). Surge units need
// nothing special: a surge pod joins its clique's gang, a surge group replica
// sits above minAvailable and so gets a scaled gang, and a surge PodCliqueSet
// replica has its own index and so its own base gang.
//
// A gang's minimum is the sum of its PodCliques' minAvailable. Replicas above
// minAvailable, surge pods included, are members that the gang does not wait for.

// BaseGang is the base gang of PodCliqueSet replica `replica`: its standalone
// cliques and, in each scaling group, the group replicas below minAvailable.
func BaseGang(pcs *v1alpha1.PodCliqueSet, replica int) Gang {
	t := &pcs.Spec.Template
	var minCount int32
	for i := range t.Cliques {
		if t.ScalingGroupOf(t.Cliques[i].Name) == nil {
			minCount += t.Cliques[i].EffectiveMinAvailable()
		}
	}
	for i := range t.PodCliqueScalingGroups {
		g := &t.PodCliqueScalingGroups[i]
		var perReplica int32
		for _, name := range g.CliqueNames {
			if c := t.Clique(name); c != nil {
				perReplica += c.EffectiveMinAvailable()
			}
		}
		minCount += g.EffectiveMinAvailable() * perReplica
	}
	return Gang{
		Name:     naming.BaseGang(pcs.Name, replica),
		MinCount: minCount,
		Labels: map[string]string{
			v1alpha1.LabelManagedBy:                v1alpha1.ManagedByValue,
			v1alpha1.LabelPodCliqueSet:             pcs.Name,
			v1alpha1.LabelPodCliqueSetReplicaIndex: strconv.Itoa(replica),
		},
	}
}

// ScaledGang is the gang of scaling-group replica groupReplica, one at or above
// the group's minAvailable (surge replicas included): the group's cliques alone.
func ScaledGang(pcsg *v1alpha1.PodCliqueScalingGroup, groupReplica int) Gang {
	var minCount int32
	for i := range pcsg.Spec.Cliques {
		minCount += pcsg.Spec.Cliques[i].EffectiveMinAvailable()
	}
	labels := map[string]string{
		v1alpha1.LabelManagedBy:                         v1alpha1.ManagedByValue,
		v1alpha1.LabelPodCliqueScalingGroupReplicaIndex: strconv.Itoa(groupReplica),
	}
	for _, k := range []string{v1alpha1.LabelPodCliqueSet, v1alpha1.LabelPodCliqueSetReplicaIndex, v1alpha1.LabelPodCliqueScalingGroup} {
		if v, ok := pcsg.Labels[k]; ok {
			labels[k] = v
		}
	}
	return Gang{Name: naming.ScaledGang(pcsg.Name, groupReplica), MinCount: minCount, Labels: labels}
}

// InBaseGang reports whether scaling-group replica index belongs to its
// PodCliqueSet replica's base gang: the replicas below the group's minAvailable
// do; the others, surge replicas included (their indices are at or above
// replicas), have a scaled gang of their own.
func InBaseGang(index, minAvailable int32) bool {
	return index < minAvailable
}

// ScaledGangs are the gangs of the scaling group's replicas at indices, those at
// or above minAvailable, sorted by name. Nil when the group has no gangs.
func ScaledGangs(pcsg *v1alpha1.PodCliqueScalingGroup, indices []int32) []Gang {
	if pcsg.Spec.Gang == nil {
		return nil
	}
	var gangs []Gang
	for _, idx := range indices {
		if !InBaseGang(idx, pcsg.Spec.EffectiveMinAvailable()) {
			gangs = append(gangs, ScaledGang(pcsg, int(idx)))
		}
	}
	slices.SortFunc(gangs, func(a, b Gang) int { return strings.Compare(a.Name, b.Name) })
	return gangs
}

// MemberGang is the gang the member PodCliques of group replica index join: the
// base gang below the group's minAvailable, a scaled gang of its own (held until
// the base gang is scheduled) from there on. Nil when the group has no gangs.
func MemberGang(pcsg *v1alpha1.PodCliqueScalingGroup, index int32) *v1alpha1.PodCliqueGang {
	g := pcsg.Spec.Gang
	if g == nil {
		return nil
	}
	if InBaseGang(index, pcsg.Spec.EffectiveMinAvailable()) {
		return &v1alpha1.PodCliqueGang{PodGroupName: g.BasePodGroupName}
	}
	return &v1alpha1.PodCliqueGang{PodGroupName: naming.ScaledGang(pcsg.Name, int(index)), Gated: !g.BaseScheduled}
}

// JoinPod makes a pod about to be created a member of the gang its PodClique
// names (nil: none), held by the base-gang scheduling gate while the gang is
// gated. A pod's membership cannot change once it exists.
func JoinPod(pod *corev1.Pod, g *v1alpha1.PodCliqueGang) {
	if g == nil {
		return
	}
	group := g.PodGroupName
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &group}
	if g.Gated {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1alpha1.SchedulingGateBaseGang})
	}
}
