package federatedworkload

import (
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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
