package podcliqueset

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// annotationTemplateReplicas remembers the replicas the PodCliqueSet last wrote
// into a child. While the template keeps that number, the child's replicas are
// left to whoever scales it (an HPA through /scale); a change of the template
// wins again.
const annotationTemplateReplicas = "lockstep.dev/template-replicas"

// apply carries out a plan: whole replicas deleted (ReplicaRecreate, scale-in),
// gangs and Services in place, and every child's spec set to its target.
// It returns the status of each replica's base gang (empty without gangs).
func (r *Reconciler) apply(ctx context.Context, pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec, revs rollout.Revisions,
	tmpls templates, plan rollout.SetPlan, ch children) ([]replicaGang, error) {
	for _, d := range plan.Deletes {
		if err := r.deleteReplica(ctx, pcs, d, ch.all[d.Index]); err != nil {
			return nil, err
		}
	}
	live := map[int32]bool{}
	var baseGangs []gang.Gang
	withSpec := pcs.DeepCopy()
	withSpec.Spec = *spec
	for _, rp := range plan.Replicas {
		live[rp.Index] = true
		baseGangs = append(baseGangs, gang.BaseGang(withSpec, int(rp.Index)))
	}
	if err := r.Gangs.SyncGangs(ctx, pcs, baseGangs); err != nil {
		return nil, fmt.Errorf("syncing the gangs of %s: %w", pcs.Name, err)
	}
	if err := r.syncServices(ctx, pcs, live); err != nil {
		return nil, err
	}
	surge := map[int32]bool{}
	for _, c := range plan.Creates {
		surge[c.Index] = c.Surge
		what := "replica"
		if c.Surge {
			what = "surge replica"
		}
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "CreatingReplica", "Create", "Creating %s %d (revision %s)", what, c.Index, c.Revision)
	}
	deleted := map[int32]bool{}
	for _, d := range plan.Deletes {
		deleted[d.Index] = true
	}
	var gangs []replicaGang
	for _, rp := range plan.Replicas {
		if deleted[rp.Index] {
			continue // its children were just deleted: writing them again would race the deletion
		}
		w := childWriter{r: r, pcs: pcs, spec: spec, revs: revs, tmpls: tmpls, replica: rp.Index, surge: surge[rp.Index]}
		if _, native := r.Gangs.(*gang.Native); native {
			st, err := r.Gangs.GangStatus(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: naming.BaseGang(pcs.Name, int(rp.Index))})
			if err != nil {
				return nil, err
			}
			w.baseGang, w.baseScheduled = naming.BaseGang(pcs.Name, int(rp.Index)), st.Scheduled
			gangs = append(gangs, replicaGang{replica: rp.Index, name: w.baseGang, status: st})
		}
		for _, ct := range rp.Cliques {
			if ct.Target != nil {
				if err := w.syncClique(ctx, ct.Role, *ct.Target, ch.cliques[rp.Index][ct.Role]); err != nil {
					return nil, err
				}
			}
		}
		for _, ct := range rp.Groups {
			if ct.Target != nil {
				if err := w.syncGroup(ctx, ct.Role, *ct.Target, ch.groups[rp.Index][ct.Role]); err != nil {
					return nil, err
				}
			}
		}
	}
	return gangs, nil
}

// deleteReplica removes every child of one PodCliqueSet replica together.
func (r *Reconciler) deleteReplica(ctx context.Context, pcs *v1alpha1.PodCliqueSet, d rollout.Delete, objs []client.Object) error {
	deleted := false
	for _, o := range objs {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		uid := o.GetUID()
		// Foreground: the children stay, terminating, until their pods are gone,
		// so the replica is not made again while its old pods still run.
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationForeground)); ignoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s of replica %d: %w", o.GetName(), d.Index, err)
		}
		deleted = true
	}
	if deleted {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "DeletedReplica", "Delete", "Deleted replica %d: %s", d.Index, d.Reason)
	}
	return nil
}

// syncServices keeps one headless Service per live replica (pods resolve as
// <pod>.<pcs>-<replica>) and removes those of replicas that are gone.
func (r *Reconciler) syncServices(ctx context.Context, pcs *v1alpha1.PodCliqueSet, live map[int32]bool) error {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(pcs.Namespace), client.MatchingLabels{v1alpha1.LabelPodCliqueSet: pcs.Name}); err != nil {
		return fmt.Errorf("listing Services of %s: %w", pcs.Name, err)
	}
	have := map[int32]bool{}
	for i := range list.Items {
		svc := &list.Items[i]
		idx, ok := replicaIndex(svc)
		if !ok || !controlledBy(svc, pcs.UID) {
			continue
		}
		have[idx] = true
		if !live[idx] {
			if err := r.Client.Delete(ctx, svc); ignoreNotFound(err) != nil {
				return fmt.Errorf("deleting Service %s: %w", svc.Name, err)
			}
		}
	}
	for idx := range live {
		if have[idx] {
			continue
		}
		labels := replicaLabels(pcs, idx)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: naming.HeadlessService(pcs.Name, int(idx)), Namespace: pcs.Namespace, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pcs, v1alpha1.GroupVersion.WithKind("PodCliqueSet"))}},
			Spec: corev1.ServiceSpec{
				ClusterIP:                corev1.ClusterIPNone,
				Selector:                 map[string]string{v1alpha1.LabelPodCliqueSet: pcs.Name, v1alpha1.LabelPodCliqueSetReplicaIndex: labels[v1alpha1.LabelPodCliqueSetReplicaIndex]},
				PublishNotReadyAddresses: true, // peers find each other while starting up
			},
		}
		if err := r.Client.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Service %s: %w", svc.Name, err)
		}
	}
	return nil
}

