package members

import (
	"net"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

// A member connection's mapper asks the member for the group versions it is
// asked about, one at a time, and never for its whole discovery; a group
// version the member does not serve is a no-match error, asked again later
// (a CRD installed since is found).
func TestGroupVersionMapper_LearnsOnlyTheGroupVersionsItIsAskedFor(t *testing.T) {
	fake := &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "namespaces", Kind: "Namespace"}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/status", Kind: "Deployment", Namespaced: true},
			{Name: "statefulsets", Kind: "StatefulSet", Namespaced: true},
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{{Name: "jobs", Kind: "Job", Namespaced: true}}},
	}}
	disc := &askedDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: fake}}
	m := newGroupVersionMapperFor(disc)

	for range 2 {
		mapping, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
		if err != nil {
			t.Fatal(err)
		}
		if mapping.Resource.Resource != "deployments" || mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("Deployment maps to %v scoped %s", mapping.Resource, mapping.Scope.Name())
		}
	}
	mapping, err := m.RESTMapping(schema.GroupKind{Kind: "Namespace"}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameRoot {
		t.Fatalf("Namespace is scoped %s", mapping.Scope.Name())
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "lockstep.dev", Kind: "PodCliqueSet"}, "v1alpha1"); !meta.IsNoMatchError(err) {
		t.Fatalf("a group version the member does not serve: %v, want a no-match error", err)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "batch", Kind: "Job"}, "v1"); err != nil {
		t.Fatal(err)
	}

	for _, a := range fake.Actions() {
		if a.GetVerb() != "get" || a.GetResource().Resource != "resource" {
			t.Errorf("the mapper asked the member %s %s: more than one group version", a.GetVerb(), a.GetResource().Resource)
		}
	}
	asked := disc.asked
	want := []string{"apps/v1", "v1", "lockstep.dev/v1alpha1", "batch/v1"}
	if len(asked) != len(want) {
		t.Fatalf("the mapper asked for %v, want %v (each once)", asked, want)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Fatalf("the mapper asked for %v, want %v (each once)", asked, want)
		}
	}

	// The CRD is installed later: the next lookup finds it.
	fake.Resources = append(fake.Resources, &metav1.APIResourceList{GroupVersion: "lockstep.dev/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "podcliquesets", Kind: "PodCliqueSet", Namespaced: true}}})
	if _, err := m.RESTMapping(schema.GroupKind{Group: "lockstep.dev", Kind: "PodCliqueSet"}, "v1alpha1"); err != nil {
		t.Fatalf("a group version served since: %v", err)
	}
}

// askedDiscovery records the group versions asked for.
type askedDiscovery struct {
	*fakediscovery.FakeDiscovery
	asked []string
}

func (d *askedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.asked = append(d.asked, gv)
	return d.FakeDiscovery.ServerResourcesForGroupVersion(gv)
}

// A member that takes connections and never answers fails a mapping lookup
// after DiscoveryTimeout: the lookup runs before a request's own context
// applies, so it must not wait for good (it held a hub's round and its
// shutdown).
func TestGroupVersionMapper_GivesUpOnAMemberThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	defer func(d time.Duration) { DiscoveryTimeout = d }(DiscoveryTimeout)
	DiscoveryTimeout = 200 * time.Millisecond

	cfg := &rest.Config{Host: "http://" + ln.Addr().String()}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newGroupVersionMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || meta.IsNoMatchError(err) {
			t.Fatalf("a lookup at a member that never answers returned %v, want a discovery error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a lookup at a member that never answers is still waiting after a minute")
	}
}
