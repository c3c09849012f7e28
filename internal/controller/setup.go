package controller

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/gang"
	lockstepmetrics "github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
	"github.com/lockstep-dev/lockstep/internal/rollout"

	"github.com/lockstep-dev/lockstep/internal/controller/podclique"
	"github.com/lockstep-dev/lockstep/internal/controller/podcliquescalinggroup"
	"github.com/lockstep-dev/lockstep/internal/controller/podcliqueset"
	"github.com/lockstep-dev/lockstep/internal/controlloop/expectations"
	"github.com/lockstep-dev/lockstep/internal/controlloop/narrate"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
)

// Setup builds every Lockstep reconciler, with all its fields set, and
// registers it with the manager; gangs places pods in gangs (gang.None{} for
// plain pods); analyses measures gates' analyses (nil: it may call no
// server).
func Setup(mgr ctrl.Manager, gangs gang.Backend, analyses *analysis.Measurer) error {
	if analyses == nil {
		analyses = &analysis.Measurer{}
	}
	if err := pods.AddIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	rollouts := lockstepmetrics.NewRollouts(crmetrics.Registry)
	batch := &write.Batch{}
	if err := lockstepmetrics.RegisterState(crmetrics.Registry, lockstepmetrics.NewState(mgr.GetClient(), lockstepmetrics.LeaderOnly(mgr.Elected()), time.Now)); err != nil {
		return fmt.Errorf("registering the PodCliqueSet state metrics: %w", err)
	}
	if err := (&podcliqueset.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  narrate.Recorder(mgr.GetEventRecorder("lockstep-podcliqueset"), mgr.GetLogger().WithName("podcliqueset")),
		Gangs:     gangs,
		Metrics:   rollouts,
		Now:       time.Now,
		Batch:     batch,
		Analysis:  analyses,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodCliqueSet controller: %w", err)
	}
	if err := (&podclique.Reconciler{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Recorder:     narrate.Recorder(mgr.GetEventRecorder("lockstep-podclique"), mgr.GetLogger().WithName("podclique")),
		Expectations: expectations.New[rollout.Unit](time.Now),
		Now:          time.Now,
		Batch:        batch,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodClique controller: %w", err)
	}
	if err := (&podcliquescalinggroup.Reconciler{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Recorder:     narrate.Recorder(mgr.GetEventRecorder("lockstep-podcliquescalinggroup"), mgr.GetLogger().WithName("podcliquescalinggroup")),
		Expectations: expectations.New[rollout.GroupReplicaObservation](time.Now),
		Gangs:        gangs,
		Now:          time.Now,
		Batch:        batch,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodCliqueScalingGroup controller: %w", err)
	}
	return nil
}
