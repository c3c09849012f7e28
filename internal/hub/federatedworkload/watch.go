package federatedworkload

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// The member objects the hub writes, watched in every member it acts in.
// Their metadata is enough: an event only says which workload to run a round
// for, and the round reads the objects (and a Deployment's ReplicaSets) live.
// A Deployment's ReplicaSets are not watched: they carry their pods' labels,
// not the hub's, so a watch would take every ReplicaSet of the member, and
// the Deployment controller writes the Deployment's status after each change
// of their counts, which is the event the hub needs.
var memberObjectKinds = map[schema.GroupVersionKind]bool{
	appsv1.SchemeGroupVersion.WithKind("Deployment"):  true,
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"): true,
	v1alpha1.GroupVersion.WithKind("PodCliqueSet"):    true,
}

// statusToGrant is how long after the hub saw a member object change the
// next round handed out new grants. Its buckets are finer between 1 and 5 s,
// where a target of 2 s is read off it.
var statusToGrant = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "lockstep_fleet_member_event_to_grant_seconds",
	Help:    "Time from the hub seeing a change of a member object (its status, watched) to the end of the next round of its FederatedWorkload that changed grants.",
	Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 4, 5, 7.5, 10, 15, 30},
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
// connection's cache keeps the metadata of the objects labelled for its own
// MemberCluster (fleet.lockstep.dev/member-cluster), and its informers feed
// one channel the controller watches (source.Channel). The rounds still read
// the objects live.
type MemberEvents struct {
	ch chan event.GenericEvent

	mu sync.Mutex
	// pending is when a workload's first member event since its last round
	// was seen.
	pending map[types.NamespacedName]time.Time
	// watching are the informers running, by connection and kind, until
	// the connection stops.
	watching map[watchKey]cache.Informer
	// written is the resourceVersion each member object had after the hub's
	// last write to it, until its event comes: a change the round that made
	// it planned already, which runs no round of its own.
	written map[objectKey]string
	// inflight are the member objects being written, with the update events
	// that came before the write's answer. On a busy member that is most of
	// them: the event carries the object's metadata, the answer the whole
	// object. They are held until the answer says whether they were its echo.
	inflight map[objectKey]*held
}

// held are the update events of an object seen while the hub wrote it.
type held struct {
	// versions are their resourceVersions, first the earliest.
	versions []string
	// seen is when the first came.
	seen time.Time
}

type watchKey struct {
	conn cluster.Cluster
	kind schema.GroupVersionKind
}

type objectKey struct {
	watchKey
	object types.NamespacedName
}

// NewMemberEvents returns a MemberEvents to register with the members
// registry (AddWatcher) and the Reconciler.
func NewMemberEvents() *MemberEvents {
	return &MemberEvents{ch: make(chan event.GenericEvent, 1024), pending: map[types.NamespacedName]time.Time{}, watching: map[watchKey]cache.Informer{}, written: map[objectKey]string{},
		inflight: map[objectKey]*held{}}
}

var _ members.Watcher = (*MemberEvents)(nil)

// Configure implements members.Watcher: the connection's cache keeps only
// the objects the hub wrote for this MemberCluster (its default label
// selector, which the member's apiserver applies), without managed fields.
// Two MemberClusters that name one cluster so each see their own objects
// only. The selector is the default rather than one per member kind because
// a per-kind entry is resolved when the connection is made, and a member
// without the PodCliqueSet CRD would then refuse every connection.
func (e *MemberEvents) Configure(member string, o *cluster.Options) {
	o.Cache.DefaultLabelSelector = labels.SelectorFromSet(labels.Set{fleetv1alpha1.LabelMemberCluster: member})
	o.Cache.DefaultTransform = cache.TransformStripManagedFields()
}

// Watch implements members.Watcher: it adds the member's informer of kind,
// which runs with the connection. A kind the member does not serve (a
// PodCliqueSet CRD not installed) is skipped: a workload of that kind cannot
// be placed there, and the resync still reads the member.
func (e *MemberEvents) Watch(ctx context.Context, member string, c cluster.Cluster, kind schema.GroupVersionKind) bool {
	if !memberObjectKinds[kind] {
		return true
	}
	log := ctrl.Log.WithName("members").WithValues("member", member)
	return e.watch(ctx, log, c, kind)
}

func (e *MemberEvents) watch(ctx context.Context, log logr.Logger, c cluster.Cluster, gvk schema.GroupVersionKind) bool {
	inf, err := c.GetCache().GetInformer(ctx, metadataOf(gvk), cache.BlockUntilSynced(false))
	if err != nil {
		if meta.IsNoMatchError(err) {
			log.V(1).Info("the member does not serve this kind; not watching it yet", "kind", gvk.Kind, "retryAfter", members.RetryWatch)
		} else {
			log.Info("cannot watch member objects; the resync reads them", "kind", gvk.Kind, "error", err.Error(), "retryAfter", members.RetryWatch)
		}
		return false
	}
	if _, err := inf.AddEventHandler(e.handler(ctx, c, gvk)); err != nil {
		log.Info("cannot watch member objects; the resync reads them", "kind", gvk.Kind, "error", err.Error(), "retryAfter", members.RetryWatch)
		return false
	}
	key := watchKey{conn: c, kind: gvk}
	e.mu.Lock()
	e.watching[key] = inf
	e.mu.Unlock()
	go func() {
		<-ctx.Done()
		e.mu.Lock()
		delete(e.watching, key)
		for k := range e.written {
			if k.watchKey == key {
				delete(e.written, k)
			}
		}
		e.mu.Unlock()
	}()
	return true
}

