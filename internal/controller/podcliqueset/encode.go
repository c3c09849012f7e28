package podcliqueset

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// childEncoder turns the planner's targets for the children of one PodCliqueSet
// replica into the PodCliques and PodCliqueScalingGroups to write. It is pure:
// the same step a test runs beside rollout.PlanTree.
type childEncoder struct {
	pcs           *v1alpha1.PodCliqueSet
	spec          *v1alpha1.PodCliqueSetSpec
	revs          rollout.Revisions
	tmpls         templates
	replica       int32
	surge         bool
	baseGang      string
	baseScheduled bool
}

// templateAt is the PodCliqueSet template of a set revision.
func (e *childEncoder) templateAt(setRevision string) (*v1alpha1.PodCliqueSetTemplateSpec, error) {
	if t, ok := e.tmpls[setRevision]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("PodCliqueSet %s: revision %s is not kept", e.pcs.Name, setRevision)
}

// meta is the metadata of a new child of this replica.
func (e *childEncoder) meta(name string, extra map[string]string, setRevision string, templateReplicas int32) metav1.ObjectMeta {
	l := replicaLabels(e.pcs, e.replica)
	for k, v := range extra {
		l[k] = v
	}
	l[v1alpha1.LabelPodCliqueSetRevision] = setRevision
	if e.surge {
		l[v1alpha1.LabelSurge] = "true"
	}
	return metav1.ObjectMeta{
		Name: name, Namespace: e.pcs.Namespace, Labels: l,
		Annotations:     map[string]string{annotationTemplateReplicas: strconv.Itoa(int(templateReplicas))},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(e.pcs, v1alpha1.GroupVersion.WithKind("PodCliqueSet"))},
	}
}

// observedReplicas is what an existing child's spec.replicas holds now.
func observedReplicas(o metav1.Object, spec int32) *rollout.ChildReplicasObservation {
	if o == nil {
		return nil
	}
	return &rollout.ChildReplicasObservation{Spec: spec, Template: templateReplicas(o)}
}

// templateReplicas reads the annotationTemplateReplicas of a child (0: none).
func templateReplicas(o metav1.Object) int32 {
	n, _ := strconv.Atoi(o.GetAnnotations()[annotationTemplateReplicas])
	return int32(n)
}

// encode is the child spec of role for target t, keeping replicas that were
// scaled through /scale (observed) while the template's stay as they were.
func (e *childEncoder) encode(role string, t rollout.Target, limits *v1alpha1.ComponentUpdateStrategy,
	observed *rollout.ChildReplicasObservation, templateReplicas int32, pods rollout.PodRules) rollout.ChildSpec {
	return rollout.EncodeTarget(t, e.revs, role, limits, rollout.ChildReplicas(observed, templateReplicas), pods)
}

// clique is the standalone PodClique that runs target t.
func (e *childEncoder) clique(name string, t rollout.Target, existing *v1alpha1.PodClique) (*v1alpha1.PodClique, error) {
	tmpl, err := e.templateAt(t.SetRevision)
	if err != nil {
		return nil, err
	}
	at, live := tmpl.Clique(name), e.spec.Template.Clique(name)
	if at == nil || live == nil {
		return nil, fmt.Errorf("PodCliqueSet %s: clique %s missing at revision %s", e.pcs.Name, name, t.SetRevision)
	}
	var observed *rollout.ChildReplicasObservation
	if existing != nil {
		observed = observedReplicas(existing, existing.Spec.Replicas)
	}
	cs, minAvailable := e.encode(name, t, live.UpdateStrategy, observed, live.Replicas, rollout.PodRulesOf(e.spec)), live.EffectiveMinAvailable()
	pclq := &v1alpha1.PodClique{
		ObjectMeta: e.meta(naming.PodClique(e.pcs.Name, int(e.replica), name), map[string]string{v1alpha1.LabelClique: name}, t.SetRevision, live.Replicas),
		Spec: v1alpha1.PodCliqueSpec{
			Replicas: cs.Replicas, MinAvailable: &minAvailable, MinReadySeconds: e.spec.MinReadySeconds,
			Revision: cs.Revision, UpdateStrategy: cs.UpdateStrategy, Template: at.Template, PeerDNS: at.PeerDNS,
		},
	}
	if e.baseGang != "" {
		pclq.Spec.Gang = &v1alpha1.PodCliqueGang{PodGroupName: e.baseGang}
	}
	return pclq, nil
}

// group is the PodCliqueScalingGroup that runs target t.
func (e *childEncoder) group(name string, t rollout.Target, existing *v1alpha1.PodCliqueScalingGroup) (*v1alpha1.PodCliqueScalingGroup, error) {
	tmpl, err := e.templateAt(t.SetRevision)
	if err != nil {
		return nil, err
	}
	at, live := tmpl.ScalingGroup(name), e.spec.Template.ScalingGroup(name)
	if at == nil || live == nil {
		return nil, fmt.Errorf("PodCliqueSet %s: scaling group %s missing at revision %s", e.pcs.Name, name, t.SetRevision)
	}
	members := tmpl.Members(at)
	for i := range members {
		members[i].UpdateStrategy = nil // a group replica is replaced whole
	}
	var observed *rollout.ChildReplicasObservation
	if existing != nil {
		observed = observedReplicas(existing, existing.Spec.Replicas)
	}
	g := &v1alpha1.PodCliqueScalingGroup{
		ObjectMeta: e.meta(naming.ScalingGroup(e.pcs.Name, int(e.replica), name), map[string]string{v1alpha1.LabelPodCliqueScalingGroup: name}, t.SetRevision, live.Replicas),
		Spec: v1alpha1.PodCliqueScalingGroupSpec{
			MinAvailable: ptr.To(live.EffectiveMinAvailable()), MinReadySeconds: e.spec.MinReadySeconds, Cliques: members,
		},
	}
	cs := e.encode(name, t, live.UpdateStrategy, observed, live.Replicas, rollout.PodRules{})
	g.Spec.Replicas, g.Spec.Revision, g.Spec.UpdateStrategy = cs.Replicas, cs.Revision, cs.UpdateStrategy
	if e.baseGang != "" {
		g.Spec.Gang = &v1alpha1.ScalingGroupGang{BasePodGroupName: e.baseGang, BaseScheduled: e.baseScheduled}
	}
	return g, nil
}
