package podclique

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/fresh"
	"github.com/lockstep-dev/lockstep/internal/controlloop/slowstart"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/naming"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// inheritedLabels are the owner's labels every pod carries.
var inheritedLabels = []string{
	v1alpha1.LabelPodCliqueSet, v1alpha1.LabelPodCliqueSetReplicaIndex, v1alpha1.LabelClique,
	v1alpha1.LabelPodCliqueScalingGroup, v1alpha1.LabelPodCliqueScalingGroupReplicaIndex,
}

// newPod builds the pod at index from template t, named name. Its hostname is
// the index's, whatever its name.
func newPod(pclq *v1alpha1.PodClique, c rollout.Create, t podTemplate, name string) *corev1.Pod {
	labels := maps.Clone(t.spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range inheritedLabels {
		if v, ok := pclq.Labels[k]; ok {
			labels[k] = v
		}
	}
	labels[v1alpha1.LabelPodClique] = pclq.Name
	labels[v1alpha1.LabelPodIndex] = strconv.Itoa(int(c.Index))
	v1alpha1.SetUnitLabels(labels, t.hash, t.setRevision, c.Surge)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       pclq.Namespace,
			Labels:          labels,
			Annotations:     maps.Clone(t.spec.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pclq, v1alpha1.GroupVersion.WithKind("PodClique"))},
		},
		Spec: *t.spec.Spec.DeepCopy(),
	}
	// Stable DNS: <pod>.<pcs>-<replica> under the replica's headless Service,
	// unless the clique's peerDNS is None.
	pod.Spec.Hostname, pod.Spec.Subdomain = naming.Pod(pclq.Name, int(c.Index)), ""
	if pcs, ok := pclq.Labels[v1alpha1.LabelPodCliqueSet]; ok && t.peerDNS.Resolvable() {
		if idx, ok := v1alpha1.IndexLabel(pclq.Labels, v1alpha1.LabelPodCliqueSetReplicaIndex); ok {
			pod.Spec.Subdomain = naming.HeadlessService(pcs, int(idx))
		}
	}
	gang.JoinPod(pod, pclq.Spec.Gang)
	return pod
}

// apply carries out a plan: deletes first (they free indices and budget), then
// creates, once a live read (made beside the deletes) shows the PodClique still
// there and not being deleted (fresh.MayCreate: the cache can show its deletion
// late). Both are idempotent: a pod's name follows from its index and the pods observed
// (naming.ReplacementPod), and deletes are conditional on the pod being as it
// was observed (its UID and resourceVersion). The plan judged each pod
// from the cache; a pod that changed since, say one that turned Ready after it
// was taken for failed and so free to replace, must be judged again, not
// deleted: the conflict ends the pass once its batch is done (the other
// deletes of a batch stand: a pod that changed makes none of them less safe)
// and the next pass plans afresh. What it
// did is told in one Event per kind of change (see podEvents), also when it
// stops at an error.
func (r *Reconciler) apply(ctx context.Context, pclq *v1alpha1.PodClique, plan rollout.LevelPlan, obs observation, t revisionTemplates) error {
	var ev podEvents
	defer ev.record(r.Recorder, pclq)
	// Deletes, then creates, each run side by side (slowstart); what was done
	// is told in the plan's order. The live read that guards the creates runs
	// beside the deletes.
	var mayCreate func() (bool, error)
	if len(plan.Creates) > 0 {
		mayCreate = fresh.MayCreateBeside(ctx, r.APIReader, pclq, "pods")
	}
	deleted := make([]*corev1.Pod, len(plan.Deletes))
	_, err := slowstart.Run(len(plan.Deletes), func(i int) error {
		pod := obs.pods[plan.Deletes[i].Key]
		if pod == nil || pod.DeletionTimestamp != nil {
			return nil // an unseen create, or already going
		}
		uid, rv := pod.UID, pod.ResourceVersion
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
		}
		r.Expectations.Deleted(client.ObjectKeyFromObject(pclq), uid)
		deleted[i] = pod
		return nil
	})
	for i, pod := range deleted {
		if pod != nil {
			d := plan.Deletes[i]
			ev.add(pod, "DeletedPod", "Delete", "Deleted", "pod", string(d.Reason),
				fmt.Sprintf("index %d, revision %s", d.Index, pod.Labels[v1alpha1.LabelTemplateHash]))
		}
	}
	if mayCreate == nil {
		return err
	}
	if ok, ferr := mayCreate(); err != nil || ferr != nil || !ok {
		return errors.Join(err, ferr)
	}
	created := make([]*corev1.Pod, len(plan.Creates))
	_, err = slowstart.Run(len(plan.Creates), func(i int) error {
		c := plan.Creates[i]
		tmpl, ok := t.forHash(c.Revision)
		if !ok {
			return fmt.Errorf("PodClique %s: no template for revision %s", pclq.Name, c.Revision)
		}
		name := naming.ReplacementPod(pclq.Name, int(c.Index), obs.uids[c.Index], func(n string) bool { return obs.pods[n] != nil })
		pod := newPod(pclq, c, tmpl, name)
		err := r.Client.Create(ctx, pod)
		if apierrors.IsAlreadyExists(err) {
			return nil // an earlier create the cache has not shown; the pod's own event brings us back
		}
		if err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		r.Expectations.Created(client.ObjectKeyFromObject(pclq), pod.Name,
			rollout.Unit{Index: c.Index, Revision: c.Revision, Surge: c.Surge, CreatedAt: pod.CreationTimestamp.Time, Key: pod.Name})
		created[i] = pod
		return nil
	})
	for i, pod := range created {
		if pod != nil {
			c := plan.Creates[i]
			what := "pod"
			if c.Surge || obs.live[c.Index] {
				what = "surge pod" // above replicas, or beside the pod it replaces
			}
			ev.add(pod, "CreatedPod", "Create", "Created", what, "", fmt.Sprintf("index %d, revision %s", c.Index, c.Revision))
		}
	}
	return err
}

