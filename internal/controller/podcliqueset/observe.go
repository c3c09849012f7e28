package podcliqueset

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/observe/groupreplicas"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// children is everything a PodCliqueSet owns, by replica, and the same as
// planner observations.
type children struct {
	replicas []rollout.ReplicaObservation
	// cliques and groups are the live standalone PodCliques and scaling groups by
	// replica index and template name.
	cliques map[int32]map[string]*v1alpha1.PodClique
	groups  map[int32]map[string]*v1alpha1.PodCliqueScalingGroup
	// all are every child object of a replica, terminating ones included, and
	// the member PodCliques its scaling groups control.
	all map[int32][]client.Object
	// pods are the pods of each replica that are not terminating: a removed
	// replica's pods are deleted with it.
	pods            map[int32][]*corev1.Pod
	nextAvailableIn time.Duration
	// waiting are the live pods that are not ready, oldest first.
	waiting []waitingPod
}

// waitingPod is a pod that is not ready, and why (pods.WaitingFor).
type waitingPod struct {
	name, setRevision, why string
	surge                  bool
	// unschedulable: the scheduler found no room for it (pods.Unschedulable)
	unschedulable bool
}

// observe lists the PodCliqueSet's children and pods and turns them into the
// planner's observations: pods by PodClique, then the standalone PodCliques,
// then the scaling groups over their member PodCliques.
func (r *Reconciler) observe(ctx context.Context, pcs *v1alpha1.PodCliqueSet, revs rollout.Revisions, minReadySeconds int32, now time.Time) (children, error) {
	o := observer{pcs: pcs, revs: revs, minReadySeconds: minReadySeconds, now: now,
		c: children{
			cliques: map[int32]map[string]*v1alpha1.PodClique{},
			groups:  map[int32]map[string]*v1alpha1.PodCliqueScalingGroup{},
			all:     map[int32][]client.Object{},
			pods:    map[int32][]*corev1.Pod{},
		},
		byReplica: map[int32]*rollout.ReplicaObservation{},
		podsOf:    map[string][]corev1.Pod{},
		members:   map[groupKey][]v1alpha1.PodClique{},
	}
	if err := o.list(ctx, r.Client); err != nil {
		return children{}, err
	}
	o.sortPods()
	o.observeCliques()
	o.observeGroups()
	return o.result(), nil
}

// observer holds one observe pass: what was listed and what is built from it.
type observer struct {
	pcs             *v1alpha1.PodCliqueSet
	revs            rollout.Revisions
	minReadySeconds int32
	now             time.Time

	cliques []v1alpha1.PodClique
	groups  []v1alpha1.PodCliqueScalingGroup
	pods    []corev1.Pod

	c         children
	byReplica map[int32]*rollout.ReplicaObservation
	// podsOf are the pods of each PodClique, by name, oldest first.
	podsOf map[string][]corev1.Pod
	// members are the PodCliques of each scaling-group replica.
	members map[groupKey][]v1alpha1.PodClique
}

// list reads the PodCliqueSet's PodCliques, scaling groups and pods from the
// cache, by its label.
func (o *observer) list(ctx context.Context, c client.Client) error {
	sel := []client.ListOption{client.InNamespace(o.pcs.Namespace), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: o.pcs.Name}}
	var cliqueList v1alpha1.PodCliqueList
	if err := c.List(ctx, &cliqueList, sel...); err != nil {
		return fmt.Errorf("listing PodCliques of %s: %w", o.pcs.Name, err)
	}
	var groupList v1alpha1.PodCliqueScalingGroupList
	if err := c.List(ctx, &groupList, sel...); err != nil {
		return fmt.Errorf("listing PodCliqueScalingGroups of %s: %w", o.pcs.Name, err)
	}
	var podList corev1.PodList
	if err := c.List(ctx, &podList, append(pods.OfPodCliqueSet(o.pcs.Namespace, o.pcs.Name), pods.ReadOnly)...); err != nil {
		return fmt.Errorf("listing pods of %s: %w", o.pcs.Name, err)
	}
	o.cliques, o.groups, o.pods = cliqueList.Items, groupList.Items, podList.Items
	return nil
}

