package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller"
	"github.com/lockstep-dev/lockstep/internal/devwebhook"
	"github.com/lockstep-dev/lockstep/internal/gang"
	lockstepwebhook "github.com/lockstep-dev/lockstep/internal/webhook"
)

// operatorOptions are the operator's flags.
type operatorOptions struct {
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
	mutatingConfigName   string
	validatingConfigName string
	gangBackend          string
	log                  logOptions
}

func newOperatorCommand() *cobra.Command {
	o := operatorOptions{}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the Lockstep operator (controllers and admission webhooks)",
		RunE: func(*cobra.Command, []string) error {
			return runOperator(&o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig; in-cluster configuration or $KUBECONFIG when empty.")
	f.Float64Var(&o.apiQPS, "kube-api-qps", 50, "Requests per second the operator may send to the API server.")
	f.IntVar(&o.apiBurst, "kube-api-burst", 100, "Burst of requests above --kube-api-qps the operator may send.")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint listens on; 0 disables it.")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes listen on.")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "Elect a leader so that only one operator replica reconciles at a time.")
	f.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (defaults to the pod's namespace).")
	f.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhooks are served on.")
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "lockstep-webhook-certs"), "Directory of the webhook serving certificate (tls.crt, tls.key).")
	f.BoolVar(&o.devWebhooks, "dev-webhooks", false, "Local development: generate a self-signed certificate and register webhook configurations that point the apiserver at this host process.")
	f.StringVar(&o.devWebhookHost, "dev-webhook-host", "127.0.0.1", "With --dev-webhooks: the address the apiserver reaches this process on.")
	f.StringVar(&o.certNamespace, "cert-namespace", "lockstep-system", "In-cluster: namespace of the webhook certificate Secret.")
	f.StringVar(&o.certSecret, "cert-secret", "lockstep-webhook-server-cert", "In-cluster: name of the webhook certificate Secret the rotator keeps fresh; empty disables the rotator.")
	f.StringVar(&o.webhookService, "webhook-service", "lockstep-webhook-service", "In-cluster: name of the webhook Service (in --cert-namespace).")
	f.StringVar(&o.mutatingConfigName, "mutating-webhook-configuration", "lockstep-mutating-webhook-configuration", "In-cluster: the MutatingWebhookConfiguration the rotator injects the CA into.")
	f.StringVar(&o.validatingConfigName, "validating-webhook-configuration", "lockstep-validating-webhook-configuration", "In-cluster: the ValidatingWebhookConfiguration the rotator injects the CA into.")
	f.StringVar(&o.gangBackend, "gang-backend", gang.ModeAuto, "Gang scheduling: auto (native when the apiserver serves scheduling.k8s.io/v1alpha2 PodGroups, else none), native or none.")
	o.log.bind(f)
	return cmd
}

func runOperator(o *operatorOptions) error {
	logger, err := o.log.logger()
	if err != nil {
		return err
	}
	ctrl.SetLogger(logger)
	log := ctrl.Log.WithName("setup")

	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	// Rollouts write many objects at once; client-go's default of 5 per second
	// (what a bare kubeconfig gets) would pace them, not the planner.
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))

	if o.devWebhooks {
		if err := devwebhook.WriteServingCert(o.webhookCertDir, o.devWebhookHost); err != nil {
			return err
		}
	}
	// HTTP/2 stays off on the webhook server: it is exposed to the apiserver only
	// and HTTP/1.1 avoids the rapid-reset class of problems.
	disableHTTP2 := func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "operator.lockstep.dev",
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

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	gangs, err := gang.Select(dc, o.gangBackend, gang.Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()})
	if err != nil {
		return err
	}
	log.Info("gang scheduling", "backend", gangs.Name())
	if err := controller.Setup(mgr, gangs); err != nil {
		return err
	}

	certsReady := make(chan struct{})
	switch {
	case o.devWebhooks:
		if err := mgr.Add(devwebhook.Registrar{
			Client: mgr.GetAPIReader(), Writer: mgr.GetClient(),
			CertDir: o.webhookCertDir, URL: fmt.Sprintf("https://%s:%d", o.devWebhookHost, o.webhookPort),
		}); err != nil {
			return err
		}
		close(certsReady)
	case o.certSecret != "":
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: o.certNamespace, Name: o.certSecret},
			CertDir:        o.webhookCertDir,
			CAName:         "lockstep-ca",
			CAOrganization: "lockstep",
			DNSName:        fmt.Sprintf("%s.%s.svc", o.webhookService, o.certNamespace),
			IsReady:        certsReady,
			Webhooks: []rotator.WebhookInfo{
				{Name: o.mutatingConfigName, Type: rotator.Mutating},
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
		setupErr <- lockstepwebhook.Setup(mgr)
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
	log.Info("starting operator", "devWebhooks", o.devWebhooks, "leaderElection", o.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// restConfig loads --kubeconfig when given, else the usual in-cluster or
// $KUBECONFIG configuration.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