func replicaLabels(pcs *v1alpha1.PodCliqueSet, idx int32) map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy:                v1alpha1.ManagedByValue,
		v1alpha1.LabelPodCliqueSet:             pcs.Name,
		v1alpha1.LabelPodCliqueSetReplicaIndex: strconv.Itoa(int(idx)),
	}
}

// replicaGang is the base gang of one replica and how it stands.
type replicaGang struct {
	replica int32
	name    string
	status  gang.Status
}

// childWriter writes the children of one PodCliqueSet replica.
type childWriter struct {
	r             *Reconciler
	pcs           *v1alpha1.PodCliqueSet
	spec          *v1alpha1.PodCliqueSetSpec
	revs          rollout.Revisions
	tmpls         templates
	replica       int32
	surge         bool
	baseGang      string
	baseScheduled bool
}

// templateAt is the PodCliqueSet template of a set revision.
func (w *childWriter) templateAt(setRevision string) (*v1alpha1.PodCliqueSetTemplateSpec, error) {
	if t, ok := w.tmpls[setRevision]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("PodCliqueSet %s: revision %s is not kept", w.pcs.Name, setRevision)
}

// currentRevisionName is the set revision whose template holds role at hash.
func (w *childWriter) currentRevisionName(role, hash string, t rollout.Target) string {
	if hash == t.UpdateRevision {
		return ""
	}
	for _, set := range append([]rollout.SetRevision{w.revs.Current, w.revs.Update}, w.revs.History...) {
		if h, ok := set.Role(role); ok && h == hash {
			return set.Name
		}
	}
	return ""
}

func (w *childWriter) labels(extra map[string]string, setRevision string) map[string]string {
	l := replicaLabels(w.pcs, w.replica)
	for k, v := range extra {
		l[k] = v
	}
	l[v1alpha1.LabelPodCliqueSetRevision] = setRevision
	if w.surge {
		l[v1alpha1.LabelSurge] = "true"
	}
	return l
}

func strategy(t rollout.Target, s *v1alpha1.ComponentUpdateStrategy, currentRevision string) v1alpha1.ChildUpdateStrategy {
	mu, ms := v1alpha1.DefaultMaxUnavailable, v1alpha1.DefaultMaxSurge
	if s != nil && s.MaxUnavailable != nil {
		mu = *s.MaxUnavailable
	}
	if s != nil && s.MaxSurge != nil {
		ms = *s.MaxSurge
	}
	st := t.ChildUpdateStrategy(mu, ms)
	st.CurrentRevision = currentRevision
	if t.Type == v1alpha1.OnDeleteStrategyType {
		st.MaxUnavailable, st.MaxSurge = nil, nil
	}
	return st
}

// syncClique creates or updates a standalone PodClique to run target t.
func (w *childWriter) syncClique(ctx context.Context, name string, t rollout.Target, existing *v1alpha1.PodClique) error {
	tmpl, err := w.templateAt(t.SetRevision)
	if err != nil {
		return err
	}
	at := tmpl.Clique(name)
	live := w.spec.Template.Clique(name)
	if at == nil || live == nil {
		return fmt.Errorf("PodCliqueSet %s: clique %s missing at revision %s", w.pcs.Name, name, t.SetRevision)
	}
	minAvailable := live.EffectiveMinAvailable()
	desired := v1alpha1.PodCliqueSpec{
		Replicas:        live.Replicas,
		MinAvailable:    &minAvailable,
		MinReadySeconds: w.spec.MinReadySeconds,
		Revision:        t.SetRevision,
		UpdateStrategy:  strategy(t, live.UpdateStrategy, w.currentRevisionName(name, t.CurrentRevision, t)),
		Template:        at.Template,
	}
	if w.baseGang != "" {
		desired.Gang = &v1alpha1.PodCliqueGang{PodGroupName: w.baseGang}
	}
	if existing == nil {
		pclq := &v1alpha1.PodClique{
			ObjectMeta: metav1.ObjectMeta{
				Name: naming.PodClique(w.pcs.Name, int(w.replica), name), Namespace: w.pcs.Namespace,
				Labels:          w.labels(map[string]string{v1alpha1.LabelClique: name}, t.SetRevision),
				Annotations:     map[string]string{annotationTemplateReplicas: strconv.Itoa(int(live.Replicas))},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w.pcs, v1alpha1.GroupVersion.WithKind("PodCliqueSet"))},
			},
			Spec: desired,
		}
		if err := w.r.Client.Create(ctx, pclq); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodClique %s: %w", pclq.Name, err)
		}
		return nil
	}
	desired.Replicas = scaledReplicas(existing, existing.Spec.Replicas, live.Replicas)
	if apiequality.Semantic.DeepEqual(desired, existing.Spec) && existing.Annotations[annotationTemplateReplicas] == strconv.Itoa(int(live.Replicas)) {
		return nil
	}
	patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
	existing.Spec = desired
	setAnnotation(existing, annotationTemplateReplicas, strconv.Itoa(int(live.Replicas)))
	if err := w.r.Client.Patch(ctx, existing, patch); err != nil {
		return fmt.Errorf("updating PodClique %s: %w", existing.Name, err)
	}
	return nil
}

