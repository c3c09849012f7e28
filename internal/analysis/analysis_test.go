package analysis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/analysis"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// errorRatio is what the test exporter reports; the tests move it.
var errorRatio atomic.Value

var prom *testenv.Prometheus

// TestMain runs a real Prometheus (bin/prometheus) scraping an exporter the
// tests control, so that every measurement goes through Prometheus's own
// query API.
func TestMain(m *testing.M) {
	errorRatio.Store("0.2")
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE test_error_ratio gauge\ntest_error_ratio{role=\"decode\"} %s\ntest_error_ratio{role=\"prefill\"} 0.5\n", errorRatio.Load())
	}))
	var err error
	prom, err = testenv.StartPrometheus(strings.TrimPrefix(exporter.URL, "http://"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = prom.Stop()
	exporter.Close()
	os.Exit(code)
}

// measureUntil measures until the phase is want (each scrape is a second).
func measureUntil(t *testing.T, m *analysis.Measurer, a v1alpha1.PrometheusAnalysis, want v1alpha1.AnalysisPhase) v1alpha1.AnalysisStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := m.Measure(context.Background(), &v1alpha1.GateAnalysis{Prometheus: &a}, analysis.State{})
		if st.Phase == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %+v, want %s", a.Query, st, want)
		}
		time.Sleep(250 * time.Millisecond) // the next scrape
	}
}

func TestMeasure_FollowsTheSeriesThroughARealPrometheus(t *testing.T) {
	if err := prom.WaitForSample(t.Context(), "test_error_ratio"); err != nil {
		t.Fatal(err)
	}
	p := &analysis.Measurer{PrometheusAddresses: []string{prom.Address}}
	decode := v1alpha1.PrometheusAnalysis{Address: prom.Address + "/", Query: `max(test_error_ratio{role="decode"})`, SuccessCondition: "result < 0.01"}
	errorRatio.Store("0.2")
	st := measureUntil(t, p, decode, v1alpha1.AnalysisFailed)
	if st.Value != "0.2" || !strings.Contains(st.Message, "result[0] = 0.2, want < 0.01") {
		t.Errorf("failed measurement %+v", st)
	}
	errorRatio.Store("0.001")
	if st := measureUntil(t, p, decode, v1alpha1.AnalysisPassed); st.Value != "0.001" {
		t.Errorf("passed measurement %+v", st)
	}
	// a vector is ordered by its labels: decode, then prefill
	both := v1alpha1.PrometheusAnalysis{Address: prom.Address, Query: "test_error_ratio", SuccessCondition: "result[1] >= 0.5"}
	if st := measureUntil(t, p, both, v1alpha1.AnalysisPassed); st.Value != "0.5" {
		t.Errorf("result[1] %+v", st)
	}
	// a scalar
	scalar := v1alpha1.PrometheusAnalysis{Address: prom.Address, Query: "scalar(max(test_error_ratio))", SuccessCondition: "result == 0.5"}
	measureUntil(t, p, scalar, v1alpha1.AnalysisPassed)
}

func TestMeasure_WhatCannotBeComparedIsInconclusive(t *testing.T) {
	p := &analysis.Measurer{PrometheusAddresses: []string{prom.Address}}
	for _, tc := range []struct {
		a    v1alpha1.PrometheusAnalysis
		want string
	}{
		{v1alpha1.PrometheusAnalysis{Address: "http://127.0.0.1:1", Query: "up", SuccessCondition: "result > 0"}, "may not query http://127.0.0.1:1"},
		{v1alpha1.PrometheusAnalysis{Address: prom.Address, Query: "no_such_series", SuccessCondition: "result > 0"}, "returned 0 samples"},
		{v1alpha1.PrometheusAnalysis{Address: prom.Address, Query: "sum(", SuccessCondition: "result > 0"}, "parse error"},
		{v1alpha1.PrometheusAnalysis{Address: prom.Address, Query: "test_error_ratio[1m]", SuccessCondition: "result > 0"}, "matrix"},
		{v1alpha1.PrometheusAnalysis{Address: prom.Address, Query: "up", SuccessCondition: "exec(result)"}, "not a comparison"},
	} {
		st := p.Measure(t.Context(), &v1alpha1.GateAnalysis{Prometheus: &tc.a}, analysis.State{})
		if st.Phase != v1alpha1.AnalysisInconclusive || !strings.Contains(st.Message, tc.want) {
			t.Errorf("%s on %s: %+v, want Inconclusive saying %q", tc.a.Query, tc.a.Address, st, tc.want)
		}
	}
	down := &analysis.Measurer{PrometheusAddresses: []string{"http://127.0.0.1:1"}}
	if st := down.Measure(t.Context(), &v1alpha1.GateAnalysis{Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://127.0.0.1:1", Query: "up",
		SuccessCondition: "result > 0"}}, analysis.State{}); st.Phase != v1alpha1.AnalysisInconclusive {
		t.Errorf("an unreachable server: %+v", st)
	}
}

