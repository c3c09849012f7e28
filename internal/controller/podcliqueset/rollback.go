package podcliqueset

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
)

// rollback acts on the rollback annotation: it writes the pod templates of the
// named revision into the spec and drops the annotation in the same update, so
// the rollback is an ordinary update the next reconcile rolls out. done is true
// when it wrote the object (the write wakes the controller again).
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
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "RollbackFailed", "Rollback", "%s", why)
		return true, r.dropRollbackAnnotation(ctx, pcs)
	}
	_, tmpl, err := revision.Decode(target)
	if err != nil {
		return false, err
	}
	if target.Name == update.Name {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "RollbackSkipped", "Rollback",
			"revision %d (%s) is the one the spec already asks for", target.Revision, target.Name)
		return true, r.dropRollbackAnnotation(ctx, pcs)
	}
	next := pcs.DeepCopy()
	delete(next.Annotations, v1alpha1.AnnotationRollbackTo)
	for i := range next.Spec.Template.Cliques {
		c := &next.Spec.Template.Cliques[i]
		for j := range tmpl.Cliques {
			if tmpl.Cliques[j].Name == c.Name {
				c.Template = tmpl.Cliques[j].Template
			}
		}
	}
	// An Update carries the resourceVersion read: a user's change made meanwhile wins.
	if err := r.Client.Update(ctx, next); err != nil {
		if isRejected(err) {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "RollbackFailed", "Rollback",
				"rolling back to revision %d (%s) was refused: %v", target.Revision, target.Name, err)
			return true, r.dropRollbackAnnotation(ctx, pcs)
		}
		return false, fmt.Errorf("rolling back PodCliqueSet %s: %w", pcs.Name, err)
	}
	r.Recorder.Eventf(next, nil, corev1.EventTypeNormal, "RollbackStarted", "Rollback",
		"Rolling the pod templates back to revision %d (%s)", target.Revision, target.Name)
	return true, nil
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
