package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Every request the client sends is timed, and so is its wait for the
// client's rate limit.
func TestRegisterClientLatency_TimesRequestsAndTheirWaitForTheRateLimit(t *testing.T) {
	reg, c := measuredClient(t, 1)
	const requests = 3
	for range requests {
		if err := c.Get().AbsPath("/version").Do(context.Background()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if label(m, "verb") == http.MethodGet {
				counts[f.GetName()] += m.GetHistogram().GetSampleCount()
			}
		}
	}
	for _, name := range []string{"rest_client_request_duration_seconds", "rest_client_rate_limiter_duration_seconds"} {
		if counts[name] != requests {
			t.Errorf("%s counted %d GETs, want %d", name, counts[name], requests)
		}
	}
}

// measuredClient is a client of a server that answers {} to everything, with
// RegisterClientLatency's metrics in the registry it returns.
func measuredClient(t *testing.T, burst int) (*prometheus.Registry, *rest.RESTClient) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	RegisterClientLatency(reg)
	cfg := &rest.Config{Host: srv.URL, QPS: 100, Burst: burst,
		ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}}
	c, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return reg, c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Writes are counted by the resource they change, so a settled cluster's
// writes can be told apart; reads are not counted.
func TestRegisterClientLatency_CountsWritesByResource(t *testing.T) {
	reg, c := measuredClient(t, 10)
	ctx := context.Background()
	for _, r := range []*rest.Request{
		c.Post().AbsPath("/api/v1").Namespace("a").Resource("pods").Body([]byte(`{}`)),
		c.Put().AbsPath("/apis/apps/v1").Namespace("a").Resource("replicasets").Name("r").SubResource("status").Body([]byte(`{}`)),
		c.Patch("application/merge-patch+json").AbsPath("/apis/events.k8s.io/v1").Namespace("a").Resource("events").Name("e").Body([]byte(`{}`)),
		c.Get().AbsPath("/api/v1").Namespace("a").Resource("pods"),
	} {
		if err := r.Do(ctx).Error(); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "lockstep_client_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[label(m, "verb")+" "+label(m, "resource")] += m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"POST pods": 1, "PUT replicasets.apps/status": 1, "PATCH events.events.k8s.io": 1}
	if len(got) != len(want) {
		t.Errorf("writes counted %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("writes counted %v, want %v", got, want)
			break
		}
	}
}

func TestResource_NamesTheResourceOfAPath(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/{namespace}/pods":                                  "pods",
		"/api/v1/namespaces/{namespace}/pods/{name}":                           "pods",
		"/api/v1/namespaces/{namespace}/pods/{name}/status":                    "pods/status",
		"/apis/lockstep.dev/v1alpha1/namespaces/{namespace}/podcliques/{name}": "podcliques.lockstep.dev",
		"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}":          "events.events.k8s.io",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}":       "customresourcedefinitions.apiextensions.k8s.io",
		"/api/v1/namespaces/{name}":                                            "namespaces",
		"/api/v1/namespaces/{name}/status":                                     "namespaces/status",
		"/api/v1/namespaces/{name}/finalize":                                   "namespaces/finalize",
		"/api/v1/nodes/{name}/status":                                          "nodes/status",
		"/version":                                                             "other",
		"/apis/apps":                                                           "other",
	} {
		if got := Resource(path); got != want {
			t.Errorf("Resource(%q) = %q, want %q", path, got, want)
		}
	}
}
