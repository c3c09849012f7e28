// Package membercluster keeps each MemberCluster's Ready condition, Kubernetes
// version and workload kinds from a periodic probe of the member, and starts
// and stops the hub's connection to the member in the members registry.
package membercluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/controlloop/enqueue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/requeue"
	"github.com/lockstep-dev/lockstep/internal/controlloop/write"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
)

// Defaults of Reconciler's timing.
const (
	// DefaultProbeInterval is how often a member is probed: a member that stops
	// answering turns Ready=False within one interval plus one probe timeout.
	DefaultProbeInterval = 5 * time.Second
	// DefaultProbeTimeout bounds each request of a probe.
	DefaultProbeTimeout = 3 * time.Second
	// DefaultFleetNamespace is the only namespace the hub reads kubeconfig
	// Secrets from unless told otherwise.
	DefaultFleetNamespace = "lockstep-fleet"
)

// secretRefIndex indexes MemberClusters by "<namespace>/<name>" of their Secret.
const secretRefIndex = "spec.kubeconfigSecretRef"

// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.lockstep.dev,resources=memberclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",namespace=lockstep-fleet,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// Reconciler probes MemberClusters.
type Reconciler struct {
	Client client.Client
	// SecretReader reads kubeconfig Secrets past the cache (the manager's API
	// reader), so the hub never holds every Secret of its cluster: it watches
	// Secrets' metadata only and reads one again when its resourceVersion
	// moves. Nil reads through Client.
	SecretReader client.Reader
	Members      *members.Registry
	Recorder     events.EventRecorder
	// ProbeInterval and ProbeTimeout default to DefaultProbeInterval and
	// DefaultProbeTimeout.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// FleetNamespace is the only namespace kubeconfig Secrets are read from: a
	// MemberCluster naming another is refused, so creating MemberClusters
	// gives no way to read Secrets elsewhere. Empty means
	// DefaultFleetNamespace.
	FleetNamespace string
	// AllowExec and AllowInsecureTLS widen what a member kubeconfig may
	// contain; see KubeconfigPolicy.
	AllowExec, AllowInsecureTLS bool

	secrets secretCopies
}

// SetupWithManager registers the controller, its Secret index and the registry.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ProbeInterval == 0 {
		r.ProbeInterval = DefaultProbeInterval
	}
	if r.ProbeTimeout == 0 {
		r.ProbeTimeout = DefaultProbeTimeout
	}
	if r.FleetNamespace == "" {
		r.FleetNamespace = DefaultFleetNamespace
	}
	if err := mgr.Add(r.Members); err != nil {
		return fmt.Errorf("adding the members registry: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &fleetv1alpha1.MemberCluster{}, secretRefIndex,
		func(o client.Object) []string { return []string{secretKey(o.(*fleetv1alpha1.MemberCluster))} }); err != nil {
		return fmt.Errorf("indexing MemberClusters by Secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("membercluster").
		For(&fleetv1alpha1.MemberCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.memberClustersOfSecret), builder.OnlyMetadata).
		// Probes wait on the network, up to a timeout each: many at once keep a
		// fleet of unreachable members from delaying the others' probes.
		WithOptions(controller.Options{MaxConcurrentReconciles: 32}).
		Complete(r)
}

func secretKey(mc *fleetv1alpha1.MemberCluster) string {
	ref := mc.Spec.KubeconfigSecretRef
	return ref.Namespace + "/" + ref.Name
}

// memberClustersOfSecret maps a Secret to the MemberClusters that read it, so a
// created or fixed Secret is picked up at once.
func (r *Reconciler) memberClustersOfSecret(ctx context.Context, s client.Object) []reconcile.Request {
	return enqueue.Listed(ctx, r.Client, &fleetv1alpha1.MemberClusterList{}, "Secret "+s.GetNamespace()+"/"+s.GetName(),
		client.MatchingFields{secretRefIndex: s.GetNamespace() + "/" + s.GetName()})
}

// Reconcile probes one member, records what it found and looks again after
// ProbeInterval.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var mc fleetv1alpha1.MemberCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			r.Members.Remove(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading MemberCluster %s: %w", req.Name, err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		r.Members.Remove(mc.Name)
		return ctrl.Result{}, nil
	}

	cfg, identity, p := r.kubeconfig(ctx, &mc)
	if cfg != nil {
		p = probeMember(ctx, cfg, r.ProbeTimeout)
	}
	// A changed kubeconfig drops the old connection at once, whatever the probe
	// of the new one says; a refused one keeps none.
	if old := r.Members.Identity(mc.Name); old != "" && (old != identity || p.Reason == fleetv1alpha1.MemberClusterReasonKubeconfigRejected) {
		r.Members.Remove(mc.Name)
	}
	if p.Ready() {
		if err := r.Members.Ensure(mc.Name, identity, cfg); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.writeStatus(ctx, &mc, p); err != nil {
		return requeue.OnConflict(ctrl.Result{}, err)
	}
	return ctrl.Result{RequeueAfter: r.nextProbe()}, nil
}

