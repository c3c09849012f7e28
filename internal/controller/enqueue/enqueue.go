// Package enqueue maps the objects Lockstep's controllers watch to the owners
// to reconcile, by the labels the operator writes on everything it creates.
package enqueue

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// ToPodCliqueSet enqueues the PodCliqueSet an object is labelled with.
func ToPodCliqueSet() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(PodCliqueSetOf)
}

// ToScalingGroup enqueues the PodCliqueScalingGroup a pod's group replica
// belongs to.
func ToScalingGroup() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(ScalingGroupOfPod)
}

// PodCliqueSetOf maps any object labelled with a PodCliqueSet to it.
func PodCliqueSetOf(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := o.GetLabels()[v1alpha1.LabelPodCliqueSet]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// ScalingGroupOfPod maps a pod of a group replica to its PodCliqueScalingGroup.
func ScalingGroupOfPod(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	group, ok := l[v1alpha1.LabelPodCliqueScalingGroup]
	if !ok {
		return nil
	}
	idx, err := strconv.Atoi(l[v1alpha1.LabelPodCliqueSetReplicaIndex])
	if err != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{
		Namespace: o.GetNamespace(), Name: naming.ScalingGroup(l[v1alpha1.LabelPodCliqueSet], idx, group)}}}
}
