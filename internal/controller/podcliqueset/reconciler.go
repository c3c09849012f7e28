// Package podcliqueset reconciles PodCliqueSets: it keeps the revision history,
// observes every replica's children, asks the planner what each replica and each
// child should run, and writes that into the children's specs.
package podcliqueset

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/controlloop/fresh"
	"github.com/lockstep-dev/lockstep/internal/controlloop/narrate"
	"github.com/lockstep-dev/lockstep/internal/controlloop/requeue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"
	"github.com/lockstep-dev/lockstep/internal/validation"
)

// Reconciler reconciles one PodCliqueSet at a time: revisions, observe, plan,
// apply, status.
type Reconciler struct {
	Client client.Client
	// APIReader reads the PodCliqueSet past the cache before its children
	// are created (fresh.MayCreate).
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Gangs places each replica's pods in gangs; gang.None{} turns that off.
	Gangs gang.Backend
	// Metrics records rollouts; nil records nothing.
	Metrics *metrics.Rollouts
	Now     func() time.Time
	// Batch holds back progress-only status changes; nil holds nothing back.
	Batch *write.Batch
	// Analysis measures gates' analyses; nil measures nothing.
	Analysis *analysis.Measurer
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return requeue.OnConflict(r.reconcile(ctx, req))
}

// reconcile reads the revisions, observes the children, plans, deletes whole
// replicas, keeps gangs and Services, writes each child's target, writes the
// status and trims the revision history.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pcs := &v1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcs); err != nil {
		if apierrors.IsNotFound(err) && r.Metrics != nil {
			r.Metrics.Forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pcs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Objects written before the webhook ran (or without it) still plan with defaults.
	defaulted := pcs.DeepCopy()
	defaulted.Default()
	spec, now := &defaulted.Spec, r.Now()
	if errs, _ := validation.ValidatePodCliqueSet(defaulted); len(errs) > 0 {
		// It got past admission (the webhook was down or bypassed): say so and
		// touch nothing, so that what runs keeps running.
		return ctrl.Result{}, r.reportInvalid(ctx, pcs, errs)
	}

	if done, err := r.rollback(ctx, pcs, spec); done || err != nil {
		return ctrl.Result{}, err
	}
	revs, tmpls, owned, err := r.syncRevisions(ctx, pcs, spec)
	if err != nil {
		return ctrl.Result{}, err
	}
	children, err := r.observe(ctx, pcs, revs, spec.MinReadySeconds, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := rollout.PlanSet(rollout.SetInput{Spec: spec, Revisions: revs, Replicas: children.replicas, Previous: previousProgress(pcs), Now: now,
		Approved: pcs.Annotations[v1alpha1.AnnotationApprovedRevision], Measured: r.measure(ctx, pcs, spec, revs.Update.Name, now),
		Conditions: pcs.Status.Conditions})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("planning PodCliqueSet %s: %w", req.NamespacedName, err)
	}
	if plan.Status.Rollback {
		// The status of this pass says why; the rollback itself is the
		// annotation's, done on the next pass.
		if err := r.requestRollback(ctx, pcs, plan); err != nil {
			return ctrl.Result{}, err
		}
	}
	narrate.Plan(ctx, func() []any {
		return []any{"createReplicas", len(plan.Creates), "deleteReplicas", len(plan.Deletes),
			"updated", plan.Status.UpdatedReplicas, "available", plan.Status.AvailableReplicas, "complete", plan.Status.Complete,
			"progressing", progressingReason(plan.Status)}
	})
	r.announceRollout(pcs, spec, plan)
	if err := r.deleteReplicas(ctx, pcs, plan, children); err != nil {
		return ctrl.Result{}, err
	}
	gangs, err := r.syncGangs(ctx, pcs, spec, plan)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Read live once, before the first child this pass creates: a cache that
	// shows the PodCliqueSet's deletion late must not make it children again.
	mayCreate := sync.OnceValues(func() (bool, error) {
		return fresh.MayCreate(ctx, r.APIReader, pcs, "the replicas' children")
	})
	if err := r.syncServices(ctx, pcs, servicesWanted(plan, &spec.Template, children.pods), mayCreate); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeChildren(ctx, pcs, spec, revs, tmpls, plan, children, gangs, mayCreate); err != nil {
		return ctrl.Result{}, err
	}
	statusWait, err := r.updateStatus(ctx, pcs, plan, gangs, children.waiting)
	if err != nil {
		return ctrl.Result{}, err
	}
	historyHeld, err := r.trimHistory(ctx, pcs, owned)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: pods.Sooner(requeueAfter(spec, plan, children.nextAvailableIn, historyHeld, now), statusWait)}, nil
}

// historyRetry is how soon to look at a history that children still held.
const historyRetry = 5 * time.Second

// requeueAfter wakes the reconciler for the next time-based change: a pod passing
// minReadySeconds, the progress deadline passing, a gate's soak ending, or a
// look at a revision history that children still held.
func requeueAfter(spec *v1alpha1.PodCliqueSetSpec, plan rollout.SetPlan, nextAvailable time.Duration, historyHeld bool, now time.Time) time.Duration {
	wait := nextAvailable
	p := plan.Status.Progress
	if !plan.Status.Complete && !spec.Paused && p.Gate == nil && spec.ProgressDeadlineSeconds != nil && !p.LastProgressAt.IsZero() && !plan.Status.DeadlineExceeded {
		deadline := p.LastProgressAt.Add(time.Duration(*spec.ProgressDeadlineSeconds)*time.Second + time.Second).Sub(now)
		if deadline > 0 && (wait == 0 || deadline < wait) {
			wait = deadline
		}
	}
	if g := plan.Status.GateRecheckIn; g > 0 && (wait == 0 || g < wait) {
		wait = g
	}
	if historyHeld && (wait == 0 || wait > historyRetry) {
		wait = historyRetry
	}
	return wait
}

func replicaIndex(o client.Object) (int32, bool) {
	return v1alpha1.IndexLabel(o.GetLabels(), v1alpha1.LabelPodCliqueSetReplicaIndex)
}

// progressingReason is the reason of the plan's Progressing condition.
func progressingReason(s rollout.SetStatus) v1alpha1.ConditionReason {
	for _, c := range s.Conditions {
		if c.Type == v1alpha1.ConditionProgressing {
			return c.Reason
		}
	}
	return ""
}