// sortPods files the pods under their PodClique, oldest first, and notes the
// ones not ready. A pod is surge by its own label (a surge pod of a clique)
// or by its PodClique's (a pod of a surge group or PodCliqueSet replica).
func (o *observer) sortPods() {
	sort.SliceStable(o.pods, func(i, j int) bool {
		return o.pods[i].CreationTimestamp.Before(&o.pods[j].CreationTimestamp)
	})
	surgeClique := map[string]bool{}
	for _, pclq := range o.cliques {
		surgeClique[pclq.Name] = pclq.Labels[v1alpha1.LabelSurge] == "true"
	}
	for i := range o.pods {
		p := &o.pods[i]
		if idx, ok := replicaIndex(p); ok && p.DeletionTimestamp == nil {
			o.c.pods[idx] = append(o.c.pods[idx], p)
		}
	}
	for _, p := range o.pods {
		clique := p.Labels[v1alpha1.LabelPodClique]
		o.podsOf[clique] = append(o.podsOf[clique], p)
		if why := pods.WaitingFor(&p); why != "" {
			o.c.waiting = append(o.c.waiting, waitingPod{name: p.Name, setRevision: p.Labels[v1alpha1.LabelPodCliqueSetRevision],
				why: why, surge: p.Labels[v1alpha1.LabelSurge] == "true" || surgeClique[clique], unschedulable: pods.Unschedulable(&p)})
		}
	}
}

// replica is the observation of the PodCliqueSet replica child o belongs to,
// made on first sight.
func (o *observer) replica(obj client.Object) *rollout.ReplicaObservation {
	idx, _ := replicaIndex(obj)
	rep := o.byReplica[idx]
	if rep == nil {
		rep = &rollout.ReplicaObservation{Index: idx}
		o.byReplica[idx] = rep
	}
	// The revision and surge labels are written when the replica is made.
	if rep.CreatedAt.IsZero() || obj.GetCreationTimestamp().Time.Before(rep.CreatedAt) {
		rep.CreatedAt = obj.GetCreationTimestamp().Time
		rep.Revision = obj.GetLabels()[v1alpha1.LabelPodCliqueSetRevision]
	}
	rep.Surge = rep.Surge || obj.GetLabels()[v1alpha1.LabelSurge] == "true"
	rep.Terminating = rep.Terminating || obj.GetDeletionTimestamp() != nil
	o.c.all[idx] = append(o.c.all[idx], obj)
	return rep
}

// observeCliques observes the standalone PodCliques with their pods, and sets
// the members of scaling groups aside for observeGroups.
func (o *observer) observeCliques() {
	for i := range o.cliques {
		pclq := &o.cliques[i]
		if !controlledBy(pclq, o.pcs.UID) {
			// A scaling group's member, if one of ours controls it
			// (observeGroups): labels alone make nothing ours.
			if g := pclq.Labels[v1alpha1.LabelPodCliqueScalingGroup]; g != "" {
				idx, _ := replicaIndex(pclq)
				o.members[groupKey{idx, g}] = append(o.members[groupKey{idx, g}], *pclq)
			}
			continue
		}
		if _, ok := replicaIndex(pclq); !ok {
			continue
		}
		rep := o.replica(pclq)
		name := pclq.Labels[v1alpha1.LabelClique]
		obs := rollout.CliqueObservation{Name: name, SpecReplicas: pclq.Spec.Replicas, TemplateReplicas: templateReplicas(pclq)}
		obs.Target, obs.Report = cliqueTargetAndReport(pclq, o.revs)
		for i := range o.podsOf[pclq.Name] {
			p := &o.podsOf[pclq.Name][i]
			if u, ok := pods.Unit(p, o.minReadySeconds, o.now); ok {
				obs.Pods = append(obs.Pods, u)
			}
			o.c.nextAvailableIn = pods.Sooner(o.c.nextAvailableIn, pods.UntilAvailable(p, o.minReadySeconds, o.now))
		}
		rep.Cliques = append(rep.Cliques, obs)
		if pclq.DeletionTimestamp == nil {
			if o.c.cliques[rep.Index] == nil {
				o.c.cliques[rep.Index] = map[string]*v1alpha1.PodClique{}
			}
			o.c.cliques[rep.Index][name] = pclq
		}
	}
}

