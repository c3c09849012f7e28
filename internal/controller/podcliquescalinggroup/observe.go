package podcliquescalinggroup

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
	"github.com/lockstep-dev/lockstep/internal/observe/groupreplicas"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

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
func (r *Reconciler) observe(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, now time.Time) (groupreplicas.Observation, error) {
	var cliques v1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliques, client.InNamespace(g.Namespace), selector(g)); err != nil {
		return groupreplicas.Observation{}, fmt.Errorf("listing PodCliques of %s: %w", g.Name, err)
	}
	var podList corev1.PodList
	if err := r.Client.List(ctx, &podList, append(pods.OfPodCliqueSet(g.Namespace, g.Labels[v1alpha1.LabelPodCliqueSet]), selector(g), pods.ReadOnly)...); err != nil {
		return groupreplicas.Observation{}, fmt.Errorf("listing pods of %s: %w", g.Name, err)
	}
	owned := cliques.Items[:0]
	for _, c := range cliques.Items {
		if ref := metav1.GetControllerOf(&c); ref != nil && ref.UID == g.UID {
			owned = append(owned, c)
		}
	}
	obs := groupreplicas.Observe(owned, podList.Items, g.Spec.MinReadySeconds, now)
	seen := make([]expectations.Observed, 0, len(owned))
	for _, c := range owned {
		seen = append(seen, expectations.Observed{Name: c.Name, UID: c.UID, Terminating: c.DeletionTimestamp != nil})
	}
	unseenCreates, unseenDeletes := r.Expectations.Reconcile(client.ObjectKeyFromObject(g), seen)
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
	slices.SortFunc(obs.Replicas, func(a, b rollout.GroupReplicaObservation) int { return cmp.Compare(a.Index, b.Index) })
	return obs, nil
}
