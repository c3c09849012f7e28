package podcliquescalinggroup

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/fresh"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/observe/groupreplicas"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// apply deletes the group replicas the plan removes (all their member PodCliques)
// and creates the ones it adds.
func (r *Reconciler) apply(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, plan rollout.LevelPlan, obs groupreplicas.Observation, t groupTemplates) error {
	for _, d := range plan.Deletes {
		if err := r.deleteGroupReplica(ctx, g, obs, d.Index); err != nil {
			return err
		}
		if len(obs.Members[d.Index]) > 0 {
			r.Recorder.Eventf(g, nil, corev1.EventTypeNormal, "DeletedGroupReplica", "Delete",
				"Deleted group replica %d (revision %s): %s", d.Index, obs.Members[d.Index][0].Labels[v1alpha1.LabelTemplateHash], d.Reason)
		}
	}
	if len(plan.Creates) == 0 {
		return nil
	}
	if ok, err := fresh.MayCreate(ctx, r.APIReader, g, "member PodCliques"); !ok || err != nil {
		return err
	}
	for _, c := range plan.Creates {
		tmpl, ok := t.forHash(c.Revision)
		if !ok {
			return fmt.Errorf("PodCliqueScalingGroup %s: no template for revision %s", g.Name, c.Revision)
		}
		for i := range tmpl.cliques {
			if _, err := r.createMember(ctx, g, c, tmpl, &tmpl.cliques[i]); err != nil {
				return err
			}
		}
		what := "group replica"
		if c.Surge {
			what = "surge group replica"
		}
		r.Recorder.Eventf(g, nil, corev1.EventTypeNormal, "CreatedGroupReplica", "Create",
			"Created %s %d (revision %s)", what, c.Index, c.Revision)
	}
	return nil
}

// createMember creates one member PodClique of group replica c and expects it;
// created is false when it already existed (a create the cache has not shown).
func (r *Reconciler) createMember(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, c rollout.Create, t groupTemplate,
	clique *v1alpha1.PodCliqueTemplateSpec) (created bool, err error) {
	pclq := memberPodClique(g, c, t, clique)
	err = r.Client.Create(ctx, pclq)
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating PodClique %s: %w", pclq.Name, err)
	}
	r.Expectations.Created(client.ObjectKeyFromObject(g), pclq.Name, rollout.GroupReplicaObservation{
		Index: c.Index, Revision: c.Revision, Surge: c.Surge, CreatedAt: pclq.CreationTimestamp.Time})
	return true, nil
}

// deleteGroupReplica removes group replica index: its member PodCliques,
// then their pods, in one step (write.Remove).
func (r *Reconciler) deleteGroupReplica(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, obs groupreplicas.Observation, index int32) error {
	members := make([]client.Object, 0, len(obs.Members[index]))
	for _, c := range obs.Members[index] {
		members = append(members, c)
	}
	err := write.Remove(ctx, r.Client, members, obs.Pods[index], func(o client.Object) {
		r.Expectations.Deleted(client.ObjectKeyFromObject(g), o.GetUID())
	})
	if err != nil {
		return fmt.Errorf("deleting group replica %d: %w", index, err)
	}
	return nil
}

