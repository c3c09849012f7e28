// Package enqueue maps the objects Lockstep's controllers watch to the owners
// to reconcile, by the labels the operator writes on everything it creates.
package enqueue

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
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
	idx, ok := v1alpha1.IndexLabel(l, v1alpha1.LabelPodCliqueSetReplicaIndex)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{
		Namespace: o.GetNamespace(), Name: naming.ScalingGroup(l[v1alpha1.LabelPodCliqueSet], int(idx), group)}}}
}

// Listed lists list's kind with opts and asks for every item to be reconciled:
// the mapping of a change that may concern any of them. A failed list is
// logged, naming what changed, and maps to nothing (the next change or resync
// brings the objects back).
func Listed(ctx context.Context, c client.Reader, list client.ObjectList, change string, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing objects to reconcile", "change", change)
		return nil
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		log.FromContext(ctx).Error(err, "reading a list", "change", change)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(items))
	for _, o := range items {
		if co, ok := o.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
		}
	}
	return reqs
}
