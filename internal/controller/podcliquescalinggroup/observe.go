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

// Observation is the group's replicas as the planner sees them, and the member
// PodCliques that make them up.
type Observation struct {
	Replicas []rollout.GroupReplicaObservation
	Members  map[int32][]*v1alpha1.PodClique // live member PodCliques by group-replica index
	// Incomplete are the live group replicas missing a member PodClique that is
	// neither in the cache nor on its way (deleted by hand, the operator stopped
	// between creating two members, or a create that met its terminating
	// predecessor's name).
	Incomplete []int32
	// NextAvailableIn is when the next ready pod passes minReadySeconds (0: none).
	NextAvailableIn time.Duration
}

// selector picks the objects of this group: its PodCliqueSet replica and group name.
func selector(g *v1alpha1.PodCliqueScalingGroup) client.MatchingLabels {
	return client.MatchingLabels{
		v1alpha1.LabelPodCliqueSet:             g.Labels[v1alpha1.LabelPodCliqueSet],
		v1alpha1.LabelPodCliqueSetReplicaIndex: g.Labels[v1alpha1.LabelPodCliqueSetReplicaIndex],
		v1alpha1.LabelPodCliqueScalingGroup:    g.Labels[v1alpha1.LabelPodCliqueScalingGroup],
	}
}

// observe lists the group's member PodCliques and pods and groups them by
// group-replica index.
func (r *Reconciler) observe(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, now time.Time) (Observation, error) {
	var cliques v1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliques, client.InNamespace(g.Namespace), selector(g)); err != nil {
		return Observation{}, fmt.Errorf("listing PodCliques of %s: %w", g.Name, err)
	}
	var podList corev1.PodList
	if err := r.Client.List(ctx, &podList, client.InNamespace(g.Namespace), selector(g)); err != nil {
		return Observation{}, fmt.Errorf("listing pods of %s: %w", g.Name, err)
	}
	owned := cliques.Items[:0]
	for _, c := range cliques.Items {
		if ref := metav1.GetControllerOf(&c); ref != nil && ref.UID == g.UID {
			owned = append(owned, c)
		}
	}
	obs := ObserveReplicas(owned, podList.Items, g.Spec.MinReadySeconds, now)
	seen := make([]expectations.Observed, 0, len(owned))
	for _, c := range owned {
		seen = append(seen, expectations.Observed{Name: c.Name, UID: c.UID, Terminating: c.DeletionTimestamp != nil})
	}
	unseenCreates, unseenDeletes := r.Expectations.Reconcile(key(g), seen)
	pending := map[int32]int{}
	for _, c := range unseenCreates {
		pending[c.Index]++
	}
	present := map[int32]bool{}
	for i := range obs.Replicas {
		rep := &obs.Replicas[i]
		present[rep.Index] = true
		for _, c := range obs.Members[rep.Index] {
			if unseenDeletes[c.UID] {
				rep.Terminating = true
			}
		}
		if !rep.Terminating && len(obs.Members[rep.Index])+pending[rep.Index] < len(g.Spec.Cliques) {
			obs.Incomplete = append(obs.Incomplete, rep.Index)
		}
	}
	for _, c := range unseenCreates {
		if !present[c.Index] { // one expectation per member PodClique: keep the first
			present[c.Index] = true
			obs.Replicas = append(obs.Replicas, c)
		}
	}
	sort.Slice(obs.Replicas, func(i, j int) bool { return obs.Replicas[i].Index < obs.Replicas[j].Index })
	return obs, nil
}

// ObserveReplicas groups a scaling group's member PodCliques and their pods by
// group-replica index, as planner observations. A replica whose PodCliques are
// being deleted, or are gone while pods remain, is terminating: it still counts
// toward the total and keeps its index. The PodCliqueSet controller observes its
// groups with the same function.
func ObserveReplicas(cliques []v1alpha1.PodClique, podList []corev1.Pod, minReadySeconds int32, now time.Time) Observation {
	obs := Observation{Members: map[int32][]*v1alpha1.PodClique{}}
	byIndex := map[int32]*rollout.GroupReplicaObservation{}
	replica := func(idx int32) *rollout.GroupReplicaObservation {
		if byIndex[idx] == nil {
			byIndex[idx] = &rollout.GroupReplicaObservation{Index: idx}
		}
		return byIndex[idx]
	}
	for i := range cliques {
		c := &cliques[i]
		idx, err := strconv.Atoi(c.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex])
		if err != nil {
			continue
		}
		rep := replica(int32(idx))
		rep.Revision = c.Labels[v1alpha1.LabelTemplateHash]
		rep.Surge = rep.Surge || c.Labels[v1alpha1.LabelSurge] == "true"
		rep.Terminating = rep.Terminating || c.DeletionTimestamp != nil
		if rep.CreatedAt.IsZero() || c.CreationTimestamp.Time.Before(rep.CreatedAt) {
			rep.CreatedAt = c.CreationTimestamp.Time
		}
		minAvailable := c.Spec.Replicas
		if c.Spec.MinAvailable != nil {
			minAvailable = *c.Spec.MinAvailable
		}
		rep.Cliques = append(rep.Cliques, rollout.CliqueObservation{Name: c.Labels[v1alpha1.LabelClique], MinAvailable: minAvailable})
		if c.DeletionTimestamp == nil {
			obs.Members[int32(idx)] = append(obs.Members[int32(idx)], c)
		}
	}
	for i := range podList {
		p := &podList[i]
		idx, err := strconv.Atoi(p.Labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex])
		if err != nil {
			continue
		}
		u, ok := pods.Unit(p, minReadySeconds, now)
		if !ok {
			continue
		}
		rep, known := byIndex[int32(idx)]
		if !known {
			rep = replica(int32(idx))
			rep.Terminating = true
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
