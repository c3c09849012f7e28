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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	RegisterClientLatency(reg)

	cfg := &rest.Config{Host: srv.URL, QPS: 100, Burst: 1,
		ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}}
	c, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
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

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
