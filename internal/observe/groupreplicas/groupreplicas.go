// Package groupreplicas turns a scaling group's member PodCliques and their pods
// into the planner's group-replica observations. The PodCliqueScalingGroup and
// PodCliqueSet controllers both observe scaling groups through it.
package groupreplicas

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Observation is the group's replicas as the planner sees them, and the member
// PodCliques that make them up.
type Observation struct {
	Replicas []rollout.GroupReplicaObservation
	Members  map[int32][]*v1alpha1.PodClique // live member PodCliques by group-replica index
	// Pods are the pods of each group replica that are not terminating, by
	// group-replica index: a removed group replica's pods are deleted with it.
	Pods map[int32][]*corev1.Pod
	// Incomplete are the live group replicas missing a member PodClique that is
	// neither in the cache nor on its way (deleted by hand, the operator stopped
	// between creating two members, or a create that met its terminating
	// predecessor's name).
	Incomplete []int32
	// NextAvailableIn is when the next ready pod passes minReadySeconds (0: none).
	NextAvailableIn time.Duration
}

// Observe groups a scaling group's member PodCliques and their pods by
// group-replica index, as planner observations. A replica whose PodCliques are
// being deleted, or are gone while pods remain, is terminating: it still counts
// toward the total and keeps its index. Both the PodCliqueScalingGroup and the
// PodCliqueSet controllers observe groups with it.
func Observe(cliques []v1alpha1.PodClique, podList []corev1.Pod, minReadySeconds int32, now time.Time) Observation {
	obs := Observation{Members: map[int32][]*v1alpha1.PodClique{}, Pods: map[int32][]*corev1.Pod{}}
	byIndex := map[int32]*rollout.GroupReplicaObservation{}
	replica := func(idx int32) *rollout.GroupReplicaObservation {
		if byIndex[idx] == nil {
			byIndex[idx] = &rollout.GroupReplicaObservation{Index: idx}
		}
		return byIndex[idx]
	}
	podHash := map[string]string{} // live member PodClique → the hash its pods carry
	for i := range cliques {
		c := &cliques[i]
		idx, ok := v1alpha1.IndexLabel(c.Labels, v1alpha1.LabelPodCliqueScalingGroupReplicaIndex)
		if !ok {
			continue
		}
		h, err := revision.PodCliqueHash(c)
		if err == nil && c.DeletionTimestamp == nil {
			podHash[c.Name] = h
		}
		rep := replica(idx)
		rep.Revision = c.Labels[v1alpha1.LabelTemplateHash]
		rep.Surge = rep.Surge || c.Labels[v1alpha1.LabelSurge] == "true"
		rep.Terminating = rep.Terminating || c.DeletionTimestamp != nil
		if rep.CreatedAt.IsZero() || c.CreationTimestamp.Time.Before(rep.CreatedAt) {
			rep.CreatedAt = c.CreationTimestamp.Time
		}
		// What the member's own status says: the group's status never says more
		// (rollout.ConfirmedByMembers).
		rep.Cliques = append(rep.Cliques, rollout.CliqueObservation{Name: c.Labels[v1alpha1.LabelClique], MinAvailable: c.Spec.EffectiveMinAvailable(),
			Report: rollout.ReportOf(&c.Status, h, c.Spec.Replicas)})
		if c.DeletionTimestamp == nil {
			obs.Members[idx] = append(obs.Members[idx], c)
		}
	}
	for i := range podList {
		p := &podList[i]
		idx, ok := v1alpha1.IndexLabel(p.Labels, v1alpha1.LabelPodCliqueScalingGroupReplicaIndex)
		if !ok {
			continue
		}
		u, ok := pods.Unit(p, minReadySeconds, now)
		if !ok {
			continue
		}
		rep, known := byIndex[idx]
		if !known {
			rep = replica(idx)
			rep.Terminating = true
		}
		// A member clique recreates only what is deleted, from the template it
		// was made with, so a live pod without that template's hash has had
		// its label changed by another writer. As a StatefulSet counts such a
		// pod, its group replica is outdated: updated by the strategy, and
		// under OnDelete waiting for the user to delete it.
		if want, ok := podHash[p.Labels[v1alpha1.LabelPodClique]]; ok && !u.Terminating && u.Revision != want {
			rep.Revision = u.Revision
		}
		if p.DeletionTimestamp == nil {
			obs.Pods[idx] = append(obs.Pods[idx], p)
		}
		clique := p.Labels[v1alpha1.LabelClique]
		found := false
		for j := range rep.Cliques {
			if rep.Cliques[j].Name == clique {
				rep.Cliques[j].Pods = append(rep.Cliques[j].Pods, u)
				found = true
			}
		}
		if !found {
			rep.Cliques = append(rep.Cliques, rollout.CliqueObservation{Name: clique, Pods: []rollout.Unit{u}})
		}
		obs.NextAvailableIn = pods.Sooner(obs.NextAvailableIn, pods.UntilAvailable(p, minReadySeconds, now))
	}
	for _, rep := range byIndex {
		obs.Replicas = append(obs.Replicas, *rep)
	}
	sort.Slice(obs.Replicas, func(i, j int) bool { return obs.Replicas[i].Index < obs.Replicas[j].Index })
	return obs
}

// Minimums are the minAvailable of the group's member cliques, which decide
// whether a group replica is scheduled, ready and available.
func Minimums(g *v1alpha1.PodCliqueScalingGroup) []rollout.MemberMinimum {
	out := make([]rollout.MemberMinimum, 0, len(g.Spec.Cliques))
	for i := range g.Spec.Cliques {
		c := &g.Spec.Cliques[i]
		out = append(out, rollout.MemberMinimum{Clique: c.Name, MinAvailable: c.EffectiveMinAvailable()})
	}
	return out
}
