package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/config"
	"github.com/lockstep-dev/lockstep/internal/devwebhook"
	"github.com/lockstep-dev/lockstep/internal/hub"
	"github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/hub/membercluster"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
	fleetwebhook "github.com/lockstep-dev/lockstep/internal/webhook/fleet"
)

// hubDevWebhookConfig names the hub's webhook configuration in dev mode; it
// differs from the operator's so both can run against one cluster.
const hubDevWebhookConfig = "lockstep-fleet-dev"

// hubOptions are the hub's flags.
type hubOptions struct {
	managerOptions
	analysis             analysisOptions
	validatingConfigName string
	probeInterval        time.Duration
	probeTimeout         time.Duration
	fleetNamespace       string
	allowKubeconfigExec  bool
	allowInsecureTLS     bool
	rolloutPoll          time.Duration
	memberConcurrency    int
	concurrentRounds     int
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
	// Its own ports and names, so that a hub runs beside an operator.
	o.bind(f, managerDefaults{what: "hub", metricsAddr: ":8090", probeAddr: ":8091", webhookPort: 9444,
		certDir: "lockstep-hub-webhook-certs", certNamespace: "lockstep-system", certSecret: "lockstep-hub-webhook-server-cert", service: "lockstep-hub-webhook-service"})
	f.StringVar(&o.validatingConfigName, "validating-webhook-configuration", "lockstep-fleet-validating-webhook-configuration", "In-cluster: the ValidatingWebhookConfiguration the rotator injects the CA into.")
	f.DurationVar(&o.probeInterval, "member-probe-interval", membercluster.DefaultProbeInterval, "How often each member cluster is probed (/readyz and discovery).")
	f.DurationVar(&o.probeTimeout, "member-probe-timeout", membercluster.DefaultProbeTimeout, "Timeout of each request of a member probe.")
	f.DurationVar(&o.rolloutPoll, "rollout-poll", federatedworkload.DefaultRolloutPoll,
		"While a FederatedWorkload rolls and one of its member objects is not watched (an unreachable member, a kind not served yet), how often its members are read; while all are watched, their changes run the rounds and the members are read every 30s.")
	f.IntVar(&o.memberConcurrency, "member-concurrency", federatedworkload.DefaultMemberConcurrency,
		"How many member reads or writes one FederatedWorkload round makes at once; each has its own timeout.")
	f.IntVar(&o.concurrentRounds, "concurrent-rounds", federatedworkload.DefaultMaxConcurrentRounds,
		"How many FederatedWorkloads' rounds run at once.")
	f.StringVar(&o.fleetNamespace, "fleet-namespace", membercluster.DefaultFleetNamespace,
		"The only namespace member kubeconfig Secrets are read from (and the only one whose Secrets the hub caches); MemberClusters naming another are refused.")
	o.analysis.bind(f, "hub")
	f.BoolVar(&o.allowKubeconfigExec, "allow-kubeconfig-exec", false,
		"Let member kubeconfigs run exec plugins and auth providers and name files (tokenFile, client-certificate, client-key, certificate-authority): whoever can write a kubeconfig Secret can then run commands as the hub and have it send any file it can read, such as its own service-account token, to a server of theirs.")
	f.BoolVar(&o.allowInsecureTLS, "allow-insecure-kubeconfig-tls", false,
		"Let member kubeconfigs set insecure-skip-tls-verify: true: the hub then sends their credentials to whoever answers at the member's address.")
	return cmd
}

func runHub(o *hubOptions) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(fleetv1alpha1.AddToScheme(scheme))
	// Members run workloads: their clients know the built-in kinds and Lockstep's.
	memberScheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(memberScheme))
	utilruntime.Must(v1alpha1.AddToScheme(memberScheme))
	// An empty namespace would make the cache keep every namespace's Secrets.
	if errs := validation.IsDNS1123Label(o.fleetNamespace); len(errs) > 0 {
		return fmt.Errorf("--fleet-namespace %q: %s", o.fleetNamespace, strings.Join(errs, "; "))
	}
	o.cacheByObject = hub.CacheByObject(o.fleetNamespace)
	mgr, _, err := o.newManager(scheme, "hub.fleet.lockstep.dev")
	if err != nil {
		return err
	}
	reg := members.NewRegistry(memberScheme, ctrl.Log.WithName("members"))
	measurer, err := o.analysis.measurer()
	if err != nil {
		return err
	}
	if err := hub.Setup(mgr, reg, hub.Options{Analysis: measurer,
		ProbeInterval: o.probeInterval, ProbeTimeout: o.probeTimeout,
		RolloutPoll: o.rolloutPoll, MemberConcurrency: o.memberConcurrency, MaxConcurrentRounds: o.concurrentRounds,
		FleetNamespace: o.fleetNamespace, AllowExec: o.allowKubeconfigExec, AllowInsecureTLS: o.allowInsecureTLS,
	}); err != nil {
		return err
	}
	return o.serve(mgr, webhookServing{
		dev:            devwebhook.Registrar{Manifests: config.FleetWebhookManifests, Name: hubDevWebhookConfig},
		caName:         "lockstep-hub-ca",
		configurations: []rotator.WebhookInfo{{Name: o.validatingConfigName, Type: rotator.Validating}},
		setup:          func(mgr ctrl.Manager) error { return fleetwebhook.Setup(mgr, o.fleetNamespace) },
	}, "starting hub", "probeInterval", o.probeInterval, "probeTimeout", o.probeTimeout,
		"rolloutPoll", o.rolloutPoll, "memberConcurrency", o.memberConcurrency, "concurrentRounds", o.concurrentRounds,
		"fleetNamespace", o.fleetNamespace, "allowKubeconfigExec", o.allowKubeconfigExec, "allowInsecureKubeconfigTLS", o.allowInsecureTLS)
}
