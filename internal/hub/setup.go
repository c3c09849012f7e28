// Package hub runs the fleet controllers of a hub cluster: MemberCluster
// probing (with the registry of member connections), Placement decisions, and
// FederatedWorkloads rolled out across the members.
package hub

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/controlloop/narrate"
	"github.com/lockstep-dev/lockstep/internal/hub/clusterset"
	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	"github.com/lockstep-dev/lockstep/internal/hub/placement"
	lockstepmetrics "github.com/lockstep-dev/lockstep/internal/metrics"
)

// Leader election holds a Lease and the certificate rotator keeps the webhook
// certificate Secret, both in the hub's own namespace (--cert-namespace; the
// chart makes these rules a Role of its release namespace). The rotator's
// cache reads webhook configurations; it may write only the hub's own.
// +kubebuilder:rbac:groups="",namespace=lockstep-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=lockstep-system,resources=secrets,resourceNames=lockstep-hub-webhook-server-cert,verbs=update;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=lockstep-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=lockstep-fleet-validating-webhook-configuration,verbs=update;patch

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
	// MemberConcurrency bounds the member calls one round makes at once
	// (federatedworkload.DefaultMemberConcurrency); MaxConcurrentRounds the
	// workloads whose rounds run at once
	// (federatedworkload.DefaultMaxConcurrentRounds).
	MemberConcurrency, MaxConcurrentRounds int
	// FleetNamespace is the only namespace member kubeconfig Secrets are read
	// from (membercluster.DefaultFleetNamespace).
	FleetNamespace string
	// AllowExec lets member kubeconfigs run exec plugins and auth providers
	// and name files on the hub; AllowInsecureTLS lets them turn TLS
	// verification off. Both are off by default: see
	// membercluster.KubeconfigPolicy.
	AllowExec, AllowInsecureTLS bool
	// Analysis measures stage gates' analyses (nil: none is measured).
	Analysis *analysis.Measurer
}

// CacheByObject restricts the hub's cache of Secrets to the fleet namespace.
// The entry is looked up by GroupVersionKind, so it also covers the
// metadata-only informer of the MemberCluster controller's Secret watch.
func CacheByObject(fleetNamespace string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{fleetNamespace: {}}},
	}
}

// Setup registers the hub's controllers with the manager. Members is the
// registry the MemberCluster controller keeps; later controllers read it.
func Setup(mgr ctrl.Manager, reg *members.Registry, o Options) error {
	if err := lockstepmetrics.RegisterState(crmetrics.Registry, lockstepmetrics.NewFleet(mgr.GetClient(), lockstepmetrics.LeaderOnly(mgr.Elected()))); err != nil {
		return fmt.Errorf("registering the fleet state metrics: %w", err)
	}
	if err := (&membercluster.Reconciler{
		Client:           mgr.GetClient(),
		SecretReader:     mgr.GetAPIReader(),
		Members:          reg,
		Recorder:         mgr.GetEventRecorder("lockstep-hub-membercluster"),
		ProbeInterval:    o.ProbeInterval,
		ProbeTimeout:     o.ProbeTimeout,
		FleetNamespace:   o.FleetNamespace,
		AllowExec:        o.AllowExec,
		AllowInsecureTLS: o.AllowInsecureTLS,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the MemberCluster controller: %w", err)
	}
	if err := (&placement.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  narrate.Recorder(mgr.GetEventRecorder("lockstep-hub-placement"), mgr.GetLogger().WithName("placement")),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the Placement controller: %w", err)
	}
	if err := (&clusterset.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: narrate.Recorder(mgr.GetEventRecorder("lockstep-hub-clusterset"), mgr.GetLogger().WithName("clusterset")),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the MemberClusterSet controllers: %w", err)
	}
	// Each member connection watches the objects the hub wrote there: a
	// change runs its workload's round at once.
	events := federatedworkload.NewMemberEvents()
	reg.AddWatcher(events)
	if err := (&federatedworkload.Reconciler{
		Client:              mgr.GetClient(),
		Members:             reg,
		Recorder:            mgr.GetEventRecorder("lockstep-hub-federatedworkload"),
		RolloutPoll:         o.RolloutPoll,
		Resync:              o.Resync,
		MemberConcurrency:   o.MemberConcurrency,
		MaxConcurrentRounds: o.MaxConcurrentRounds,
		MemberEvents:        events,
		Analysis:            o.Analysis,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the FederatedWorkload controller: %w", err)
	}
	return nil
}
