package podcliquescalinggroup

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller/expectations"
	"github.com/lockstep-dev/lockstep/internal/controller/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// observation is the group's replicas as the planner sees them, and the member
// PodCliques that make them up.
type observation struct {
	replicas []rollout.GroupReplicaObservation
	members  map[int32][]*v1alpha1.PodClique // live member PodCliques by group-replica index
	// nextAvailableIn is when the next ready pod passes minReadySeconds (0: none).
	nextAvailableIn time.Duration
}

// selector picks the objects of this group: its PodCliqueSet replica and group name.
func selector(g *v1alpha1.PodCliqueScalingGroup) client.MatchingLabels {
	return client.MatchingLabels{
		v1alpha1.LabelPodCliqueSet:             g.Labels[v1alpha1.LabelPodCliqueSet],
		v1alpha1.LabelPodCliqueSetReplicaIndex: g.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex],
		v1alpha1.LabelPodCliqueScalingGroup:    g.Labels[v1alpha1.LabelPodCliqueScalingGroup],
	}
}

// observe groups the member PodCliques and their pods by group-replica index. A
// replica whose PodCliques are being deleted, or are gone while pods remain, is
// terminating: it still counts toward the total and keeps its index.
func (r *Reconciler) observe(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, now time.Time) (observation, error) {
	var cliques v1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliques, client.InNamespace(g.Namespace), selector(g)); err != nil {
		return observation{}, fmt.Errorf("listing PodCliques of %s: %w", g.Name, err)
	}
	var podList corev1.PodList
	if err := r.Client.List(ctx, &podList, client.InNamespace(g.Namespace), selector(g)); err != nil {
		return observation{}, fmt.Errorf("listing pods of %s: %w", g.Name, err)
	}
	obs := observation{members: map[int32][]*v1alpha1.PodClique{}}
	byIndex := map[int32]*rollout.GroupReplicaObservation{}
	replica := func(idx int32) *rollout.GroupReplicaObservation {
		if byIndex[idx] == nil {
			byIndex[idx] = &rollout.GroupReplicaObservation{Index: idx}
		}
		return byIndex[idx]
	}
	var seen []expectations.Observed
	for i := range cliques.Items {
		c := &cliques.Items[i]
		ref := metav1.GetControllerOf(c)
		idx, err := strconv.Atoi(c.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex])
		if ref == nil || ref.UID != g.UID || err != nil {
			continue
		}
		seen = append(seen, expectations.Observed{Name: c.Name, UID: c.UID, Terminating: c.DeletionTimestamp != nil})
		rep := replica(int32(idx))
		rep.Revision = c.Labels[v1alpha1.LabelTemplateHash]
		rep.Surge = rep.Surge || c.Labels[v1alpha1.LabelSurge] == "true"
		rep.Terminating = rep.Terminating || c.DeletionTimestamp != nil
		if rep.CreatedAt.IsZero() || c.CreationTimestamp.Time.Before(rep.CreatedAt) {
			rep.CreatedAt = c.CreationTimestamp.Time
		}
		rep.Cliques = append(rep.Cliques, rollout.CliqueObservation{Name: c.Labels[v1alpha1.LabelClique]})
		if c.DeletionTimestamp == nil {
			obs.members[int32(idx)] = append(obs.members[int32(idx)], c)
		}
	}
	for i := range podList.Items {
		p := &podList.Items[i]
		idx, err := strconv.Atoi(p.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex])
		if err != nil {
			continue
		}
		u, ok := pods.Unit(p, g.Spec.MinReadySeconds, now)
		if !ok {
			continue
		}
		rep, known := byIndex[int32(idx)]
		if !known {
			// Pods outlive their deleted PodClique for a while: the replica is still going.
			rep = replica(int32(idx))
			rep.Terminating = true
			rep.Revision = "" // gone: its revision no longer matters
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
		obs.nextAvailableIn = pods.Sooner(obs.nextAvailableIn, pods.UntilAvailable(p, g.Spec.MinReadySeconds, now))
	}
	unseenCreates, unseenDeletes := r.Expectations.Reconcile(key(g), seen)
	for _, rep := range byIndex {
		for _, c := range obs.members[rep.Index] {
			if unseenDeletes[c.UID] {
				rep.Terminating = true
			}
		}
		obs.replicas = append(obs.replicas, *rep)
	}
	for _, c := range unseenCreates {
		if _, ok := byIndex[c.Index]; !ok {
			byIndex[c.Index] = &c // one entry per member PodClique: keep the first
			obs.replicas = append(obs.replicas, c)
		}
	}
	sort.Slice(obs.replicas, func(i, j int) bool { return obs.replicas[i].Index < obs.replicas[j].Index })
	return obs, nil
}
