package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// annotationTemplateReplicas remembers the replicas the PodCliqueSet last wrote
// into a child from its template (see rollout.ChildReplicas).
const annotationTemplateReplicas = "lockstep.dev/template-replicas"

// deleteReplicas removes the PodCliqueSet replicas the plan deletes: every
// child of each, then their pods, in one step (write.Remove).
func (r *Reconciler) deleteReplicas(ctx context.Context, pcs *v1alpha1.PodCliqueSet, plan rollout.SetPlan, ch children) error {
	for _, d := range plan.Deletes {
		deleted := false
		if err := write.Remove(ctx, r.Client, ch.all[d.Index], ch.pods[d.Index], func(client.Object) { deleted = true }); err != nil {
			return fmt.Errorf("deleting replica %d: %w", d.Index, err)
		}
		if deleted {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "DeletedReplica", "Delete", "Deleted replica %d: %s", d.Index, d.Reason)
		}
	}
	return nil
}

// replicaGang is the base gang of one replica and how it stands.
type replicaGang struct {
	replica int32
	name    string
	status  gang.Status
}

// syncGangs keeps one base gang per live replica and reports how each stands;
// nil when the backend places no gangs.
func (r *Reconciler) syncGangs(ctx context.Context, pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec, plan rollout.SetPlan) ([]replicaGang, error) {
	withSpec := pcs.DeepCopy()
	withSpec.Spec = *spec
	var want []gang.Gang
	for _, rp := range plan.Replicas {
		want = append(want, gang.BaseGang(withSpec, int(rp.Index)))
	}
	if err := r.Gangs.SyncGangs(ctx, pcs, want); err != nil {
		return nil, fmt.Errorf("syncing the gangs of %s: %w", pcs.Name, err)
	}
	if !r.Gangs.PlacesGangs() {
		return nil, nil
	}
	gangs := make([]replicaGang, 0, len(want))
	for i, rp := range plan.Replicas {
		st, err := r.Gangs.GangStatus(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: want[i].Name})
		if err != nil {
			return nil, err
		}
		gangs = append(gangs, replicaGang{replica: rp.Index, name: want[i].Name, status: st})
	}
	return gangs, nil
}

// servicesWanted are the live replicas that need a headless Service: those
// whose template has a clique with peerDNS Replica (so that a replica's first
// pods find a name), and those that still run a pod with a subdomain (one made
// before peerDNS turned None keeps its name until it is replaced).
func servicesWanted(plan rollout.SetPlan, t *v1alpha1.PodCliqueSetTemplateSpec, pods map[int32][]*corev1.Pod) map[int32]bool {
	resolvable := false
	for i := range t.Cliques {
		resolvable = resolvable || t.Cliques[i].PeerDNS.Resolvable()
	}
	want := map[int32]bool{}
	for _, rp := range plan.Replicas {
		want[rp.Index] = resolvable || slices.ContainsFunc(pods[rp.Index], func(p *corev1.Pod) bool { return p.Spec.Subdomain != "" })
	}
	return want
}

// syncServices keeps a headless Service for each replica in want that is true
// (pods resolve as <pod>.<pcs>-<replica>) and removes the others.
func (r *Reconciler) syncServices(ctx context.Context, pcs *v1alpha1.PodCliqueSet, want map[int32]bool, mayCreate func() (bool, error)) error {
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
		if !want[idx] {
			if err := r.Client.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting Service %s: %w", svc.Name, err)
			}
		}
	}
	for idx, w := range want {
		if !w || have[idx] {
			continue
		}
		if ok, err := mayCreate(); !ok || err != nil {
			return err
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
		if err := r.Client.Create(ctx, svc); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating Service %s: %w", svc.Name, err)
		}
	}
	return nil
}

// writeChildren creates or updates every child of every live replica to run
// the target the plan gives it.
func (r *Reconciler) writeChildren(ctx context.Context, pcs *v1alpha1.PodCliqueSet, spec *v1alpha1.PodCliqueSetSpec, revs rollout.Revisions,
	tmpls templates, plan rollout.SetPlan, ch children, gangs []replicaGang, mayCreate func() (bool, error)) error {
	surge, deleted := map[int32]bool{}, map[int32]bool{}
	for _, c := range plan.Creates {
		surge[c.Index] = c.Surge
		what := "replica"
		if c.Surge {
			what = "surge replica"
		}
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "CreatingReplica", "Create", "Creating %s %d (revision %s)", what, c.Index, c.Revision)
	}
	for _, d := range plan.Deletes {
		deleted[d.Index] = true
	}
	baseGang := map[int32]replicaGang{}
	for _, g := range gangs {
		baseGang[g.replica] = g
	}
	for _, rp := range plan.Replicas {
		if deleted[rp.Index] {
			continue // its children were just deleted: writing them again would race the deletion
		}
		e := childEncoder{pcs: pcs, spec: spec, revs: revs, tmpls: tmpls, replica: rp.Index, surge: surge[rp.Index]}
		if g, ok := baseGang[rp.Index]; ok {
			e.baseGang, e.baseScheduled = g.name, g.status.Scheduled
		}
		for _, ct := range rp.Cliques {
			if ct.Target == nil {
				continue
			}
			existing := ch.cliques[rp.Index][ct.Role]
			if ok, err := creating(existing == nil, mayCreate); !ok || err != nil {
				return err
			}
			desired, err := e.clique(ct.Role, *ct.Target, existing)
			if err != nil {
				return err
			}
			if err := write.CreateOrPatch(ctx, r.Client, existing, desired, mergeClique); err != nil {
				return err
			}
		}
		for _, ct := range rp.Groups {
			if ct.Target == nil {
				continue
			}
			existing := ch.groups[rp.Index][ct.Role]
			if ok, err := creating(existing == nil, mayCreate); !ok || err != nil {
				return err
			}
			desired, err := e.group(ct.Role, *ct.Target, existing)
			if err != nil {
				return err
			}
			if err := write.CreateOrPatch(ctx, r.Client, existing, desired, mergeGroup); err != nil {
				return err
			}
		}
	}
	return nil
}

// creating reports whether a write may go ahead: always for a child that
// exists, after mayCreate for one it would create.
func creating(create bool, mayCreate func() (bool, error)) (bool, error) {
	if !create {
		return true, nil
	}
	return mayCreate()
}

// mergeClique and mergeGroup carry what the PodCliqueSet owns of a child into
// the live object: its spec and the template-replicas annotation.
func mergeClique(cur, want *v1alpha1.PodClique) {
	cur.Spec = want.Spec
	setAnnotation(cur, annotationTemplateReplicas, want.Annotations[annotationTemplateReplicas])
}

func mergeGroup(cur, want *v1alpha1.PodCliqueScalingGroup) {
	cur.Spec = want.Spec
	setAnnotation(cur, annotationTemplateReplicas, want.Annotations[annotationTemplateReplicas])
}

func replicaLabels(pcs *v1alpha1.PodCliqueSet, idx int32) map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy:                v1alpha1.ManagedByValue,
		v1alpha1.LabelPodCliqueSet:             pcs.Name,
		v1alpha1.LabelPodCliqueSetReplicaIndex: strconv.Itoa(int(idx)),
	}
}

func setAnnotation(o client.Object, k, v string) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	o.SetAnnotations(a)
}
