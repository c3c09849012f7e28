package federatedworkload

import (
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

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
	NewMemberEvents().Configure(&o)
	o.Cache.Scheme, o.Cache.Mapper, o.Cache.HTTPClient = scheme, mapper, http.DefaultClient
	if _, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, o.Cache); err != nil {
		t.Fatalf("the member connection's cache cannot be made: %v", err)
	}
}
