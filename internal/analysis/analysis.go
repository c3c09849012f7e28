// Package analysis runs the measurements of rollout gates: PromQL instant
// queries and webhook calls, only to the servers the operator is allowed to
// call.
// What a measurement means for the rollout is decided by package gate.
package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// maxResponse bounds what one query may return.
const maxResponse = 4 << 20

// queryTimeout bounds one query.
const queryTimeout = 10 * time.Second

// Measurer measures gates' analyses against the servers the operator is
// allowed to call.
type Measurer struct {
	// PrometheusAddresses are the base URLs a Prometheus analysis may name
	// (--analysis-prometheus-address); none allows nothing.
	PrometheusAddresses []string
	// WebhookPrefixes are the URL prefixes a webhook analysis may call
	// (--analysis-webhook-url-prefix); none allows nothing.
	WebhookPrefixes []string
	// Client does the requests; nil is a client that follows no redirect.
	Client *http.Client
	Now    func() time.Time
}

// State is the rollout's state a webhook is sent.
type State struct {
	Kind              string `json:"kind"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Gate              string `json:"gate"`
	Revision          string `json:"revision"`
	Replicas          int32  `json:"replicas"`
	UpdatedReplicas   int32  `json:"updatedReplicas"`
	AvailableReplicas int32  `json:"availableReplicas"`
}

// NormalizeAddress is the form addresses are compared in: no trailing slash.
func NormalizeAddress(a string) string { return strings.TrimRight(strings.TrimSpace(a), "/") }

// ValidateAddress checks that a is an http(s) URL without credentials, query
// or fragment.
func ValidateAddress(a string) error {
	u, err := url.Parse(a)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: the scheme must be http or https", a)
	case u.Host == "":
		return fmt.Errorf("%q: no host", a)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: no credentials, query or fragment", a)
	}
	return nil
}

// Measure runs a's query or calls its webhook. Whatever goes wrong on the
// way is Inconclusive: only an answer that says fail fails.
func (m *Measurer) Measure(ctx context.Context, a *v1alpha1.GateAnalysis, st State) v1alpha1.AnalysisStatus {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	out := v1alpha1.AnalysisStatus{Phase: v1alpha1.AnalysisInconclusive, MeasuredAt: metav1.NewTime(now())}
	switch {
	case a.Prometheus != nil:
		m.prometheus(ctx, a.Prometheus, &out)
	case a.Webhook != nil:
		m.webhook(ctx, a.Webhook, st, &out)
	default:
		out.Message = "the analysis names neither prometheus nor webhook"
	}
	return out
}

func (m *Measurer) client() *http.Client {
	if m.Client != nil {
		return m.Client
	}
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (m *Measurer) prometheus(ctx context.Context, a *v1alpha1.PrometheusAnalysis, st *v1alpha1.AnalysisStatus) {
	addr := NormalizeAddress(a.Address)
	if !slices.Contains(m.PrometheusAddresses, addr) {
		st.Message = fmt.Sprintf("the operator may not query %s: allow it with --analysis-prometheus-address", addr)
		return
	}
	cond, err := gate.ParseCondition(a.SuccessCondition)
	if err != nil {
		st.Message = err.Error()
		return
	}
	samples, err := m.query(ctx, addr, a.Query)
	if err != nil {
		st.Message = err.Error()
		return
	}
	met, v, ok := cond.Met(samples)
	if !ok {
		st.Message = fmt.Sprintf("the query returned %d samples: no result[%d] to compare", len(samples), cond.Index)
		return
	}
	st.Value = strconv.FormatFloat(v, 'g', -1, 64)
	st.Message = fmt.Sprintf("result[%d] = %s, want %s %s", cond.Index, st.Value, cond.Op, strconv.FormatFloat(cond.Value, 'g', -1, 64))
	st.Phase = v1alpha1.AnalysisFailed
	if met {
		st.Phase = v1alpha1.AnalysisPassed
	}
}

// WebhookAllowed reports whether u is under one of prefixes, compared as
// parsed URLs (scheme, host and a path prefix at a segment boundary), so that
// "https://hooks.example/lockstep" allows neither
// "https://hooks.example/lockstep-evil" nor "https://hooks.example.evil/".
func WebhookAllowed(u string, prefixes []string) bool {
	target, err := url.Parse(u)
	if err != nil || ValidateAddress(u) != nil {
		return false
	}
	for _, p := range prefixes {
		pre, err := url.Parse(p)
		if err != nil || pre.Scheme != target.Scheme || pre.Host != target.Host {
			continue
		}
		base := strings.TrimRight(pre.Path, "/")
		if target.Path == base || strings.HasPrefix(target.Path, base+"/") {
			return true
		}
	}
	return false
}

// verdict is a webhook's answer.
type verdict struct {
	Result  string `json:"result"`
	Message string `json:"message"`
}

func (m *Measurer) webhook(ctx context.Context, w *v1alpha1.WebhookAnalysis, state State, st *v1alpha1.AnalysisStatus) {
	if !WebhookAllowed(w.URL, m.WebhookPrefixes) {
		st.Message = fmt.Sprintf("the operator may not call %s: allow its prefix with --analysis-webhook-url-prefix", w.URL)
		return
	}
	body, err := json.Marshal(state)
	if err != nil {
		st.Message = err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		st.Message = err.Error()
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client().Do(req)
	if err != nil {
		st.Message = fmt.Sprintf("calling %s: %v", w.URL, err)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		st.Message = fmt.Sprintf("reading %s's answer: %v", w.URL, err)
		return
	}
	var v verdict
	if resp.StatusCode < 200 || resp.StatusCode > 299 || json.Unmarshal(answer, &v) != nil {
		st.Message = fmt.Sprintf("%s answered %s, not a verdict", w.URL, resp.Status)
		return
	}
	st.Value, st.Message = v.Result, truncate(v.Message, 256)
	switch v.Result {
	case "pass":
		st.Phase = v1alpha1.AnalysisPassed
	case "fail":
		st.Phase = v1alpha1.AnalysisFailed
	case "inconclusive":
	default:
		st.Value, st.Message = "", fmt.Sprintf("%s answered result %q; want pass, fail or inconclusive", w.URL, truncate(v.Result, 32))
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// response is the part of Prometheus's /api/v1/query answer read here.
type response struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// query runs an instant query and returns its samples: a scalar's value, or
// a vector's values ordered by their label sets.
func (m *Measurer) query(ctx context.Context, addr, q string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/api/v1/query?"+url.Values{"query": {q}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("reading %s's answer: %w", addr, err)
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s answered %s, not a query result", addr, resp.Status)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", addr, r.Error)
	}
	switch r.Data.ResultType {
	case "scalar":
		var s [2]any
		if err := json.Unmarshal(r.Data.Result, &s); err != nil {
			return nil, fmt.Errorf("a scalar from %s: %w", addr, err)
		}
		v, err := sampleValue(s[1])
		if err != nil {
			return nil, err
		}
		return []float64{v}, nil
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(r.Data.Result, &vec); err != nil {
			return nil, fmt.Errorf("a vector from %s: %w", addr, err)
		}
		sort.SliceStable(vec, func(i, j int) bool { return labelString(vec[i].Metric) < labelString(vec[j].Metric) })
		out := make([]float64, 0, len(vec))
		for _, s := range vec {
			v, err := sampleValue(s.Value[1])
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the query gave a %s; want a scalar or an instant vector", r.Data.ResultType)
}

func sampleValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, errors.New("a sample value that is not a string")
	}
	return strconv.ParseFloat(s, 64)
}

func labelString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + ",")
	}
	return b.String()
}
