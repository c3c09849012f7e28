package main

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lockstep-dev/lockstep/internal/controlloop/workqueue"
	"github.com/lockstep-dev/lockstep/internal/devwebhook"
	lockstepmetrics "github.com/lockstep-dev/lockstep/internal/metrics"
	"github.com/lockstep-dev/lockstep/internal/observe/pods"
)

// managerOptions are the flags of every command that runs a manager (the
// operator, the hub): the API connection, metrics, probes, leader election,
// the webhook server and its certificates, and logging.
type managerOptions struct {
	kubeconfig       string
	apiQPS           float64
	apiBurst         int
	metricsAddr      string
	probeAddr        string
	pprofAddr        string
	leaderElect      bool
	leaderElectionNS string
	webhookPort      int
	webhookCertDir   string
	devWebhooks      bool
	devWebhookHost   string
	certNamespace    string
	certSecret       string
	webhookService   string
	concurrency      int
	log              logOptions
	// cacheByObject is added to the cache's per-type settings (the hub keeps
	// Secrets of its fleet namespace only). Not a flag.
	cacheByObject map[client.Object]cache.ByObject
}

// managerDefaults are what differs between the commands, so that an operator
// and a hub can run side by side on one host.
type managerDefaults struct {
	what                               string // "operator", "hub"
	metricsAddr, probeAddr             string
	webhookPort                        int
	certDir                            string
	certNamespace, certSecret, service string
}

func (o *managerOptions) bind(f *pflag.FlagSet, d managerDefaults) {
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; in-cluster configuration or $KUBECONFIG when empty.")
	f.Float64Var(&o.apiQPS, "kube-api-qps", 50, "Requests per second the "+d.what+" may send to the API server.")
	f.IntVar(&o.apiBurst, "kube-api-burst", 100, "Burst of requests above --kube-api-qps the "+d.what+" may send.")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", d.metricsAddr, "Address the Prometheus metrics endpoint listens on; 0 disables it.")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", d.probeAddr, "Address the /healthz and /readyz probes listen on.")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address Go's profiler (/debug/pprof) listens on, for measuring where the "+d.what+"'s CPU and memory go; empty (the default) disables it. It serves without authentication: bind it to localhost.")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one "+d.what+" replica reconciles at a time.")
	f.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (defaults to the pod's namespace).")
	f.IntVar(&o.webhookPort, "webhook-port", d.webhookPort, "Port the admission webhooks are served on.")
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), d.certDir), "Directory of the webhook serving certificate (tls.crt, tls.key).")
	f.BoolVar(&o.devWebhooks, "dev-webhooks", false, "Local development: generate a self-signed certificate and register webhook configurations that point the apiserver at this host process.")
	f.StringVar(&o.devWebhookHost, "dev-webhook-host", "127.0.0.1", "With --dev-webhooks: the address the apiserver reaches this process on.")
	f.StringVar(&o.certNamespace, "cert-namespace", d.certNamespace, "In-cluster: namespace of the webhook certificate Secret.")
	f.StringVar(&o.certSecret, "cert-secret", d.certSecret, "In-cluster: name of the webhook certificate Secret the rotator keeps fresh; empty disables the rotator.")
	f.StringVar(&o.webhookService, "webhook-service", d.service, "In-cluster: name of the webhook Service (in --cert-namespace).")
	f.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "Objects each controller reconciles at once (never the same object twice at once).")
	o.log.bind(f)
}

