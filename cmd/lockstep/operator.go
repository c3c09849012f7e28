package main

import (
	"fmt"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controller"
	"github.com/lockstep-dev/lockstep/internal/gang"
	lockstepwebhook "github.com/lockstep-dev/lockstep/internal/webhook"
)

// operatorOptions are the operator's flags.
type operatorOptions struct {
	managerOptions
	mutatingConfigName   string
	validatingConfigName string
	gangBackend          string
	analysis             analysisOptions
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
	o.bind(f, managerDefaults{what: "operator", metricsAddr: ":8080", probeAddr: ":8081", webhookPort: 9443,
		certDir: "lockstep-webhook-certs", certNamespace: "lockstep-system", certSecret: "lockstep-webhook-server-cert", service: "lockstep-webhook-service"})
	f.StringVar(&o.mutatingConfigName, "mutating-webhook-configuration", "lockstep-mutating-webhook-configuration", "In-cluster: the MutatingWebhookConfiguration the rotator injects the CA into.")
	f.StringVar(&o.validatingConfigName, "validating-webhook-configuration", "lockstep-validating-webhook-configuration", "In-cluster: the ValidatingWebhookConfiguration the rotator injects the CA into.")
	f.StringVar(&o.gangBackend, "gang-backend", gang.ModeAuto, "Gang scheduling: auto (native when the apiserver serves scheduling.k8s.io/v1alpha2 PodGroups, else none), native or none.")
	o.analysis.bind(f, "operator")
	return cmd
}

func runOperator(o *operatorOptions) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	mgr, cfg, err := o.newManager(scheme, "operator.lockstep.dev")
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	gangs, err := gang.Select(dc, o.gangBackend, gang.Options{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), IndexedPods: true})
	if err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("gang scheduling", "backend", gangs.Name())
	measurer, err := o.analysis.measurer()
	if err != nil {
		return err
	}
	if err := controller.Setup(mgr, gangs, measurer); err != nil {
		return err
	}
	return o.serve(mgr, webhookServing{
		caName: "lockstep-ca",
		configurations: []rotator.WebhookInfo{
			{Name: o.mutatingConfigName, Type: rotator.Mutating},
			{Name: o.validatingConfigName, Type: rotator.Validating},
		},
		setup: lockstepwebhook.Setup,
	}, "starting operator")
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
