package pods

import (
	corev1 "k8s.io/api/core/v1"
)

// TrimForCache is the operator's cache transform for pods: it keeps what the
// controllers read of a pod (its metadata without managedFields; where it runs
// and what holds it back: nodeName, scheduling gates and group; its phase,
// conditions and container states) and drops the rest, most of all the
// containers and volumes, which are most of a pod's size and which nothing
// reads back. Pods are written by create, delete and merge patches of the
// fields kept, never by an update of a cached pod, so the dropped fields are
// never written back empty. Objects other than pods pass unchanged.
func TrimForCache(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Spec = corev1.PodSpec{
		NodeName:        p.Spec.NodeName,
		SchedulingGates: p.Spec.SchedulingGates,
		SchedulingGroup: p.Spec.SchedulingGroup,
	}
	states := make([]corev1.ContainerStatus, len(p.Status.ContainerStatuses))
	for i, s := range p.Status.ContainerStatuses {
		states[i] = corev1.ContainerStatus{Name: s.Name, State: s.State, Ready: s.Ready, RestartCount: s.RestartCount}
	}
	p.Status = corev1.PodStatus{Phase: p.Status.Phase, Conditions: p.Status.Conditions, ContainerStatuses: states}
	return p, nil
}
