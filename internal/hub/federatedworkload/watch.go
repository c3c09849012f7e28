package federatedworkload

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/hub/members"
)

// The member objects the hub writes, and a Deployment's ReplicaSets, watched
// in every member. Their metadata is enough: an event only says which
// workload to run a round for, and the round reads the objects live.
var (
	memberObjectKinds = []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("Deployment"),
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		v1alpha1.GroupVersion.WithKind("PodCliqueSet"),
	}
	replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
)

// statusToGrant is how long after the hub saw a member object change the
// next round handed out new grants.
var statusToGrant = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "lockstep_fleet_member_event_to_grant_seconds",
	Help:    "Time from the hub seeing a change of a member object (its status, watched) to the end of the next round of its FederatedWorkload that changed grants.",
	Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30},
})

func init() {
	crmetrics.Registry.MustRegister(statusToGrant, staleRounds)
}

// staleRounds counts the rounds that sent nothing because the workload they
// were planned from was older than the hub's own last write to it.
var staleRounds = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "lockstep_fleet_stale_rounds_total",
	Help: "Rounds of FederatedWorkloads that sent no member write because their status write conflicted: the workload they were planned from was older than the last one written (a cache behind the hub's own writes). Each is looked at again shortly.",
})

// MemberEvents turns changes of the member objects the hub labelled into
// rounds of their FederatedWorkloads. It is a members.Watcher: each member
// connection's cache keeps the metadata of those objects (only the ones
// labelled fleet.lockstep.dev/federatedworkload; ReplicaSets all, by their
// Deployment), and its informers feed one channel the controller watches
// (source.Channel). The rounds still read the objects live.
type MemberEvents struct {
	ch chan event.GenericEvent

	mu sync.Mutex
	// pending is when a workload's first member event since its last round
	// was seen.
	pending map[types.NamespacedName]time.Time
}

// NewMemberEvents returns a MemberEvents to register with the members
// registry (AddWatcher) and the Reconciler.
func NewMemberEvents() *MemberEvents {
	return &MemberEvents{ch: make(chan event.GenericEvent, 1024), pending: map[types.NamespacedName]time.Time{}}
}

var _ members.Watcher = (*MemberEvents)(nil)

// Configure implements members.Watcher: the member connection's cache keeps
// only the hub's objects (its default label selector), but for ReplicaSets,
// and no managed fields. The selector is the default rather than one per
// member kind because a per-kind entry is resolved when the connection is
// made, and a member without the PodCliqueSet CRD would then refuse every
// connection.
func (e *MemberEvents) Configure(o *cluster.Options) {
	owned := labels.NewSelector()
	if req, err := labels.NewRequirement(fleetv1alpha1.LabelFederatedWorkload, selection.Exists, nil); err == nil {
		owned = owned.Add(*req)
	}
	o.Cache.DefaultLabelSelector = owned
	if o.Cache.ByObject == nil {
		o.Cache.ByObject = map[client.Object]cache.ByObject{}
	}
	o.Cache.ByObject[metadataOf(replicaSetKind)] = cache.ByObject{Label: labels.Everything()}
	o.Cache.DefaultTransform = cache.TransformStripManagedFields()
}

// Watch implements members.Watcher: it adds the member's informers, which
// start with the connection. A kind the member does not serve (a
// PodCliqueSet CRD not installed) is skipped: a workload of that kind cannot
// be placed there, and the resync still reads the member.
func (e *MemberEvents) Watch(ctx context.Context, member string, c cluster.Cluster) {
	log := ctrl.Log.WithName("members").WithValues("member", member)
	for _, gvk := range memberObjectKinds {
		e.watch(ctx, log, c, gvk, workloadOf)
	}
	// A ReplicaSet carries its pods' labels, not the hub's: it maps to its
	// Deployment, which the cache holds only when the hub labelled it. A
	// member role without list and watch on ReplicaSets (an older one) goes
	// without: the Deployment's status follows its ReplicaSets anyway.
	if !mayWatch(ctx, c, "apps", "replicasets") {
		log.Info("the hub may not list and watch ReplicaSets in this member; watching its Deployments only")
		return
	}
	e.watch(ctx, log, c, replicaSetKind, func(o client.Object) (types.NamespacedName, bool) {
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind != deploymentKind.Kind || ref.APIVersion != deploymentKind.GroupVersion().String() {
				continue
			}
			dep := metadataOf(deploymentKind)
			if err := c.GetCache().Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}, dep); err != nil {
				return types.NamespacedName{}, false
			}
			return workloadOf(dep)
		}
		return types.NamespacedName{}, false
	})
}

func (e *MemberEvents) watch(ctx context.Context, log logr.Logger, c cluster.Cluster, gvk schema.GroupVersionKind, workload func(client.Object) (types.NamespacedName, bool)) {
	inf, err := c.GetCache().GetInformer(ctx, metadataOf(gvk), cache.BlockUntilSynced(false))
	if err != nil {
		if meta.IsNoMatchError(err) {
			log.V(1).Info("the member does not serve this kind; not watching it", "kind", gvk.Kind)
		} else {
			log.Info("cannot watch member objects; the resync reads them", "kind", gvk.Kind, "error", err.Error())
		}
		return
	}
	on := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		if key, ok := workload(o); ok {
			e.enqueue(ctx, key)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, o any) { on(o) },
		DeleteFunc: on,
	}); err != nil {
		log.Info("cannot watch member objects; the resync reads them", "kind", gvk.Kind, "error", err.Error())
	}
}

func (e *MemberEvents) enqueue(ctx context.Context, key types.NamespacedName) {
	e.mu.Lock()
	if _, ok := e.pending[key]; !ok {
		e.pending[key] = time.Now()
	}
	e.mu.Unlock()
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case e.ch <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// take is when the workload's first member event since the last take was
// seen, and false when none was.
func (e *MemberEvents) take(key types.NamespacedName) (time.Time, bool) {
	if e == nil {
		return time.Time{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.pending[key]
	delete(e.pending, key)
	return t, ok
}

// source is the controller's source of the member events.
func (e *MemberEvents) source() source.Source {
	return source.Channel(e.ch, &handler.EnqueueRequestForObject{})
}

// workloadOf is the FederatedWorkload a member object belongs to, from its
// label <namespace>.<name> (namespaces hold no dots).
func workloadOf(o client.Object) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(o.GetLabels()[fleetv1alpha1.LabelFederatedWorkload], ".")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// mayWatch asks the member whether the hub may list and watch resource
// (SelfSubjectAccessReview, which every authenticated user may create).
func mayWatch(ctx context.Context, c cluster.Cluster, group, resource string) bool {
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	for _, verb := range []string{"list", "watch"} {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource}}}
		if err := c.GetClient().Create(ctx, r); err != nil || !r.Status.Allowed {
			return false
		}
	}
	return true
}

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}
