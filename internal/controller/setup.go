package controller

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lockstep-dev/lockstep/internal/controller/podclique"
	"github.com/lockstep-dev/lockstep/internal/controller/podcliquescalinggroup"
)

// Setup registers every Lockstep reconciler with the manager.
func Setup(mgr ctrl.Manager) error {
	if err := (&podclique.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("lockstep-podclique"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodClique controller: %w", err)
	}
	if err := (&podcliquescalinggroup.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("lockstep-podcliquescalinggroup"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the PodCliqueScalingGroup controller: %w", err)
	}
	return nil
}
