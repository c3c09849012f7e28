package podcliqueset

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// syncRevisions makes sure the spec's template is kept as a ControllerRevision
// (the newest one, also when it repeats an older template: that is a rollback)
// and returns the revisions the planner knows, and all the revisions the
// PodCliqueSet owns, oldest first (for trimHistory).
func (r *Reconciler) syncRevisions(ctx context.Context, pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec) (rollout.Revisions, templates, []appsv1.ControllerRevision, error) {
	update, err := revision.ForSpec(pcs.Name, spec)
	if err != nil {
		return rollout.Revisions{}, nil, nil, err
	}
	owned, err := r.ownedRevisions(ctx, pcs)
	if err != nil {
		return rollout.Revisions{}, nil, nil, err
	}
	var newest int64
	var existing *appsv1.ControllerRevision
	for i := range owned {
		cr := &owned[i]
		newest = max(newest, cr.Revision)
		if cr.Name == update.Name {
			existing = cr.DeepCopy()
		}
	}
	switch {
	case existing == nil:
		cr, err := revision.NewControllerRevision(pcs.DeepCopy(), update, newest+1)
		if err != nil {
			return rollout.Revisions{}, nil, nil, err
		}
		if err := r.Client.Create(ctx, cr); client.IgnoreAlreadyExists(err) != nil {
			return rollout.Revisions{}, nil, nil, fmt.Errorf("creating revision %s: %w", cr.Name, err)
		}
		owned = append(owned, *cr)
	case existing.Revision < newest:
		// Back to an older template: it becomes the newest revision again.
		patch := client.MergeFrom(existing.DeepCopy())
		existing.Revision = newest + 1
		if err := r.Client.Patch(ctx, existing, patch); err != nil {
			return rollout.Revisions{}, nil, nil, fmt.Errorf("renumbering revision %s: %w", existing.Name, err)
		}
		for i := range owned {
			if owned[i].Name == existing.Name {
				owned[i].Revision = existing.Revision
			}
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Revision < owned[j].Revision })

	revs := rollout.Revisions{Update: update, Current: update}
	tmpls := templates{update.Name: &spec.Template}
	decoded := make([]rollout.SetRevision, 0, len(owned))
	for i := range owned {
		rev, t, err := revision.Decode(&owned[i])
		if err != nil {
			return rollout.Revisions{}, nil, nil, err
		}
		if rev.Name != update.Name {
			tmpls[rev.Name] = t
		}
		if rev.Name == update.Name {
			revs.Update = rev // the roles as recorded when the revision was made
		}
		decoded = append(decoded, rev)
	}
	for _, rev := range decoded {
		switch {
		case rev.Name == pcs.Status.CurrentRevision:
			revs.Current = rev
		case rev.Name != update.Name:
			revs.History = append(revs.History, rev)
		}
	}
	if pcs.Status.CurrentRevision == "" {
		revs.Current = revs.Update
	}
	return revs, tmpls, owned, nil
}

// ownedRevisions lists the ControllerRevisions the PodCliqueSet controls.
func (r *Reconciler) ownedRevisions(ctx context.Context, pcs *v1alpha1.PodCliqueSet) ([]appsv1.ControllerRevision, error) {
	var list appsv1.ControllerRevisionList
	if err := r.Client.List(ctx, &list, client.InNamespace(pcs.Namespace), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs.Name}); err != nil {
		return nil, fmt.Errorf("listing revisions of %s: %w", pcs.Name, err)
	}
	owned := list.Items[:0]
	for _, cr := range list.Items {
		if ref := metav1.GetControllerOf(&cr); ref != nil && ref.UID == pcs.UID {
			owned = append(owned, cr)
		}
	}
	return owned, nil
}

// templates are the PodCliqueSet templates of the known revisions, by name.
type templates map[string]*v1alpha1.PodCliqueSetTemplateSpec

// trimHistory deletes the oldest revisions beyond revisionHistoryLimit. The
// status's current and update revisions always stay, and so does any revision a
// child still names: a held-back unit may need its template. It runs after the
// status is written, so a rollout that just completed trims at once. held says
// that children still name revisions beyond the limit: look again later.
func (r *Reconciler) trimHistory(ctx context.Context, pcs *v1alpha1.PodCliqueSet, owned []appsv1.ControllerRevision) (held bool, err error) {
	limit := int32(v1alpha1.DefaultRevisionHistoryLimit)
	if pcs.Spec.RevisionHistoryLimit != nil {
		limit = *pcs.Spec.RevisionHistoryLimit
	}
	inUse, err := r.revisionsInUse(ctx, pcs)
	if err != nil {
		return false, err
	}
	var old []appsv1.ControllerRevision
	heldBack := 0
	for _, cr := range owned {
		switch {
		case cr.Name == pcs.Status.UpdateRevision || cr.Name == pcs.Status.CurrentRevision:
		case inUse[cr.Name]:
			heldBack++
		default:
			old = append(old, cr)
		}
	}
	for i := 0; i < len(old)-int(limit); i++ {
		if err := r.Client.Delete(ctx, &old[i]); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("trimming revision %s: %w", old[i].Name, err)
		}
	}
	// Children still naming a revision beyond the limit (a rollout just moved
	// them on, and the cache does not show it yet): look again later.
	return heldBack > 0 && heldBack+len(old) > int(limit), nil
}

// revisionsInUse are the revisions any child's spec refers to. (A child's
// revision label records what it was created from and goes stale once it is
// retargeted, so it does not keep a revision alive.)
func (r *Reconciler) revisionsInUse(ctx context.Context, pcs *v1alpha1.PodCliqueSet) (map[string]bool, error) {
	sel := client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs.Name}
	inUse := map[string]bool{}
	var cliques v1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliques, client.InNamespace(pcs.Namespace), sel); err != nil {
		return nil, err
	}
	for _, c := range cliques.Items {
		inUse[c.Spec.Revision] = true
		inUse[c.Spec.UpdateStrategy.CurrentRevision] = true
	}
	var groups v1alpha1.PodCliqueScalingGroupList
	if err := r.Client.List(ctx, &groups, client.InNamespace(pcs.Namespace), sel); err != nil {
		return nil, err
	}
	for _, g := range groups.Items {
		inUse[g.Spec.Revision] = true
		inUse[g.Spec.UpdateStrategy.CurrentRevision] = true
	}
	return inUse, nil
}
