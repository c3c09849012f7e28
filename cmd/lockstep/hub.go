package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/config"
	"github.com/lockstep-dev/lockstep/internal/devwebhook"
	"github.com/lockstep-dev/lockstep/internal/hub"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	fleetwebhook "github.com/lockstep-dev/lockstep/internal/webhook/fleet"
)

// hubDevWebhookConfig names the hub's webhook configuration in dev mode; it
// differs from the operator's so both can run against one cluster.
const hubDevWebhookConfig = "lockstep-fleet-dev"

// hubOptions are the hub's flags.
type hubOptions struct {
	kubeconfig           string
	apiQPS               float64
	apiBurst             int
	metricsAddr          string
	probeAddr            string
	leaderElect          bool
	leaderElectionNS     string
	webhookPort          int
	webhookCertDir       string
	devWebhooks          bool
	devWebhookHost       string
	certNamespace        string
	certSecret           string
	webhookService       string
	validatingConfigName string
	probeInterval        time.Duration
	probeTimeout         time.Duration
	zap                  zap.Options
}

func newHubCommand() *cobra.Command {
	o := hubOptions{}
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the fleet controllers on a hub cluster (MemberClusters, Placements) and their admission webhooks",
		RunE: func(*cobra.Command, []string) error {
			return runHub(&o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the hub's kubeconfig; in-cluster configuration or $KUBECONFIG when empty.")
	f.Float64Var(&o.apiQPS, "kube-api-qps", 50, "Requests per second the hub may send to the hub's API server.")
	f.IntVar(&o.apiBurst, "kube-api-burst", 100, "Burst of requests above --kube-api-qps.")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8090", "Address the Prometheus metrics endpoint listens on; 0 disables it.")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8091", "Address the /healthz and /readyz probes listen on.")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one hub replica reconciles at a time.")
	f.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (defaults to the pod's namespace).")
	f.IntVar(&o.webhookPort, "webhook-port", 9444, "Port the admission webhooks are served on.")
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "lockstep-hub-webhook-certs"), "Directory of the webhook serving certificate (tls.crt, tls.key).")
	f.BoolVar(&o.devWebhooks, "dev-webhooks", false, "Local development: generate a self-signed certificate and register a webhook configuration ("+hubDevWebhookConfig+") that points the hub's apiserver at this host process.")
	f.StringVar(&o.devWebhookHost, "dev-webhook-host", "127.0.0.1", "With --dev-webhooks: the address the apiserver reaches this process on.")
	f.StringVar(&o.certNamespace, "cert-namespace", "lockstep-fleet", "In-cluster: namespace of the webhook certificate Secret.")
	f.StringVar(&o.certSecret, "cert-secret", "lockstep-hub-webhook-server-cert", "In-cluster: name of the webhook certificate Secret the rotator keeps fresh; empty disables the rotator.")
	f.StringVar(&o.webhookService, "webhook-service", "lockstep-hub-webhook-service", "In-cluster: name of the webhook Service (in --cert-namespace).")
	f.StringVar(&o.validatingConfigName, "validating-webhook-configuration", "lockstep-fleet-validating-webhook-configuration", "In-cluster: the ValidatingWebhookConfiguration the rotator injects the CA into.")
	f.DurationVar(&o.probeInterval, "member-probe-interval", membercluster.DefaultProbeInterval, "How often each member cluster is probed (/readyz and discovery).")
	f.DurationVar(&o.probeTimeout, "member-probe-timeout", membercluster.DefaultProbeTimeout, "Timeout of each request of a member probe.")
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(zapFlags)
	f.AddGoFlagSet(zapFlags)
	return cmd
}

func runHub(o *hubOptions) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	log := ctrl.Log.WithName("setup")

	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(fleetv1alpha1.AddToScheme(scheme))
	// Members run workloads: their clients know the built-in kinds and Lockstep's.
	memberScheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(memberScheme))
	utilruntime.Must(v1alpha1.AddToScheme(memberScheme))

	if o.devWebhooks {
		if err := devwebhook.WriteServingCert(o.webhookCertDir, o.devWebhookHost); err != nil {
			return err
		}
	}
	disableHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "hub.fleet.lockstep.dev",
		LeaderElectionNamespace: o.leaderElectionNS,
		WebhookServer: webhook.NewServer(webhook.Options{
			Port:    o.webhookPort,
			CertDir: o.webhookCertDir,
			TLSOpts: []func(*tls.Config){disableHTTP2},
		}),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	reg := members.NewRegistry(memberScheme, ctrl.Log.WithName("members"))
	if err := hub.Setup(mgr, reg, hub.Options{ProbeInterval: o.probeInterval, ProbeTimeout: o.probeTimeout}); err != nil {
		return err
	}

	certsReady := make(chan struct{})
	switch {
	case o.devWebhooks:
		if err := mgr.Add(devwebhook.Registrar{
			Client: mgr.GetAPIReader(), Writer: mgr.GetClient(),
			CertDir: o.webhookCertDir, URL: fmt.Sprintf("https://%s:%d", o.devWebhookHost, o.webhookPort),
			Manifests: config.FleetWebhookManifests, Name: hubDevWebhookConfig,
		}); err != nil {
			return err
		}
		close(certsReady)
	case o.certSecret != "":
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: o.certNamespace, Name: o.certSecret},
			CertDir:        o.webhookCertDir,
			CAName:         "lockstep-hub-ca",
			CAOrganization: "lockstep",
			DNSName:        fmt.Sprintf("%s.%s.svc", o.webhookService, o.certNamespace),
			IsReady:        certsReady,
			Webhooks: []rotator.WebhookInfo{
				{Name: o.validatingConfigName, Type: rotator.Validating},
			},
			RequireLeaderElection: false,
		}); err != nil {
			return fmt.Errorf("adding the certificate rotator: %w", err)
		}
	default:
		close(certsReady) // certificates are provided in --webhook-cert-dir.
	}

	// Webhooks are registered once certificates exist, so the server never starts
	// without them.
	setupErr := make(chan error, 1)
	go func() {
		<-certsReady
		setupErr <- fleetwebhook.Setup(mgr)
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

	ctx := ctrl.SetupSignalHandler()
	go func() {
		if err := <-setupErr; err != nil {
			log.Error(err, "setting up webhooks")
			os.Exit(1)
		}
	}()
	log.Info("starting hub", "devWebhooks", o.devWebhooks, "leaderElection", o.leaderElect,
		"probeInterval", o.probeInterval, "probeTimeout", o.probeTimeout)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
