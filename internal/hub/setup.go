// Package hub runs the fleet controllers of a hub cluster: MemberCluster
// probing (with the registry of member connections), Placement decisions, and
// FederatedWorkloads rolled out across the members.
package hub

import (
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	"github.com/lockstep-dev/lockstep/internal/hub/placement"
	lockstepmetrics "github.com/lockstep-dev/lockstep/internal/metrics"
)

// Leader election holds a Lease; the certificate rotator keeps the webhook
// certificate Secret and injects its CA into the webhook configuration.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Options tune the hub's controllers; zero values take the defaults.
type Options struct {
	// ProbeInterval is how often each member is probed
	// (membercluster.DefaultProbeInterval).
	ProbeInterval time.Duration
	// ProbeTimeout bounds each request of a probe
	// (membercluster.DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// RolloutPoll is how often a FederatedWorkload's members are read while it
	// moves (federatedworkload.DefaultRolloutPoll); Resync how often once it is
	// settled (federatedworkload.DefaultResync).
	RolloutPoll, Resync time.Duration
}

// Setup registers the hub's controllers with the manager. Members is the
// registry the MemberCluster controller keeps; later controllers read it.
func Setup(mgr ctrl.Manager, reg *members.Registry, o Options) error {
	if err := lockstepmetrics.RegisterState(crmetrics.Registry, lockstepmetrics.NewFleet(mgr.GetClient(), lockstepmetrics.LeaderOnly(mgr.Elected()))); err != nil {
		return fmt.Errorf("registering the fleet state metrics: %w", err)
	}
	if err := (&membercluster.Reconciler{
		Client:        mgr.GetClient(),
		SecretReader:  mgr.GetAPIReader(),
		Members:       reg,
		Recorder:      mgr.GetEventRecorder("lockstep-hub-membercluster"),
		ProbeInterval: o.ProbeInterval,
		ProbeTimeout:  o.ProbeTimeout,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the MemberCluster controller: %w", err)
	}
	if err := (&placement.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("lockstep-hub-placement"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Placement controller: %w", err)
	}
	if err := (&federatedworkload.Reconciler{
		Client:      mgr.GetClient(),
		Members:     reg,
		Recorder:    mgr.GetEventRecorder("lockstep-hub-federatedworkload"),
		RolloutPoll: o.RolloutPoll,
		Resync:      o.Resync,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the FederatedWorkload controller: %w", err)
	}
	return nil
}
