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
	// all are every child object of a replica, terminating ones included.
	all             map[int32][]client.Object
	nextAvailableIn time.Duration
	// waiting are the live pods that are not ready, oldest first.
	waiting []waitingPod
}

// waitingPod is a pod that is not ready, and why (pods.WaitingFor).
type waitingPod struct {
	name, setRevision, why string
	surge                  bool
}

// observe lists the PodCliqueSet's children and pods and turns them into the
// planner's observations.
func (r *Reconciler) observe(ctx context.Context, pcs *v1alpha1.PodCliqueSet, revs rollout.Revisions, minReadySeconds int32, now time.Time) (children, error) {
	sel := []client.ListOption{client.InNamespace(pcs.Namespace), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs.Name}}
	var cliqueList v1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliqueList, sel...); err != nil {
		return children{}, fmt.Errorf("listing PodCliques of %s: %w", pcs.Name, err)
	}
	var groupList v1alpha1.PodCliqueScalingGroupList
	if err := r.Client.List(ctx, &groupList, sel...); err != nil {
		return children{}, fmt.Errorf("listing PodCliqueScalingGroups of %s: %w", pcs.Name, err)
	}
	var podList corev1.PodList
	if err := r.Client.List(ctx, &podList, sel...); err != nil {
		return children{}, fmt.Errorf("listing pods of %s: %w", pcs.Name, err)
	}
	c := children{
		cliques: map[int32]map[string]*v1alpha1.PodClique{},
		groups:  map[int32]map[string]*v1alpha1.PodCliqueScalingGroup{},
		all:     map[int32][]client.Object{},
	}
	byReplica := map[int32]*rollout.ReplicaObservation{}
	replica := func(o client.Object) *rollout.ReplicaObservation {
		idx, _ := replicaIndex(o)
		rep := byReplica[idx]
		if rep == nil {
			rep = &rollout.ReplicaObservation{Index: idx}
			byReplica[idx] = rep
		}
		// The revision and surge labels are written when the replica is made.
		if rep.CreatedAt.IsZero() || o.GetCreationTimestamp().Time.Before(rep.CreatedAt) {
			rep.CreatedAt = o.GetCreationTimestamp().Time
			rep.Revision = o.GetLabels()[v1alpha1.LabelPodCliqueSetRevision]
		}
		rep.Surge = rep.Surge || o.GetLabels()[v1alpha1.LabelSurge] == "true"
		rep.Terminating = rep.Terminating || o.GetDeletionTimestamp() != nil
		c.all[idx] = append(c.all[idx], o)
		return rep
	}
	podsOf := map[string][]corev1.Pod{} // by PodClique name
	sort.SliceStable(podList.Items, func(i, j int) bool {
		return podList.Items[i].CreationTimestamp.Before(&podList.Items[j].CreationTimestamp)
	})
	// A pod is surge by its own label (a surge pod of a clique) or by its
	// PodClique's (a pod of a surge group or PodCliqueSet replica).
	surgeClique := map[string]bool{}
	for _, pclq := range cliqueList.Items {
		surgeClique[pclq.Name] = pclq.Labels[v1alpha1.LabelSurge] == "true"
	}
	for _, p := range podList.Items {
		clique := p.Labels[v1alpha1.LabelPodClique]
		podsOf[clique] = append(podsOf[clique], p)
		if why := pods.WaitingFor(&p); why != "" {
			c.waiting = append(c.waiting, waitingPod{name: p.Name, setRevision: p.Labels[v1alpha1.LabelPodCliqueSetRevision],
				why: why, surge: p.Labels[v1alpha1.LabelSurge] == "true" || surgeClique[clique]})
		}
	}
	members := map[groupKey][]v1alpha1.PodClique{}
	for i := range cliqueList.Items {
		pclq := &cliqueList.Items[i]
		if !controlledBy(pclq, pcs.UID) {
			if g := pclq.Labels[v1alpha1.LabelPodCliqueScalingGroup]; g != "" {
				idx, _ := replicaIndex(pclq)
				members[groupKey{idx, g}] = append(members[groupKey{idx, g}], *pclq)
			}
			continue
		}
		if _, ok := replicaIndex(pclq); !ok {
			continue
		}
		rep := replica(pclq)
		name := pclq.Labels[v1alpha1.LabelClique]
		obs := rollout.CliqueObservation{Name: name, SpecReplicas: pclq.Spec.Replicas, TemplateReplicas: templateReplicas(pclq)}
		obs.Target, obs.Report = cliqueTargetAndReport(pclq, revs)
		for i := range podsOf[pclq.Name] {
			p := &podsOf[pclq.Name][i]
			if u, ok := pods.Unit(p, minReadySeconds, now); ok {
				obs.Pods = append(obs.Pods, u)
			}
			c.nextAvailableIn = pods.Sooner(c.nextAvailableIn, pods.UntilAvailable(p, minReadySeconds, now))
		}
		rep.Cliques = append(rep.Cliques, obs)
		if pclq.DeletionTimestamp == nil {
			if c.cliques[rep.Index] == nil {
				c.cliques[rep.Index] = map[string]*v1alpha1.PodClique{}
			}
			c.cliques[rep.Index][name] = pclq
		}
	}
	for i := range groupList.Items {
		g := &groupList.Items[i]
		if !controlledBy(g, pcs.UID) {
			continue
		}
		if _, ok := replicaIndex(g); !ok {
			continue
		}
		rep := replica(g)
		name := g.Labels[v1alpha1.LabelPodCliqueScalingGroup]
		var groupPods []corev1.Pod
		var owned []v1alpha1.PodClique
		for _, m := range members[groupKey{rep.Index, name}] {
			if controlledBy(&m, g.UID) {
				owned = append(owned, m)
				groupPods = append(groupPods, podsOf[m.Name]...)
			}
		}
		gobs := groupreplicas.Observe(owned, groupPods, minReadySeconds, now)
		c.nextAvailableIn = pods.Sooner(c.nextAvailableIn, gobs.NextAvailableIn)
		gob := rollout.GroupObservation{Name: name, SpecReplicas: g.Spec.Replicas, TemplateReplicas: templateReplicas(g), Replicas: gobs.Replicas}
		gob.Target, gob.Report = groupTargetAndReport(g, revs)
		rep.Groups = append(rep.Groups, gob)
		if g.DeletionTimestamp == nil {
			if c.groups[rep.Index] == nil {
				c.groups[rep.Index] = map[string]*v1alpha1.PodCliqueScalingGroup{}
			}
			c.groups[rep.Index][name] = g
		}
	}
	for _, rep := range byReplica {
		c.replicas = append(c.replicas, *rep)
	}
	sort.Slice(c.replicas, func(i, j int) bool { return c.replicas[i].Index < c.replicas[j].Index })
	return c, nil
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
	hash, err := revision.PodTemplateHash(&pclq.Spec.Template)
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