// podEventsListed is how many pods one Event names; the rest are counted.
const podEventsListed = 10

// podEvents gathers the pods one plan created or deleted, so that each kind of
// change (created pods, created surge pods, pods deleted for one reason) is one
// Event: a wide rollout step is one write, not one per pod. A kind with a
// single pod reads as before: "Deleted pod a-1 (index 1, revision r): update".
type podEvents struct {
	groups []*podEventGroup
}

type podEventGroup struct {
	// why is the delete reason ("update", "scale-in", ...), "" for creates.
	reason, action, verb, what, why string
	first                           *corev1.Pod
	pods                            []string
}

func (e *podEvents) add(pod *corev1.Pod, reason, action, verb, what, why, detail string) {
	var g *podEventGroup
	for _, x := range e.groups {
		if x.reason == reason && x.what == what && x.why == why {
			g = x
		}
	}
	if g == nil {
		g = &podEventGroup{reason: reason, action: action, verb: verb, what: what, why: why, first: pod}
		e.groups = append(e.groups, g)
	}
	g.pods = append(g.pods, fmt.Sprintf("%s (%s)", pod.Name, detail))
}

func (e *podEvents) record(rec events.EventRecorder, pclq *v1alpha1.PodClique) {
	for _, g := range e.groups {
		if len(g.pods) == 1 {
			tail := ""
			if g.why != "" {
				tail = ": " + g.why
			}
			rec.Eventf(pclq, g.first, corev1.EventTypeNormal, g.reason, g.action, "%s %s %s%s", g.verb, g.what, g.pods[0], tail)
			continue
		}
		why := ""
		if g.why != "" {
			why = " (" + g.why + ")"
		}
		listed := g.pods[:min(len(g.pods), podEventsListed)]
		more := ""
		if n := len(g.pods) - len(listed); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		rec.Eventf(pclq, nil, corev1.EventTypeNormal, g.reason, g.action, "%s %d %ss%s: %s%s",
			g.verb, len(g.pods), g.what, why, strings.Join(listed, ", "), more)
	}
}

// releaseGate removes the base-gang scheduling gate from pods once the owner has
// cleared it in the spec.
func (r *Reconciler) releaseGate(ctx context.Context, pclq *v1alpha1.PodClique, pods []corev1.Pod) error {
	if g := pclq.Spec.Gang; g != nil && g.Gated {
		return nil
	}
	for i := range pods {
		p := &pods[i]
		kept := p.Spec.SchedulingGates[:0:0]
		for _, g := range p.Spec.SchedulingGates {
			if g.Name != v1alpha1.SchedulingGateBaseGang {
				kept = append(kept, g)
			}
		}
		if len(kept) == len(p.Spec.SchedulingGates) || p.DeletionTimestamp != nil {
			continue
		}
		patch := client.MergeFromWithOptions(p.DeepCopy(), client.MergeFromWithOptimisticLock{})
		p.Spec.SchedulingGates = kept
		if err := r.Client.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing the gang gate of pod %s: %w", p.Name, err)
		}
	}
	return nil
}
