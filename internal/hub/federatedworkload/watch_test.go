package federatedworkload

import (
	"context"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// A member that serves no PodCliqueSets (most do not install Lockstep's
// CRDs) still gets a connection: what the watches configure must not need the
// kind to be served when the connection's cache is made.
func TestMemberEvents_AMemberWithoutThePodCliqueSetCRDCanBeConnected(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	// The member serves apps/v1 only.
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"Deployment", "StatefulSet", "ReplicaSet"} {
		mapper.Add(appsv1.SchemeGroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	var o cluster.Options
	NewMemberEvents().Configure("m1", &o)
	o.Cache.Scheme, o.Cache.Mapper, o.Cache.HTTPClient = scheme, mapper, http.DefaultClient
	if _, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, o.Cache); err != nil {
		t.Fatalf("the member connection's cache cannot be made: %v", err)
	}
}

// A member connection keeps only the objects written for its own
// MemberCluster: two MemberClusters naming one cluster each cache (and are
// woken by) their own objects only.
func TestMemberEvents_AConnectionKeepsOnlyItsOwnMemberClustersObjects(t *testing.T) {
	var o cluster.Options
	NewMemberEvents().Configure("eu-1", &o)
	sel := o.Cache.DefaultLabelSelector
	for _, c := range []struct {
		labels labels.Set
		want   bool
	}{
		{labels.Set{fleetv1alpha1.LabelFederatedWorkload: "shop.web", fleetv1alpha1.LabelMemberCluster: "eu-1"}, true},
		{labels.Set{fleetv1alpha1.LabelFederatedWorkload: "shop.web", fleetv1alpha1.LabelMemberCluster: "eu-2"}, false},
		{labels.Set{fleetv1alpha1.LabelFederatedWorkload: "shop.web"}, false},
		{labels.Set{"app": "web"}, false},
	} {
		if got := sel != nil && sel.Matches(c.labels); got != c.want {
			t.Errorf("the cache of eu-1 keeps an object labelled %v: %v, want %v", c.labels, got, c.want)
		}
	}
}

// stubConn stands for a member connection: only its identity counts here.
type stubConn struct {
	cluster.Cluster
	name string
}

// syncedInformer stands for an informer that has listed.
type syncedInformer struct{ cache.Informer }

func (syncedInformer) HasSynced() bool { return true }

// The event of the hub's own write to a member object runs no round: the
// round that wrote it planned it. Any other change does: a later one, the
// same object in another member, a write the hub made through a connection
// that does not watch, and a deletion.
func TestMemberEvents_TheHubsOwnWriteRunsNoRound(t *testing.T) {
	ctx := context.Background()
	kind := appsv1.SchemeGroupVersion.WithKind("Deployment")
	a, b := &stubConn{name: "a"}, &stubConn{name: "b"}
	e := NewMemberEvents()
	e.watching[watchKey{a, kind}] = syncedInformer{}
	e.watching[watchKey{b, kind}] = syncedInformer{}
	if !e.Watching(a, kind) || e.Watching(&stubConn{name: "c"}, kind) {
		t.Fatal("a is watched, c is not")
	}
	at, rounds := webAt(kind), roundsOf(e)
	ha, hb := e.handler(ctx, a, kind), e.handler(ctx, b, kind)

	e.wrote(ctx, a, at(""), "7")
	hb.OnUpdate(at("6"), at("7")) // b's object, which the hub did not write at 7
	if n := rounds(); n != 1 {
		t.Errorf("an update in b after a write in a ran %d rounds, want 1", n)
	}
	ha.OnUpdate(at("6"), at("7"))
	if n := rounds(); n != 0 {
		t.Errorf("the echo of the hub's own write ran %d rounds, want none", n)
	}
	ha.OnUpdate(at("7"), at("8")) // the member's controller, after it
	if n := rounds(); n != 1 {
		t.Errorf("a change after the hub's write ran %d rounds, want 1", n)
	}
	ha.OnUpdate(at("6"), at("7")) // the write is forgotten once its echo came
	if n := rounds(); n != 1 {
		t.Errorf("an update at a resourceVersion seen before ran %d rounds, want 1", n)
	}
	e.wrote(ctx, a, at(""), "9")
	ha.OnDelete(at("9"))
	if n := rounds(); n != 1 {
		t.Errorf("a deletion ran %d rounds, want 1", n)
	}
	c := &stubConn{name: "c"}
	e.wrote(ctx, c, at(""), "10") // not watched: nothing to wait for
	if len(e.written) != 0 {
		t.Errorf("writes remembered: %v, want none after a deletion and a write through an unwatched connection", e.written)
	}
}

// Under load the event of the hub's write often comes before the write's
// answer (the event carries metadata, the answer the whole object). Events
// that come while the hub writes an object wait for the answer: its echo
// runs no round, any other change runs one, and so does any event when the
// write failed.
func TestMemberEvents_AnEchoBeforeTheWritesAnswerRunsNoRound(t *testing.T) {
	ctx := context.Background()
	kind := appsv1.SchemeGroupVersion.WithKind("Deployment")
	a := &stubConn{name: "a"}
	e := NewMemberEvents()
	e.watching[watchKey{a, kind}] = syncedInformer{}
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	at, rounds := webAt(kind), roundsOf(e)
	ha := e.handler(ctx, a, kind)

	e.writing(a, at(""))
	ha.OnUpdate(at("6"), at("7")) // the echo, before the answer
	if n := rounds(); n != 0 {
		t.Errorf("an event while the hub writes ran %d rounds before the answer, want none", n)
	}
	e.wrote(ctx, a, at(""), "7")
	if n := rounds(); n != 0 {
		t.Errorf("the echo that came before the write's answer ran %d rounds, want none", n)
	}
	ha.OnUpdate(at("7"), at("8")) // the member's controller, after it
	if n := rounds(); n != 1 {
		t.Errorf("a change after the hub's write ran %d rounds, want 1", n)
	}
	e.take(key)

	e.writing(a, at(""))
	ha.OnUpdate(at("8"), at("9")) // someone else's change, during the write
	seen := time.Now()
	ha.OnUpdate(at("9"), at("10")) // the echo
	e.wrote(ctx, a, at(""), "10")
	if n := rounds(); n != 1 {
		t.Errorf("another change during the hub's write ran %d rounds, want 1", n)
	}
	if first, ok := e.take(key); !ok || first.After(seen) {
		t.Errorf("the round's member event was seen at %v (%v), want when the held event came, before %v", first, ok, seen)
	}

	e.writing(a, at(""))
	ha.OnUpdate(at("10"), at("11"))
	e.wrote(ctx, a, at(""), "") // the write failed
	if n := rounds(); n != 1 {
		t.Errorf("an event during a write that failed ran %d rounds, want 1", n)
	}

	e.writing(a, at(""))
	e.wrote(ctx, a, at(""), "12") // the answer first, as before
	ha.OnUpdate(at("11"), at("12"))
	if n := rounds(); n != 0 {
		t.Errorf("the echo after the write's answer ran %d rounds, want none", n)
	}
	if len(e.inflight) != 0 || len(e.written) != 0 {
		t.Errorf("writes remembered after their echoes: in flight %v, written %v", e.inflight, e.written)
	}
}

// webAt is the member object of workload shop/web, of kind, at a
// resourceVersion.
func webAt(kind schema.GroupVersionKind) func(rv string) *metav1.PartialObjectMetadata {
	return func(rv string) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: rv,
			Labels: map[string]string{fleetv1alpha1.LabelFederatedWorkload: "shop.web"}}}
		m.SetGroupVersionKind(kind)
		return m
	}
}

// roundsOf counts the rounds e queued since it last counted.
func roundsOf(e *MemberEvents) func() int {
	return func() int {
		n := len(e.ch)
		for range n {
			<-e.ch
		}
		return n
	}
}
