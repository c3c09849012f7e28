// Package podcliquescalinggroup reconciles PodCliqueScalingGroups: each group
// replica is a set of member PodCliques (a leader and its workers, say) created,
// replaced and removed as one unit, as the planner decides.
package podcliquescalinggroup

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
	"github.com/lockstep-dev/lockstep/internal/controlloop/narrate"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/gang"
	"github.com/lockstep-dev/lockstep/internal/observe/groupreplicas"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/rollout"
)

// Reconciler reconciles one PodCliqueScalingGroup at a time.
type Reconciler struct {
	Client client.Client
	// APIReader reads the group past the cache before member PodCliques are
	// created (fresh.MayCreate).
	APIReader    client.Reader
	Recorder     events.EventRecorder
	Expectations *expectations.Store[rollout.GroupReplicaObservation]
	// Gangs makes the gangs of group replicas above minAvailable.
	Gangs gang.Backend
	Now   func() time.Time
	// Batch holds back progress-only status changes; nil holds nothing back.
	Batch *write.Batch
}

func (r *Reconciler) reconcile(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup) (ctrl.Result, error) {
	now := r.Now()
	templates, err := r.templates(ctx, g)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs, err := r.observe(ctx, g, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.repairIncomplete(ctx, g, &obs, templates); err != nil {
		return ctrl.Result{}, err
	}
	minimums := groupreplicas.Minimums(g)
	units := rollout.GroupUnits(minimums, obs.Replicas)
	policy := childSpec(g).Policy(rollout.KindGroup, templates.update.hash, templates.current.hash)
	plan, err := rollout.PlanLevel(policy, units)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("planning PodCliqueScalingGroup %s: %w", client.ObjectKeyFromObject(g), err)
	}
	narrate.Plan(ctx, func() []any { return append(plan.Summary(), rollout.Inputs(policy, units)...) })
	if err := r.syncScaledGangs(ctx, g, plan, obs); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.apply(ctx, g, plan, obs, templates); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.syncGangGates(ctx, g, obs); err != nil {
		return ctrl.Result{}, err
	}
	facts := rollout.ChildFacts{Kind: rollout.KindGroup, Replicas: g.Spec.Replicas, MinAvailable: g.Spec.EffectiveMinAvailable(),
		Strategy: g.Spec.UpdateStrategy, UpdateRevision: templates.update.hash, SelectorLabels: selector(g)}
	// The group's status says no more than its member PodCliques' own statuses
	// do (rollout.Report); the plan above went by the pods.
	ls := rollout.ConfirmedByMembers(policy, minimums, obs.Replicas, plan.Status)
	statusWait, err := write.ChildStatus(ctx, r.Client, g, facts, ls, now, r.Batch)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: pods.Sooner(obs.NextAvailableIn, statusWait)}, nil
}

// childSpec is the part of the spec the owner writes to steer the update.
func childSpec(g *v1alpha1.PodCliqueScalingGroup) rollout.ChildSpec {
	return rollout.ChildSpec{Replicas: g.Spec.Replicas, Revision: g.Spec.Revision, UpdateStrategy: g.Spec.UpdateStrategy}
}

// syncScaledGangs makes a gang for every group replica at or above minAvailable,
// existing or about to be created, before any of its pods exist.
func (r *Reconciler) syncScaledGangs(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup, plan rollout.LevelPlan, obs groupreplicas.Observation) error {
	var indices []int32
	for _, rep := range obs.Replicas {
		if !rep.Terminating {
			indices = append(indices, rep.Index)
		}
	}
	for _, c := range plan.Creates {
		indices = append(indices, c.Index)
	}
	if err := r.Gangs.SyncGangs(ctx, g, gang.ScaledGangs(g, indices)); err != nil {
		return fmt.Errorf("syncing the gangs of %s: %w", g.Name, err)
	}
	return nil
}

// groupTemplate is one shape of a group replica: the member cliques and the hash
// of that shape.
type groupTemplate struct {
	cliques     []v1alpha1.PodCliqueTemplateSpec
	hash        string
	setRevision string
}

type groupTemplates struct{ update, current groupTemplate }

func (t groupTemplates) forHash(h string) (groupTemplate, bool) {
	switch h {
	case t.update.hash:
		return t.update, true
	case t.current.hash:
		return t.current, true
	}
	return groupTemplate{}, false
}

// templates are the shape the group moves to (its spec) and the shape held-back
// replicas are recreated with (the current revision's).
func (r *Reconciler) templates(ctx context.Context, g *v1alpha1.PodCliqueScalingGroup) (groupTemplates, error) {
	h, err := revision.GroupHashOf(g.Spec.Cliques)
	if err != nil {
		return groupTemplates{}, err
	}
	update := groupTemplate{cliques: g.Spec.Cliques, hash: h, setRevision: g.Spec.Revision}
	cur := g.Spec.UpdateStrategy.CurrentRevision
	if cur == "" || cur == g.Spec.Revision {
		return groupTemplates{update: update, current: update}, nil
	}
	var cr appsv1.ControllerRevision
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: g.Namespace, Name: cur}, &cr); err != nil {
		return groupTemplates{}, fmt.Errorf("reading revision %s for PodCliqueScalingGroup %s: %w", cur, g.Name, err)
	}
	rev, t, err := revision.Decode(&cr)
	if err != nil {
		return groupTemplates{}, err
	}
	name := g.Labels[v1alpha1.LabelPodCliqueScalingGroup]
	cfg := t.ScalingGroup(name)
	if cfg == nil {
		return groupTemplates{}, fmt.Errorf("revision %s has no scaling group %s", cur, name)
	}
	cliques := t.Members(cfg)
	curHash, ok := rev.Role(name)
	if !ok {
		return groupTemplates{}, fmt.Errorf("revision %s has no hash for scaling group %s", cur, name)
	}
	return groupTemplates{update: update, current: groupTemplate{cliques: cliques, hash: curHash, setRevision: cur}}, nil
}