// newManager sets the logger and builds a manager for scheme: the API
// connection paced by --kube-api-qps/--kube-api-burst, metrics, probes, leader
// election under leaseID, and an HTTP/1.1 webhook server (it is exposed to the
// apiserver only, and HTTP/1.1 avoids the rapid-reset class of problems).
func (o *managerOptions) newManager(scheme *runtime.Scheme, leaseID string) (ctrl.Manager, *rest.Config, error) {
	logger, err := o.log.logger()
	if err != nil {
		return nil, nil, err
	}
	ctrl.SetLogger(logger)
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	// Rollouts write many objects at once; client-go's default of 5 per second
	// (what a bare kubeconfig gets) would pace them, not the planner.
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	lockstepmetrics.RegisterClientLatency(crmetrics.Registry)
	if o.devWebhooks {
		if err := devwebhook.WriteServingCert(o.webhookCertDir, o.devWebhookHost); err != nil {
			return nil, nil, err
		}
	}
	disableHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	if o.concurrency < 1 {
		return nil, nil, fmt.Errorf("--max-concurrent-reconciles %d: must be at least 1", o.concurrency)
	}
	// Nothing reads managedFields: the cache does not keep them; it keeps only
	// the pods Lockstep made, and of them only what the controllers read
	// (pods.Cache).
	byObject := map[client.Object]cache.ByObject{&corev1.Pod{}: pods.Cache()}
	maps.Copy(byObject, o.cacheByObject)
	controllerConfig := workqueue.Controller()
	controllerConfig.MaxConcurrentReconciles = o.concurrency
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: byObject},
		Controller:              controllerConfig,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaseID,
		LeaderElectionNamespace: o.leaderElectionNS,
		WebhookServer: webhook.NewServer(webhook.Options{
			Port:    o.webhookPort,
			CertDir: o.webhookCertDir,
			TLSOpts: []func(*tls.Config){disableHTTP2},
		}),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, cfg, nil
}

// webhookServing is how a command's webhooks get their certificates and are
// registered.
type webhookServing struct {
	// dev registers the webhook configurations for --dev-webhooks.
	dev devwebhook.Registrar
	// caName and configurations are for the in-cluster certificate rotator.
	caName         string
	configurations []rotator.WebhookInfo
	// setup registers the webhooks with the manager's server.
	setup func(ctrl.Manager) error
}

// serve wires certificates (dev, the rotator, or given in --webhook-cert-dir),
// registers the webhooks once certificates exist (so the server never starts
// without them), adds the health and ready checks, and runs the manager.
func (o *managerOptions) serve(mgr ctrl.Manager, w webhookServing, starting string, kv ...any) error {
	certsReady := make(chan struct{})
	switch {
	case o.devWebhooks:
		w.dev.Client, w.dev.Writer = mgr.GetAPIReader(), mgr.GetClient()
		w.dev.CertDir, w.dev.URL = o.webhookCertDir, fmt.Sprintf("https://%s:%d", o.devWebhookHost, o.webhookPort)
		if err := mgr.Add(w.dev); err != nil {
			return err
		}
		close(certsReady)
	case o.certSecret != "":
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:             types.NamespacedName{Namespace: o.certNamespace, Name: o.certSecret},
			CertDir:               o.webhookCertDir,
			CAName:                w.caName,
			CAOrganization:        "lockstep",
			DNSName:               fmt.Sprintf("%s.%s.svc", o.webhookService, o.certNamespace),
			IsReady:               certsReady,
			Webhooks:              w.configurations,
			RequireLeaderElection: false,
		}); err != nil {
			return fmt.Errorf("adding the certificate rotator: %w", err)
		}
	default:
		close(certsReady) // certificates are provided in --webhook-cert-dir.
	}
	setupErr := make(chan error, 1)
	go func() {
		<-certsReady
		setupErr <- w.setup(mgr)
	}()
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhooks", func(req *http.Request) error {
		select {
		case <-certsReady:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return fmt.Errorf("webhook certificates not ready")
		}
	}); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	log := ctrl.Log.WithName("setup")
	ctx := ctrl.SetupSignalHandler()
	go func() {
		if err := <-setupErr; err != nil {
			log.Error(err, "setting up webhooks")
			os.Exit(1)
		}
	}()
	log.Info(starting, append(kv, "devWebhooks", o.devWebhooks, "leaderElection", o.leaderElect)...)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