func TestValidateAddress(t *testing.T) {
	for _, ok := range []string{"http://prometheus:9090", "https://p.example/prom"} {
		if err := analysis.ValidateAddress(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "prometheus:9090", "file:///etc/passwd", "http://user:pw@p:9090", "http://p:9090/?x=1", "http://"} {
		if err := analysis.ValidateAddress(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A webhook is sent the rollout's state and its verdict is read; what is not
// a verdict is inconclusive, and a URL outside the allowed prefixes is never
// called.
func TestMeasure_Webhook(t *testing.T) {
	var got atomic.Value
	answer := atomic.Value{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var st analysis.State
		if err := json.NewDecoder(r.Body).Decode(&st); err == nil && r.Method == http.MethodPost {
			got.Store(st)
		}
		a := answer.Load().([2]string)
		if a[0] == "500" {
			w.WriteHeader(http.StatusInternalServerError)
		}
		fmt.Fprint(w, a[1])
	}))
	defer hook.Close()
	m := &analysis.Measurer{WebhookPrefixes: []string{hook.URL + "/lockstep"}}
	state := analysis.State{Kind: "PodCliqueSet", Namespace: "ns", Name: "web", Gate: "replicas-1", Revision: "web-v2", Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 3}
	call := func(url string) v1alpha1.AnalysisStatus {
		return m.Measure(t.Context(), &v1alpha1.GateAnalysis{Webhook: &v1alpha1.WebhookAnalysis{URL: url}}, state)
	}
	for _, tc := range []struct {
		code, body string
		phase      v1alpha1.AnalysisPhase
		message    string
	}{
		{"200", `{"result":"pass","message":"error budget fine"}`, v1alpha1.AnalysisPassed, "error budget fine"},
		{"200", `{"result":"fail","message":"5xx at 4%"}`, v1alpha1.AnalysisFailed, "5xx at 4%"},
		{"200", `{"result":"inconclusive"}`, v1alpha1.AnalysisInconclusive, ""},
		{"200", `{"result":"maybe"}`, v1alpha1.AnalysisInconclusive, "want pass, fail or inconclusive"},
		{"200", `not json`, v1alpha1.AnalysisInconclusive, "not a verdict"},
		{"500", `{"result":"fail"}`, v1alpha1.AnalysisInconclusive, "500 Internal Server Error, not a verdict"},
	} {
		answer.Store([2]string{tc.code, tc.body})
		st := call(hook.URL + "/lockstep/verdict")
		if st.Phase != tc.phase || !strings.Contains(st.Message, tc.message) {
			t.Errorf("%s %s: %+v, want %s saying %q", tc.code, tc.body, st, tc.phase, tc.message)
		}
	}
	if s, _ := got.Load().(analysis.State); s != state {
		t.Errorf("the webhook was sent %+v, want %+v", s, state)
	}
	got.Store(analysis.State{})
	answer.Store([2]string{"200", `{"result":"pass"}`})
	for _, off := range []string{hook.URL + "/lockstep-evil", hook.URL + "/other", "http://127.0.0.2:1/lockstep/x"} {
		if st := call(off); st.Phase != v1alpha1.AnalysisInconclusive || !strings.Contains(st.Message, "may not call") {
			t.Errorf("%s: %+v", off, st)
		}
	}
	if s, _ := got.Load().(analysis.State); s != (analysis.State{}) {
		t.Errorf("a URL outside the prefixes was called: %+v", s)
	}
}

func TestWebhookAllowed(t *testing.T) {
	prefixes := []string{"https://hooks.example/lockstep/", "http://gate.internal"}
	for u, want := range map[string]bool{
		"https://hooks.example/lockstep":        true,
		"https://hooks.example/lockstep/a/b":    true,
		"https://hooks.example/lockstep-evil":   false,
		"http://hooks.example/lockstep/a":       false,
		"https://hooks.example.evil/lockstep/a": false,
		"http://gate.internal/anything":         true,
		"http://gate.internal:8080/anything":    false,
		"https://user@hooks.example/lockstep/a": false,
		"https://hooks.example/lockstep/a?x=1":  false,
	} {
		if got := analysis.WebhookAllowed(u, prefixes); got != want {
			t.Errorf("%s: %v, want %v", u, got, want)
		}
	}
}
