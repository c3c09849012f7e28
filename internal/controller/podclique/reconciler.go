// Package podclique reconciles PodCliques: it keeps a clique's pods at stable
// indices and moves them to the template its owner wrote into the spec, as far
// as the owner allows, by asking the planner what to create and delete next.
package podclique

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
	"github.com/lockstep-dev/lockstep/internal/controlloop/narrate"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	podutil "github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Reconciler reconciles one PodClique at a time: observe, plan, apply.
type Reconciler struct {
	Client client.Client
	// APIReader reads the PodClique past the cache before its pods are
	// created (fresh.MayCreate).
	APIReader    client.Reader
	Recorder     events.EventRecorder
	Expectations *expectations.Store[rollout.Unit]
	// Now is the clock; required (Setup passes time.Now, tests their own).
	Now func() time.Time
	// Batch holds back progress-only status changes; nil holds nothing back.
	Batch *write.Batch
}

func (r *Reconciler) reconcile(ctx context.Context, pclq *v1alpha1.PodClique) (ctrl.Result, error) {
	now := r.Now()
	templates, err := r.templates(ctx, pclq)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := r.ownedPods(ctx, pclq)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs := r.observe(pclq, pods, now)
	policy := childSpec(pclq).Policy(rollout.KindClique, templates.update.hash, templates.current.hash)
	plan, err := rollout.PlanLevel(policy, obs.units)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("planning PodClique %s: %w", client.ObjectKeyFromObject(pclq), err)
	}
	narrate.Plan(ctx, func() []any { return append(plan.Summary(), rollout.Inputs(policy, obs.units)...) })
	if err := r.apply(ctx, pclq, plan, obs, templates); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.releaseGate(ctx, pclq, pods); err != nil {
		return ctrl.Result{}, err
	}
	facts := rollout.ChildFacts{Kind: rollout.KindClique, Replicas: pclq.Spec.Replicas, MinAvailable: pclq.Spec.EffectiveMinAvailable(),
		Strategy: pclq.Spec.UpdateStrategy, UpdateRevision: templates.update.hash,
		SelectorLabels: map[string]string{v1alpha1.LabelPodClique: pclq.Name}}
	statusWait, err := write.ChildStatus(ctx, r.Client, pclq, facts, plan.Status, now, r.Batch)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: podutil.Sooner(obs.nextAvailableIn, statusWait)}, nil
}

// ownedPods lists the pods of a PodClique from the cache.
func (r *Reconciler) ownedPods(ctx context.Context, pclq *v1alpha1.PodClique) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, podutil.OfPodClique(pclq.Namespace, pclq.Name)...); err != nil {
		return nil, fmt.Errorf("listing pods of PodClique %s: %w", pclq.Name, err)
	}
	owned := list.Items[:0]
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, pclq) {
			owned = append(owned, p)
		}
	}
	return owned, nil
}

// childSpec is the part of the spec the owner writes to steer the update.
func childSpec(pclq *v1alpha1.PodClique) rollout.ChildSpec {
	return rollout.ChildSpec{Replicas: pclq.Spec.Replicas, Revision: pclq.Spec.Revision, UpdateStrategy: pclq.Spec.UpdateStrategy}
}
