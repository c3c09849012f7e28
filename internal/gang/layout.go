package gang

import (
	"strconv"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// The layout (DESIGN.md, "Gang scheduling"): each PodCliqueSet replica has a
// base gang, owned by the PodCliqueSet, and each scaling-group replica at or
// above the group's minAvailable a scaled gang of its own, owned by the
// PodCliqueScalingGroup (rollout.GroupReplicaGang says which). Surge units need
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
