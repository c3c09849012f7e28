package gang

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha2 "k8s.io/api/scheduling/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
)

// Native places gangs with the scheduler's own gang scheduling (Kubernetes
// 1.36, alpha): one scheduling.k8s.io/v1alpha2 PodGroup per gang with a gang
// policy of minCount pods, and pods that name it in spec.schedulingGroup.
//
// No Workload is created: the scheduler gang-schedules a PodGroup without one
// (podGroupTemplateRef is optional), and Lockstep's own objects already play
// the Workload's part of describing the whole.
type Native struct {
	opts Options
}

var _ Backend = (*Native)(nil)

// NewNative returns the native backend.
func NewNative(o Options) *Native {
	return &Native{opts: o.withDefaults()}
}

// Name is "native".
func (n *Native) Name() string { return NameNative }

// PlacesGangs is true: pods join PodGroups through spec.schedulingGroup (JoinPod).
func (n *Native) PlacesGangs() bool { return true }

// SyncGangs makes owner's PodGroups match gangs.
//
// A PodGroup's policy cannot be changed, so a gang whose MinCount changed is
// recreated, but only while no pod that has not finished uses it: a PodGroup in
// use cannot go away (kube-controller-manager holds it with a finalizer until
// its pods are gone), and pods created meanwhile would have to wait for it. The
// old minimum does no harm while the gang runs: once placed, replacements and
// surge pods are placed one at a time. It matters again only when the gang is
// placed from nothing, and that happens after its pods are gone, which is when
// the PodGroup is recreated. Status.MinCount shows the minimum in force.
//
// Gangs no longer listed are deleted even while pods use them; their pods keep
// running and the PodGroup goes when they do.
func (n *Native) SyncGangs(ctx context.Context, owner client.Object, gangs []Gang) error {
	gvk, err := apiutil.GVKForObject(owner, n.opts.Client.Scheme())
	if err != nil {
		return fmt.Errorf("gang owner %s: %w", owner.GetName(), err)
	}
	want := make(map[string]bool, len(gangs))
	for _, g := range gangs {
		if g.MinCount < 1 {
			return fmt.Errorf("gang %s of %s %s: minCount %d, must be at least 1", g.Name, gvk.Kind, owner.GetName(), g.MinCount)
		}
		want[g.Name] = true
	}

	var errs []error
	for _, g := range gangs {
		if err := n.ensure(ctx, owner, gvk, g); err != nil {
			errs = append(errs, err)
		}
	}

	var owned schedulingv1alpha2.PodGroupList
	if err := n.opts.Client.List(ctx, &owned, client.InNamespace(owner.GetNamespace()),
		client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}); err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing PodGroups of %s %s: %w", gvk.Kind, owner.GetName(), err))...)
	}
	for i := range owned.Items {
		pg := &owned.Items[i]
		ref := metav1.GetControllerOfNoCopy(pg)
		if ref == nil || ref.UID != owner.GetUID() || want[pg.Name] || pg.DeletionTimestamp != nil {
			continue
		}
		if err := n.delete(ctx, pg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ensure makes one gang's PodGroup exist with the gang's labels and owner, and
// with its minCount once that is safe.
func (n *Native) ensure(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, g Gang) error {
	c := n.opts.Client
	pg := &schedulingv1alpha2.PodGroup{}
	err := c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: g.Name}, pg)
	if apierrors.IsNotFound(err) {
		return n.create(ctx, owner, gvk, g)
	}
	if err != nil {
		return fmt.Errorf("reading PodGroup %s: %w", g.Name, err)
	}
	if pg.DeletionTimestamp != nil {
		return nil // recreated once it is gone; its deletion brings the owner back here
	}

	ref := metav1.GetControllerOfNoCopy(pg)
	switch {
	case ref != nil && ref.UID == owner.GetUID():
	case ref != nil && ref.Kind == gvk.Kind && ref.Name == owner.GetName():
		// Left by an earlier owner of the same name; the garbage collector
		// removes it, and the new owner then gets its own.
		return nil
	default:
		return fmt.Errorf("PodGroup %s exists and is not controlled by %s %s: rename one of them", pg.Name, gvk.Kind, owner.GetName())
	}

	if policy := pg.Spec.SchedulingPolicy.Gang; policy == nil || policy.MinCount != g.MinCount {
		return n.replaceIfUnused(ctx, pg)
	}

	labels := desiredLabels(g)
	if hasLabels(pg.Labels, labels) {
		return nil
	}
	patch := client.MergeFromWithOptions(pg.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if pg.Labels == nil {
		pg.Labels = map[string]string{}
	}
	maps.Copy(pg.Labels, labels)
	err = c.Patch(ctx, pg, patch)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("labelling PodGroup %s: %w", pg.Name, err)
	}
	// On a conflict the cache was behind; the newer version's event brings the
	// owner back here.
	return nil
}