// kubeconfig reads the member's kubeconfig. When it cannot be used it returns a
// nil config and the probe result that says why.
func (r *Reconciler) kubeconfig(ctx context.Context, mc *fleetv1alpha1.MemberCluster) (*rest.Config, string, Probe) {
	ref := mc.Spec.KubeconfigSecretRef
	key := ref.Key
	if key == "" {
		key = fleetv1alpha1.DefaultKubeconfigKey
	}
	// Checked before any read, so a MemberCluster cannot make the hub read a
	// Secret outside its fleet namespace (admission refuses it too).
	if ref.Namespace != r.FleetNamespace {
		return nil, "", Probe{Reason: fleetv1alpha1.MemberClusterReasonKubeconfigRejected,
			Message: fmt.Sprintf("spec.kubeconfigSecretRef.namespace: %q is not allowed: the hub reads kubeconfig Secrets only in its fleet namespace %q", ref.Namespace, r.FleetNamespace)}
	}
	data, err := r.secretData(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", Probe{Reason: fleetv1alpha1.MemberClusterReasonSecretNotFound,
				Message: fmt.Sprintf("Secret %s/%s does not exist; create it with the member's kubeconfig under key %q", ref.Namespace, ref.Name, key)}
		}
		return nil, "", Probe{Reason: fleetv1alpha1.MemberClusterReasonSecretNotFound,
			Message: fmt.Sprintf("reading Secret %s/%s: %v", ref.Namespace, ref.Name, err)}
	}
	kubeconfig, ok := data[key]
	if !ok || len(kubeconfig) == 0 {
		return nil, "", Probe{Reason: fleetv1alpha1.MemberClusterReasonKubeconfigKeyMissing,
			Message: fmt.Sprintf("Secret %s/%s has no data under key %q", ref.Namespace, ref.Name, key)}
	}
	sum := sha256.Sum256(kubeconfig)
	identity := hex.EncodeToString(sum[:])
	cfg, err := restConfigFromKubeconfig(kubeconfig, KubeconfigPolicy{AllowExec: r.AllowExec, AllowInsecureTLS: r.AllowInsecureTLS})
	var rejected *KubeconfigRejectedError
	if errors.As(err, &rejected) {
		return nil, identity, Probe{Reason: fleetv1alpha1.MemberClusterReasonKubeconfigRejected,
			Message: fmt.Sprintf("Secret %s/%s key %q: %v", ref.Namespace, ref.Name, key, err)}
	}
	if err != nil {
		return nil, identity, Probe{Reason: fleetv1alpha1.MemberClusterReasonKubeconfigInvalid,
			Message: fmt.Sprintf("Secret %s/%s key %q is not a usable kubeconfig: %v", ref.Namespace, ref.Name, key, err)}
	}
	return cfg, identity, Probe{}
}

// writeStatus records the probe, writing only what changed, and tells of a
// change of readiness in an event.
func (r *Reconciler) writeStatus(ctx context.Context, mc *fleetv1alpha1.MemberCluster, p Probe) error {
	status := metav1.ConditionFalse
	if p.Ready() {
		status = metav1.ConditionTrue
	}
	before := meta.FindStatusCondition(mc.Status.Conditions, string(fleetv1alpha1.MemberClusterReady))
	changed := before == nil || before.Status != status || before.Reason != string(p.Reason)
	err := write.Status(ctx, r.Client, mc, func(mc *fleetv1alpha1.MemberCluster) {
		mc.Status.ObservedGeneration = mc.Generation
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{
			Type: string(fleetv1alpha1.MemberClusterReady), Status: status,
			Reason: string(p.Reason), Message: p.Message, ObservedGeneration: mc.Generation,
		})
		if p.Ready() {
			mc.Status.KubernetesVersion = p.KubernetesVersion
			mc.Status.WorkloadKinds = slices.Clone(p.WorkloadKinds)
		}
	})
	if err != nil {
		return err
	}
	if changed {
		log := ctrl.LoggerFrom(ctx)
		if p.Ready() {
			log.Info("member is Ready", "version", p.KubernetesVersion, "workloadKinds", p.WorkloadKinds)
			r.Recorder.Eventf(mc, nil, corev1.EventTypeNormal, string(p.Reason), "Probe", "%s", p.Message)
		} else {
			log.Info("member is not Ready", "reason", p.Reason, "message", p.Message)
			r.Recorder.Eventf(mc, nil, corev1.EventTypeWarning, string(p.Reason), "Probe", "%s", p.Message)
		}
	}
	return nil
}

// nextProbe spreads the probes of many members over time: the interval, less
// up to a tenth.
func (r *Reconciler) nextProbe() time.Duration {
	return r.ProbeInterval - time.Duration(rand.Int64N(int64(r.ProbeInterval/10)+1))
}
