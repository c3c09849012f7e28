package write

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Remove deletes a unit the planner removed (a PodCliqueSet replica, a
// scaling-group replica): first the children that hold its pods, each only as
// observed (its UID) and in the foreground, so the unit's index is not made
// again while its pods run; then its pods, by UID, in the same step. The
// children go first because a terminating PodClique gets no pod made again
// (its controller reads it live before creating, fresh.MayCreate), so a pod
// deleted here stays deleted; deleting the pods first let the PodClique
// controller make one again in between. The pods go here rather than when the
// garbage collector reaches them: what waits for them (the next replica or
// role step, the unit's replacement) goes by the pods, so the decision and the
// pods' end are one step. Only pods a child controls are deleted: one that
// merely carries the unit's labels is not Lockstep's to delete. deleted sees
// each child deleted (or found gone).
func Remove(ctx context.Context, c client.Client, children []client.Object, pods []*corev1.Pod, deleted func(client.Object)) error {
	foreground := client.PropagationPolicy(metav1.DeletePropagationForeground)
	owners := map[types.UID]bool{}
	for _, o := range children {
		owners[o.GetUID()] = true
	}
	for _, o := range children {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		uid := o.GetUID()
		if err := c.Delete(ctx, o, client.Preconditions{UID: &uid}, foreground); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o.GetName(), err)
		}
		if deleted != nil {
			deleted(o)
		}
	}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref == nil || !owners[ref.UID] {
			continue
		}
		uid := p.UID
		if err := c.Delete(ctx, p, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
	}
	return nil
}