// syncGroup creates or updates a PodCliqueScalingGroup to run target t.
func (w *childWriter) syncGroup(ctx context.Context, name string, t rollout.Target, existing *v1alpha1.PodCliqueScalingGroup) error {
	tmpl, err := w.templateAt(t.SetRevision)
	if err != nil {
		return err
	}
	at, live := groupConfig(tmpl, name), groupConfig(&w.spec.Template, name)
	if at == nil || live == nil {
		return fmt.Errorf("PodCliqueSet %s: scaling group %s missing at revision %s", w.pcs.Name, name, t.SetRevision)
	}
	var members []v1alpha1.PodCliqueTemplateSpec
	for _, n := range at.CliqueNames {
		if c := tmpl.Clique(n); c != nil {
			m := *c.DeepCopy()
			m.UpdateStrategy = nil
			members = append(members, m)
		}
	}
	minAvailable := live.EffectiveMinAvailable()
	desired := v1alpha1.PodCliqueScalingGroupSpec{
		Replicas:        live.Replicas,
		MinAvailable:    &minAvailable,
		MinReadySeconds: w.spec.MinReadySeconds,
		Revision:        t.SetRevision,
		UpdateStrategy:  strategy(t, live.UpdateStrategy, w.currentRevisionName(name, t.CurrentRevision, t)),
		Cliques:         members,
	}
	if w.baseGang != "" {
		desired.Gang = &v1alpha1.ScalingGroupGang{BasePodGroupName: w.baseGang, BaseScheduled: w.baseScheduled}
	}
	if existing == nil {
		g := &v1alpha1.PodCliqueScalingGroup{
			ObjectMeta: metav1.ObjectMeta{
				Name: naming.ScalingGroup(w.pcs.Name, int(w.replica), name), Namespace: w.pcs.Namespace,
				Labels:          w.labels(map[string]string{v1alpha1.LabelPodCliqueScalingGroup: name}, t.SetRevision),
				Annotations:     map[string]string{annotationTemplateReplicas: strconv.Itoa(int(live.Replicas))},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(w.pcs, v1alpha1.GroupVersion.WithKind("PodCliqueSet"))},
			},
			Spec: desired,
		}
		if err := w.r.Client.Create(ctx, g); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodCliqueScalingGroup %s: %w", g.Name, err)
		}
		return nil
	}
	desired.Replicas = scaledReplicas(existing, existing.Spec.Replicas, live.Replicas)
	if apiequality.Semantic.DeepEqual(desired, existing.Spec) && existing.Annotations[annotationTemplateReplicas] == strconv.Itoa(int(live.Replicas)) {
		return nil
	}
	patch := client.MergeFromWithOptions(existing.DeepCopy(), client.MergeFromWithOptimisticLock{})
	existing.Spec = desired
	setAnnotation(existing, annotationTemplateReplicas, strconv.Itoa(int(live.Replicas)))
	if err := w.r.Client.Patch(ctx, existing, patch); err != nil {
		return fmt.Errorf("updating PodCliqueScalingGroup %s: %w", existing.Name, err)
	}
	return nil
}

// scaledReplicas keeps a child's replicas when only its /scale changed them, and
// takes the template's when the template changed.
func scaledReplicas(o client.Object, current, template int32) int32 {
	if o.GetAnnotations()[annotationTemplateReplicas] == strconv.Itoa(int(template)) {
		return current
	}
	return template
}

func setAnnotation(o client.Object, k, v string) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	o.SetAnnotations(a)
}

func groupConfig(t *v1alpha1.PodCliqueSetTemplateSpec, name string) *v1alpha1.PodCliqueScalingGroupConfig {
	for i := range t.PodCliqueScalingGroups {
		if t.PodCliqueScalingGroups[i].Name == name {
			return &t.PodCliqueScalingGroups[i]
		}
	}
	return nil
}
