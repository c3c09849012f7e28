package controller

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lockstep-dev/lockstep/internal/gang"
	lockstepmetrics "github.com/lockstep-dev/lockstep/internal/metrics"

	"github.com/lockstep-dev/lockstep/internal/controller/podclique"
	"github.com/lockstep-dev/lockstep/internal/controller/podcliquescalinggroup"
	"github.com/lockstep-dev/lockstep/internal/controller/podcliqueset"
)

// Setup registers every Lockstep reconciler with the manager; gangs places pods
// in gangs (gang.None{} for plain pods).
func Setup(mgr ctrl.Manager, gangs gang.Backend) error {
	rollouts := lockstepmetrics.NewRollouts(crmetrics.Registry)
	if err := (&podcliqueset.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("lockstep-podcliqueset"),
		Gangs:    gangs,
		Metrics:  rollouts,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodCliqueSet controller: %w", err)
	}
	if err := (&podclique.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("lockstep-podclique"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodClique controller: %w", err)
	}
	if err := (&podcliquescalinggroup.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("lockstep-podcliquescalinggroup"),
		Gangs:    gangs,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodCliqueScalingGroup controller: %w", err)
	}
	return nil
}
