package federatedworkload

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/narrate"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
)

// memberRequest is the object the controller sends a member for w: exactly
// what the round built, never touched up here (`lockstep plan`'s members get
// the same objects; encode_test.go holds them to it).
func memberRequest(w round.Write) *unstructured.Unstructured {
	return w.Object.DeepCopy()
}

// writeMembers makes every write of a round, through the connection the
// member was read through, and reports the ones that failed together. The
// members are written at once, at most MemberConcurrency at a time (one
// member's writes in their order): a member whose calls hang holds back only
// its own writes, each for one call timeout.
func (r *Reconciler) writeMembers(ctx context.Context, conns map[string]cluster.Cluster, writes []round.Write) error {
	var order []string
	byCluster := map[string][]round.Write{}
	for _, w := range writes {
		if _, ok := byCluster[w.Cluster]; !ok {
			order = append(order, w.Cluster)
		}
		byCluster[w.Cluster] = append(byCluster[w.Cluster], w)
	}
	errs := make([][]string, len(order))
	var g errgroup.Group
	g.SetLimit(r.memberConcurrency())
	for i, name := range order {
		conn, ok := conns[name]
		if !ok {
			errs[i] = []string{fmt.Sprintf("cluster %s: no connection", name)}
			continue
		}
		g.Go(func() error {
			for _, w := range byCluster[name] {
				if err := r.writeHeld(ctx, conn, w); err != nil {
					errs[i] = append(errs[i], fmt.Sprintf("cluster %s: %v", w.Cluster, err))
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	if all := slices.Concat(errs...); len(all) > 0 {
		return fmt.Errorf("writing member objects: %s", strings.Join(all, "; "))
	}
	return nil
}

// writeHeld makes one write, the object's member events held until its
// answer (MemberEvents.writing, wrote); released even if the write panics.
func (r *Reconciler) writeHeld(ctx context.Context, conn cluster.Cluster, w round.Write) (err error) {
	var rv string
	r.MemberEvents.writing(conn, w.Object)
	defer func() { r.MemberEvents.wrote(ctx, conn, w.Object, rv) }()
	rv, err = writeMember(ctx, conn, w)
	return err
}

// writeMember makes one write, and returns the resourceVersion the object
// has after it ("" after a delete, or when nothing was written).
func writeMember(ctx context.Context, conn cluster.Cluster, w round.Write) (string, error) {
	switch w.Op {
	case round.Create:
		return createMember(ctx, conn, w)
	case round.Apply:
		return applyMember(ctx, conn, w)
	case round.Delete:
		return "", deleteMember(ctx, conn, w)
	default:
		return "", fmt.Errorf("unknown write %q", w.Op)
	}
}

// createMember makes the member object (and its namespace). A create, not an
// apply: it fails when the name is taken, so an object someone made since the
// read is never taken over. The next round reads what holds the name: its own
// object (a create of an earlier round whose answer was lost) or a conflict.
func createMember(ctx context.Context, conn cluster.Cluster, w round.Write) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	obj := memberRequest(w)
	c := conn.GetClient()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	err := c.Create(ctx, obj, client.FieldOwner(FieldManager))
	if apierrors.IsAlreadyExists(err) {
		ctrl.LoggerFrom(ctx).Info("member object made by someone else since the read; the next round reads it",
			"member", w.Cluster, "kind", obj.GetKind(), "object", obj.GetNamespace()+"/"+obj.GetName())
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("creating %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return obj.GetResourceVersion(), nil
}

// applyMember writes the hub's fields by server-side apply to the object the
// round read as the workload's: the object carries its UID (round.Apply).
func applyMember(ctx context.Context, conn cluster.Cluster, w round.Write) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	obj := memberRequest(w)
	if err := conn.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying %s %s/%s (uid %s): %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
	}
	return obj.GetResourceVersion(), nil // the answer is decoded into obj
}

// deleteMember deletes the object the round read as the workload's only if
// it is still that object unchanged (round.Delete). A precondition that fails
// is an error; the next round reads again.
func deleteMember(ctx context.Context, conn cluster.Cluster, w round.Write) error {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	obj := memberRequest(w)
	uid, rv := w.UID, w.ResourceVersion
	err := conn.GetClient().Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s (uid %s, resourceVersion %s): %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), uid, rv, err)
	}
	return nil
}

// record records the round's Events on the workload, each also a log line
// with its reason and message.
func (r *Reconciler) record(ctx context.Context, fw *fleetv1alpha1.FederatedWorkload, evs []round.Event) {
	if len(evs) == 0 {
		return
	}
	rec := narrate.Recorder(r.Recorder, ctrl.LoggerFrom(ctx))
	for _, e := range evs {
		rec.Eventf(fw, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
}