// repairIncomplete makes group replicas that lost a member PodClique whole
// again. A replica on the update revision gets its missing members from its
// template (the operator stopped between two creates, or a create met a
// terminating predecessor's name; tried again on a later pass). Any other
// replica is deleted, what is left of it, and the planner recreates it whole.
func (r *Reconciler) repairIncomplete(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, obs *groupreplicas.Observation, t groupTemplates) error {
	for _, idx := range obs.Incomplete {
		var rep *rollout.GroupReplicaObservation
		for i := range obs.Replicas {
			if obs.Replicas[i].Index == idx {
				rep = &obs.Replicas[i]
			}
		}
		if rep == nil {
			continue
		}
		tmpl, ok := t.forHash(rep.Revision)
		if !ok || rep.Revision != t.update.hash {
			// An outdated replica missing a member is as good as deleted (by hand,
			// under OnDelete, say): it comes back whole, on what the strategy allows.
			if err := r.removeReplica(ctx, g, obs, rep); err != nil {
				return err
			}
			continue
		}
		have := map[string]bool{}
		for _, c := range obs.Members[idx] {
			have[c.Labels[v1alpha1.LabelClique]] = true
		}
		var made []string
		checked := false
		for i := range tmpl.cliques {
			if have[tmpl.cliques[i].Name] {
				continue
			}
			if !checked {
				if ok, err := fresh.MayCreate(ctx, r.APIReader, g, "member PodCliques"); !ok || err != nil {
					return err
				}
				checked = true
			}
			c := rollout.Create{Index: idx, Revision: rep.Revision, Surge: rep.Surge}
			created, err := r.createMember(ctx, g, c, tmpl, &tmpl.cliques[i])
			if err != nil {
				return err
			}
			if created {
				made = append(made, tmpl.cliques[i].Name)
			}
		}
		if len(made) > 0 {
			r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, "RepairedGroupReplica", "Create",
				"Group replica %d had lost member PodClique(s) %s; made them again (revision %s)", idx, strings.Join(made, ", "), rep.Revision)
		}
	}
	return nil
}

// removeReplica deletes what is left of a group replica, which the planner
// then recreates whole.
func (r *Reconciler) removeReplica(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, obs *groupreplicas.Observation, rep *rollout.GroupReplicaObservation) error {
	var left []string
	for _, c := range obs.Members[rep.Index] {
		left = append(left, c.Labels[v1alpha1.LabelClique])
	}
	if err := r.deleteGroupReplica(ctx, g, *obs, rep.Index); err != nil {
		return err
	}
	rep.Terminating = true
	r.Recorder.Eventf(g, nil, corev1.EventTypeWarning, "IncompleteGroupReplica", "Delete",
		"Group replica %d lost a member PodClique; deleted the rest (%s) to recreate it whole", rep.Index, strings.Join(left, ", "))
	return nil
}

// memberPodClique is one clique of group replica c.
func memberPodClique(g *v1alpha1.PodCliqueScalingGroup, c rollout.Create, t groupTemplate, clique *v1alpha1.PodCliqueTemplateSpec) *v1alpha1.PodClique {
	labels := maps.Clone(g.Labels)
	if labels == nil { // a group made by hand rather than by a PodCliqueSet
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelClique] = clique.Name
	labels[v1alpha1.LabelPodCliqueScalingGroupReplicaIndex] = strconv.Itoa(int(c.Index))
	v1alpha1.SetUnitLabels(labels, t.hash, t.setRevision, c.Surge)
	minAvailable := clique.EffectiveMinAvailable()
	return &v1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{
			Name:            naming.GroupPodClique(g.Name, int(c.Index), clique.Name),
			Namespace:       g.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(g, v1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"))},
		},
		Spec: v1alpha1.PodCliqueSpec{
			Replicas:        clique.Replicas,
			MinAvailable:    &minAvailable,
			MinReadySeconds: g.Spec.MinReadySeconds,
			Revision:        t.setRevision,
			// A group replica is replaced whole, never pod by pod: its cliques
			// only ever recreate what is deleted, from the template they were made with.
			UpdateStrategy: v1alpha1.ChildUpdateStrategy{Type: v1alpha1.OnDeleteStrategyType},
			Template:       clique.Template,
			PeerDNS:        clique.PeerDNS,
			Gang:           gang.MemberGang(g, c.Index),
		},
	}
}

// syncGangGates opens the gates of scaled gangs once the base gang is scheduled.
func (r *Reconciler) syncGangGates(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, obs groupreplicas.Observation) error {
	for idx, members := range obs.Members {
		want := gang.MemberGang(g, idx)
		for _, c := range members {
			if want == nil || c.Spec.Gang == nil || *c.Spec.Gang == *want {
				continue
			}
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.Gang = want
			if err := r.Client.Patch(ctx, c, patch); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("updating the gang of PodClique %s: %w", c.Name, err)
			}
		}
	}
	return nil
}
