package pods

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// TrimForCache is the operator's cache transform for pods: it keeps what the
// controllers read of a pod (its metadata without annotations and
// managedFields; where it runs and what holds it back: nodeName, scheduling
// gates and group; its phase, its Ready and PodScheduled conditions and its
// containers' waiting and terminated states) and drops the rest, most of all
// the containers and volumes, which are most of a pod's size and which nothing
// reads back. Pods are written by create, delete and merge patches of the
// fields kept, never by an update of a cached pod, so the dropped fields are
// never written back empty. Objects other than pods pass unchanged.
//
// The strings many pods repeat (label keys and values, the namespace, the
// owner's kind and API version) are interned: one copy for all the pods that
// share them, where decoding gives each pod its own.
func TrimForCache(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Annotations = nil
	p.Namespace = intern(p.Namespace)
	if len(p.Labels) > 0 {
		lbls := make(map[string]string, len(p.Labels))
		for k, v := range p.Labels {
			lbls[intern(k)] = intern(v)
		}
		p.Labels = lbls
	}
	for i := range p.OwnerReferences {
		o := &p.OwnerReferences[i]
		o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
	}
	p.Spec = corev1.PodSpec{
		NodeName:        intern(p.Spec.NodeName),
		SchedulingGates: p.Spec.SchedulingGates,
		SchedulingGroup: p.Spec.SchedulingGroup,
	}
	var conds []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.PodScheduled {
			c.Type, c.Status = intern(c.Type), intern(c.Status)
			conds = append(conds, c)
		}
	}
	states := make([]corev1.ContainerStatus, len(p.Status.ContainerStatuses))
	for i, s := range p.Status.ContainerStatuses {
		states[i] = corev1.ContainerStatus{Name: intern(s.Name), State: corev1.ContainerState{Waiting: s.State.Waiting, Terminated: s.State.Terminated},
			Ready: s.Ready, RestartCount: s.RestartCount}
	}
	p.Status = corev1.PodStatus{Phase: intern(p.Status.Phase), Conditions: conds, ContainerStatuses: states}
	return p, nil
}

// intern returns the one copy of s the process keeps while it is in use.
func intern[S ~string](s S) S {
	if s == "" {
		return s
	}
	return S(unique.Make(string(s)).Value())
}