// observeGroups observes each scaling group through the member PodCliques it
// controls and their pods (groupreplicas.Observe).
func (o *observer) observeGroups() {
	for i := range o.groups {
		g := &o.groups[i]
		if !controlledBy(g, o.pcs.UID) {
			continue
		}
		if _, ok := replicaIndex(g); !ok {
			continue
		}
		rep := o.replica(g)
		name := g.Labels[v1alpha1.LabelPodCliqueScalingGroup]
		var groupPods []corev1.Pod
		var owned []v1alpha1.PodClique
		for j, m := range o.members[groupKey{rep.Index, name}] {
			if controlledBy(&m, g.UID) {
				owned = append(owned, m)
				groupPods = append(groupPods, o.podsOf[m.Name]...)
				o.c.all[rep.Index] = append(o.c.all[rep.Index], &o.members[groupKey{rep.Index, name}][j])
			}
		}
		gobs := groupreplicas.Observe(owned, groupPods, o.minReadySeconds, o.now)
		o.c.nextAvailableIn = pods.Sooner(o.c.nextAvailableIn, gobs.NextAvailableIn)
		gob := rollout.GroupObservation{Name: name, SpecReplicas: g.Spec.Replicas, TemplateReplicas: templateReplicas(g), Replicas: gobs.Replicas}
		gob.Target, gob.Report = groupTargetAndReport(g, o.revs)
		rep.Groups = append(rep.Groups, gob)
		if g.DeletionTimestamp == nil {
			if o.c.groups[rep.Index] == nil {
				o.c.groups[rep.Index] = map[string]*v1alpha1.PodCliqueScalingGroup{}
			}
			o.c.groups[rep.Index][name] = g
		}
	}
}

// result is the children with the replica observations in index order.
func (o *observer) result() children {
	for _, rep := range o.byReplica {
		o.c.replicas = append(o.c.replicas, *rep)
	}
	sort.Slice(o.c.replicas, func(i, j int) bool { return o.c.replicas[i].Index < o.c.replicas[j].Index })
	return o.c
}

// groupKey keys a scaling group's member PodCliques: replica index and group name.
type groupKey struct {
	replica int32
	group   string
}

func controlledBy(o client.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == uid
}

// cliqueTargetAndReport reads back the target the PodCliqueSet wrote into a
// PodClique, and what the PodClique's own status says (the PodCliqueSet's
// status never says more: rollout.Report).
func cliqueTargetAndReport(pclq *v1alpha1.PodClique, revs rollout.Revisions) (*rollout.Target, *rollout.Report) {
	hash, err := revision.PodCliqueHash(pclq)
	if err != nil {
		return nil, rollout.ReportOf(&pclq.Status, "", pclq.Spec.Replicas)
	}
	cs := rollout.ChildSpec{Replicas: pclq.Spec.Replicas, Revision: pclq.Spec.Revision, UpdateStrategy: pclq.Spec.UpdateStrategy}
	return rollout.DecodeTarget(cs, hash, pclq.Labels[v1alpha1.LabelClique], revs), rollout.ReportOf(&pclq.Status, hash, pclq.Spec.Replicas)
}

// groupTargetAndReport reads back the target the PodCliqueSet wrote into a
// scaling group, and what the group's own status says.
func groupTargetAndReport(g *v1alpha1.PodCliqueScalingGroup, revs rollout.Revisions) (*rollout.Target, *rollout.Report) {
	hash, err := revision.GroupHashOf(g.Spec.Cliques)
	if err != nil {
		return nil, rollout.ReportOf(&g.Status, "", g.Spec.Replicas)
	}
	cs := rollout.ChildSpec{Replicas: g.Spec.Replicas, Revision: g.Spec.Revision, UpdateStrategy: g.Spec.UpdateStrategy}
	return rollout.DecodeTarget(cs, hash, g.Labels[v1alpha1.LabelPodCliqueScalingGroup], revs), rollout.ReportOf(&g.Status, hash, g.Spec.Replicas)
}
