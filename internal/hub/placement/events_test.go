package placement

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// drain takes every request the handler put in q, sorted by name.
func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var out []string
	for q.Len() > 0 {
		req, _ := q.Get()
		out = append(out, req.Name)
		q.Done(req)
	}
	slices.Sort(out)
	return out
}

// A MemberCluster event wakes only the Placements whose clusterSelector
// matches the cluster before or after it, those with no selector (they match
// every cluster) and those whose selector does not parse, not every Placement.
func TestMemberClusterEvents_WakeOnlyThePlacementsThatMaySelectTheCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	placement := func(name string, sel *metav1.LabelSelector) *fleetv1alpha1.Placement {
		return &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: fleetv1alpha1.PlacementSpec{ClusterSelector: sel}}
	}
	group := func(g string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"group": g}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		placement("g1", group("g1")),
		placement("g2", group("g2")),
		placement("g3", group("g3")),
		placement("everything", nil),
		placement("broken", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "group", Operator: "Bogus"}}}),
	).Build()
	r := &Reconciler{Client: c}
	h := r.memberClusterEvents()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx := context.Background()
	mc := func(g string) client.Object {
		return &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{"group": g}}}
	}

	h.Create(ctx, event.CreateEvent{Object: mc("g1")}, q)
	if got, want := drain(q), []string{"broken", "everything", "g1"}; !slices.Equal(got, want) {
		t.Errorf("creation in g1 woke %v, want %v", got, want)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: mc("g1"), ObjectNew: mc("g2")}, q)
	if got, want := drain(q), []string{"broken", "everything", "g1", "g2"}; !slices.Equal(got, want) {
		t.Errorf("moving from g1 to g2 woke %v, want %v", got, want)
	}
	h.Delete(ctx, event.DeleteEvent{Object: mc("g3")}, q)
	if got, want := drain(q), []string{"broken", "everything", "g3"}; !slices.Equal(got, want) {
		t.Errorf("deletion from g3 woke %v, want %v", got, want)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: mc("g9"), ObjectNew: mc("g9")}, q)
	if got, want := drain(q), []string{"broken", "everything"}; !slices.Equal(got, want) {
		t.Errorf("a change in a group no placement names woke %v, want %v", got, want)
	}
}