// writing says the hub is about to write obj in the member of conn: its
// update events wait for the write's answer (wrote).
func (e *MemberEvents) writing(conn cluster.Cluster, obj client.Object) {
	if e == nil {
		return
	}
	key := keyOf(conn, obj)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watching[key.watchKey] != nil {
		e.inflight[key] = &held{}
	}
}

// wrote takes the answer of the write of obj begun with writing: the
// resourceVersion rv it left the object at, "" when it failed or left no
// object. An update event held meanwhile at rv was the write's echo and
// runs no round; any other held event runs one now. When none came, the
// echo is still to come, and is dropped then (echo).
func (e *MemberEvents) wrote(ctx context.Context, conn cluster.Cluster, obj client.Object, rv string) {
	if e == nil {
		return
	}
	key := keyOf(conn, obj)
	e.mu.Lock()
	h := e.inflight[key]
	delete(e.inflight, key)
	if rv != "" && e.watching[key.watchKey] != nil && (h == nil || !slices.Contains(h.versions, rv)) {
		e.written[key] = rv
	}
	e.mu.Unlock()
	if h == nil || !slices.ContainsFunc(h.versions, func(v string) bool { return v != rv }) {
		return
	}
	if w, ok := workloadOf(obj); ok {
		e.enqueue(ctx, w, h.seen)
	}
}

func keyOf(conn cluster.Cluster, obj client.Object) objectKey {
	return objectKey{watchKey{conn, obj.GetObjectKind().GroupVersionKind()}, client.ObjectKeyFromObject(obj)}
}

// echo says whether an update of obj is the hub's own: the echo of its last
// write, which it forgets then, or an event that comes while the hub writes
// obj, held until the write's answer (wrote). A later change still runs a
// round. A write that changed nothing answers with the resourceVersion of
// the last change before it, whose event is then dropped. The round wrote
// because what it read differed, so a change since its read set the hub's
// fields to the hub's values: either the dropped one, which needs no round,
// or an earlier one, whose event runs a round that reads the later change
// live.
func (e *MemberEvents) echo(conn cluster.Cluster, kind schema.GroupVersionKind, obj client.Object) bool {
	key := objectKey{watchKey{conn, kind}, client.ObjectKeyFromObject(obj)}
	e.mu.Lock()
	defer e.mu.Unlock()
	if h := e.inflight[key]; h != nil {
		if len(h.versions) == 0 {
			h.seen = time.Now()
		}
		h.versions = append(h.versions, obj.GetResourceVersion())
		return true
	}
	rv, ok := e.written[key]
	if !ok || rv != obj.GetResourceVersion() {
		return false
	}
	delete(e.written, key)
	return true
}

// objectOf is the object of an informer event, a deletion's last known
// state included.
func objectOf(o any) (client.Object, bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(client.Object)
	return obj, ok
}

// forget drops the record of the hub's last write to a deleted object.
func (e *MemberEvents) forget(conn cluster.Cluster, kind schema.GroupVersionKind, o any) {
	obj, ok := objectOf(o)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.written, objectKey{watchKey{conn, kind}, client.ObjectKeyFromObject(obj)})
}

// Watching says whether objects of kind are watched through conn, their
// informer listed (a member that forbids the list never is): a change of one
// runs its workload's round at once, so rounds need not poll it.
func (e *MemberEvents) Watching(conn cluster.Cluster, kind schema.GroupVersionKind) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	inf := e.watching[watchKey{conn: conn, kind: kind}]
	e.mu.Unlock()
	return inf != nil && inf.HasSynced()
}

// handler runs the round of the workload a member object of kind, watched
// through conn, belongs to, at each of its changes but the hub's own writes.
func (e *MemberEvents) handler(ctx context.Context, conn cluster.Cluster, kind schema.GroupVersionKind) toolscache.ResourceEventHandlerFuncs {
	on := func(obj any) {
		o, ok := objectOf(obj)
		if !ok {
			return
		}
		if key, ok := workloadOf(o); ok {
			e.enqueue(ctx, key, time.Now())
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: on,
		UpdateFunc: func(_, o any) {
			if obj, ok := o.(client.Object); ok && e.echo(conn, kind, obj) {
				return
			}
			on(o)
		},
		DeleteFunc: func(o any) {
			e.forget(conn, kind, o)
			on(o)
		},
	}
}

// enqueue runs the round of workload key for a member event seen at seen.
func (e *MemberEvents) enqueue(ctx context.Context, key types.NamespacedName, seen time.Time) {
	e.mu.Lock()
	if first, ok := e.pending[key]; !ok || seen.Before(first) {
		e.pending[key] = seen
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

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}
