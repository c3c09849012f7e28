package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/workqueue"
	fleetwebhook "github.com/lockstep-dev/lockstep/internal/webhook/fleet"
)

// FleetNamespace is the test hub's fleet namespace: its webhooks admit only
// MemberClusters whose kubeconfig Secret is there, and StartHub creates it.
const FleetNamespace = "lockstep-fleet"

// Cluster is a bare control plane (kube-apiserver and etcd) for the fleet's
// tests: a hub with the fleet CRDs, or a member with Lockstep's workload CRDs.
type Cluster struct {
	Config *rest.Config
	// Client is a client.WithWatch with the cluster's scheme and no rate limit.
	Client client.WithWatch
	Scheme *runtime.Scheme

	env    *envtest.Environment
	cancel context.CancelFunc
	done   chan error
}

// StartHub boots a hub: the fleet CRDs installed, the fleet's validating
// webhooks served from this process, and the namespace FleetNamespace.
func StartHub() (*Cluster, error) {
	root := RepoRoot()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	env := newEnvironment(scheme, filepath.Join(root, "config", "fleet", "crd", "bases"))
	env.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "fleet", "webhook")}}
	c, err := start(env, scheme)
	if err != nil {
		return nil, err
	}
	if err := c.serveFleetWebhooks(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FleetNamespace}}
	if err := c.Client.Create(context.Background(), ns); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("creating the fleet namespace: %w", err)
	}
	return c, nil
}

// StartMember boots a member cluster serving Lockstep's workload kinds.
func StartMember() (*Cluster, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return start(newEnvironment(scheme, filepath.Join(RepoRoot(), "config", "crd", "bases")), scheme)
}

func newEnvironment(scheme *runtime.Scheme, crds string) *envtest.Environment {
	env := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        []string{crds},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join(RepoRoot(), "bin")
	}
	return env
}

func start(env *envtest.Environment, scheme *runtime.Scheme) (*Cluster, error) {
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest (run `make tools` to build bin/kube-apiserver and bin/etcd): %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // tests create hundreds of objects; no client-side limit
	c := &Cluster{Config: cfg, Scheme: scheme, env: env}
	if c.Client, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return c, nil
}

// serveFleetWebhooks runs a manager that only serves the fleet's webhooks, and
// waits until the apiserver can reach it.
func (c *Cluster) serveFleetWebhooks() error {
	wo := &c.env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Scheme:                 c.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("creating webhook manager: %w", err)
	}
	if err := fleetwebhook.Setup(mgr, FleetNamespace); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan error, 1)
	go func() { c.done <- mgr.Start(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for mgr.GetWebhookServer().StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server did not start within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// Kubeconfig is a kubeconfig for a new cluster-admin user of this cluster, as a
// hub would keep in a member's Secret. It is data only (the CA, certificate and
// key embedded, TLS verified), as a hub accepts by default.
func (c *Cluster) Kubeconfig(user string) ([]byte, error) {
	u, err := c.env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", user, err)
	}
	return u.KubeConfig()
}

// ManagerOptions are options for a controller manager in tests: no metrics, no
// probes, no webhooks, and a controller name may be registered again by the
// next manager.
func (c *Cluster) ManagerOptions() ctrl.Options {
	skip := true
	o := ctrl.Options{
		Scheme:                 c.Scheme,
		Controller:             workqueue.Controller(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	o.Controller.SkipNameValidation = &skip
	return o
}

// Stop shuts the control plane (and webhook server) down.
func (c *Cluster) Stop() error {
	if c.cancel != nil {
		c.cancel()
		if err := <-c.done; err != nil {
			return err
		}
	}
	return c.env.Stop()
}
