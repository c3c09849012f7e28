package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// rollback acts on the rollback annotation: it writes the named revision into
// the spec (every field the revision is made of: the pod templates, and the
// replicas and minAvailable of cliques in scaling groups) and drops the
// annotation in the same update, so the rollback is an ordinary update the next
// reconcile rolls out. A template change made in the same write as the
// annotation is not overwritten: the rollback fails loudly and the change
// stands. done is true when it wrote the object (the write wakes the
// controller again).
func (r *Reconciler) rollback(ctx context.Context, pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec) (done bool, err error) {
	want, ok := pcs.Annotations[v1alpha1.AnnotationRollbackTo]
	if !ok {
		return false, nil
	}
	owned, err := r.ownedRevisions(ctx, pcs)
	if err != nil {
		return false, err
	}
	update, err := revision.ForSpec(pcs.Name, spec)
	if err != nil {
		return false, err
	}
	target, why := pickRevision(owned, want, update.Name)
	if target == nil {
		return true, r.dropWithOutcome(ctx, pcs, "failed", corev1.EventTypeWarning, "RollbackFailed", "%s", why)
	}
	if !slices.ContainsFunc(owned, func(cr appsv1.ControllerRevision) bool { return cr.Name == update.Name }) {
		// The spec changed and was never seen: rolling back would silently drop
		// that change. Keep it, and say so.
		return true, r.dropWithOutcome(ctx, pcs, "failed", corev1.EventTypeWarning, "RollbackFailed",
			"the templates changed in the same update as the %s annotation; the change is kept and nothing is rolled back: "+
				"apply the change or the rollback, one at a time", v1alpha1.AnnotationRollbackTo)
	}
	_, tmpl, err := revision.Decode(target)
	if err != nil {
		return false, err
	}
	if target.Name == update.Name {
		return true, r.dropWithOutcome(ctx, pcs, "skipped", corev1.EventTypeNormal, "RollbackSkipped",
			"revision %d (%s) is the one the spec already asks for", target.Revision, target.Name)
	}
	next := pcs.DeepCopy()
	delete(next.Annotations, v1alpha1.AnnotationRollbackTo)
	restoreRevision(&next.Spec.Template, tmpl)
	// An Update carries the resourceVersion read: a user's change made meanwhile wins.
	if err := r.Client.Update(ctx, next); err != nil {
		if isRejected(err) {
			return true, r.dropWithOutcome(ctx, pcs, "failed", corev1.EventTypeWarning, "RollbackFailed",
				"rolling back to revision %d (%s) was refused: %v", target.Revision, target.Name, err)
		}
		return false, fmt.Errorf("rolling back PodCliqueSet %s: %w", pcs.Name, err)
	}
	r.rollbackOutcome(next, "started", corev1.EventTypeNormal, "RollbackStarted",
		"Rolling back to revision %d (%s)", target.Revision, target.Name)
	return true, nil
}

// dropWithOutcome removes the annotation of a rollback that does not happen
// and, once that write went through, records why: a pass on a stale read
// (whose write conflicts) reports nothing, so every request counts once.
func (r *Reconciler) dropWithOutcome(ctx context.Context, pcs *v1alpha1.PodCliqueSet, result, eventType, reason, note string, args ...any) error {
	if err := r.dropRollbackAnnotation(ctx, pcs); err != nil {
		return err
	}
	r.rollbackOutcome(pcs, result, eventType, reason, note, args...)
	return nil
}

// rollbackOutcome records how a rollback request ended: an Event, and the
// lockstep_rollbacks_total metric by result (started, skipped, failed).
func (r *Reconciler) rollbackOutcome(pcs *v1alpha1.PodCliqueSet, result, eventType, reason, note string, args ...any) {
	r.Recorder.Eventf(pcs, nil, eventType, reason, "Rollback", note, args...)
	if r.Metrics != nil {
		r.Metrics.Rollback(pcs.Namespace, pcs.Name, result)
	}
}

// restoreRevision writes into t what a revision is made of, from the stored
// template at: every clique's pod template and, for cliques in scaling groups,
// their replicas and minAvailable (the shape of a group replica). What the
// revision does not record (standalone replicas, update strategies, the groups'
// own replicas) is left as the spec has it, as a Deployment's rollback leaves
// its replicas.
func restoreRevision(t, at *v1alpha1.PodCliqueSetTemplateSpec) {
	for i := range t.Cliques {
		c, old := &t.Cliques[i], at.Clique(t.Cliques[i].Name)
		if old == nil {
			continue
		}
		c.Template = old.Template
		if t.ScalingGroupOf(c.Name) != nil {
			c.Replicas, c.MinAvailable = old.Replicas, ptr.To(old.EffectiveMinAvailable())
		}
	}
}

// pickRevision finds the revision the annotation value names, or says why not.
func pickRevision(owned []appsv1.ControllerRevision, want, updateName string) (*appsv1.ControllerRevision, string) {
	sort.Slice(owned, func(i, j int) bool { return owned[i].Revision > owned[j].Revision })
	want = strings.TrimSpace(want)
	for i := range owned {
		cr := &owned[i]
		switch {
		case want == v1alpha1.RollbackToPrevious:
			if cr.Name != updateName {
				return cr, ""
			}
		case cr.Name == want || strconv.FormatInt(cr.Revision, 10) == want:
			return cr, ""
		}
	}
	kept := make([]string, 0, len(owned))
	for _, cr := range owned {
		kept = append(kept, fmt.Sprintf("%d (%s)", cr.Revision, cr.Name))
	}
	if want == v1alpha1.RollbackToPrevious {
		return nil, "no revision before the current one is kept; kept: " + strings.Join(kept, ", ")
	}
	return nil, fmt.Sprintf("%s=%q names no kept revision; kept: %s (revisionHistoryLimit decides how many)",
		v1alpha1.AnnotationRollbackTo, want, strings.Join(kept, ", "))
}

// isRejected reports an error of admission or validation: retrying the same
// write cannot succeed.
func isRejected(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

// dropRollbackAnnotation removes the annotation after a rollback that cannot happen.
func (r *Reconciler) dropRollbackAnnotation(ctx context.Context, pcs *v1alpha1.PodCliqueSet) error {
	patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(pcs.Annotations, v1alpha1.AnnotationRollbackTo)
	return r.Client.Patch(ctx, pcs, patch)
}