func (n *Native) create(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, g Gang) error {
	pg := &schedulingv1alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       owner.GetNamespace(),
			Name:            g.Name,
			Labels:          desiredLabels(g),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
		},
		Spec: schedulingv1alpha2.PodGroupSpec{
			SchedulingPolicy: schedulingv1alpha2.PodGroupSchedulingPolicy{
				Gang: &schedulingv1alpha2.GangSchedulingPolicy{MinCount: g.MinCount},
			},
		},
	}
	err := n.opts.Client.Create(ctx, pg)
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier call the cache has not caught up with, or an old one
		// still going away; its event brings the owner back here.
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating PodGroup %s: %w", g.Name, err)
	}
	return nil
}

// replaceIfUnused deletes a PodGroup whose minCount is out of date when no pod
// uses it, so that the next sync creates it anew. The pods are read uncached:
// a pod the cache has not shown yet would keep the deleted PodGroup alive.
func (n *Native) replaceIfUnused(ctx context.Context, pg *schedulingv1alpha2.PodGroup) error {
	pods, err := members(ctx, n.opts.APIReader, pg, false)
	if err != nil {
		return err
	}
	for i := range pods {
		if !terminal(&pods[i]) {
			return nil
		}
	}
	return n.delete(ctx, pg)
}

// delete deletes the PodGroup that was read, not one made since under its name
// (the scheduler's status updates do not matter, so only the UID is checked).
func (n *Native) delete(ctx context.Context, pg *schedulingv1alpha2.PodGroup) error {
	err := n.opts.Client.Delete(ctx, pg, client.Preconditions{UID: &pg.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting PodGroup %s: %w", pg.Name, err)
	}
	return nil
}

// GangStatus reads the gang's PodGroup and pods; see Status.
func (n *Native) GangStatus(ctx context.Context, key client.ObjectKey) (Status, error) {
	pg := &schedulingv1alpha2.PodGroup{}
	if err := n.opts.Client.Get(ctx, key, pg); err != nil {
		if apierrors.IsNotFound(err) {
			return nativeStatus(key.Name, nil, nil), nil
		}
		return Status{}, fmt.Errorf("reading PodGroup %s: %w", key.Name, err)
	}
	pods, err := members(ctx, n.opts.Client, pg, n.opts.IndexedPods)
	if err != nil {
		return Status{}, err
	}
	return nativeStatus(key.Name, pg, pods), nil
}

// members lists the pods that joined the PodGroup. Pods cannot be selected by
// spec.schedulingGroup on the server, so they are filtered here, from the
// PodGroup's PodCliqueSet's pods when it names one (through the cache's
// index when indexed).
func members(ctx context.Context, r client.Reader, pg *schedulingv1alpha2.PodGroup, indexed bool) ([]corev1.Pod, error) {
	opts := []client.ListOption{client.InNamespace(pg.Namespace)}
	if pcs, ok := pg.Labels[v1alpha1.LabelPodCliqueSet]; ok {
		if indexed {
			opts = append(pods.OfPodCliqueSet(pg.Namespace, pcs), pods.ReadOnly) // the status only reads them
		} else {
			opts = append(opts, client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs})
		}
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, opts...); err != nil {
		return nil, fmt.Errorf("listing the pods of PodGroup %s: %w", pg.Name, err)
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !memberOf(&p, pg.Name) }), nil
}

// desiredLabels are the gang's labels with Lockstep's managed-by label, which
// SyncGangs lists its PodGroups by.
func desiredLabels(g Gang) map[string]string {
	labels := maps.Clone(g.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	return labels
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
