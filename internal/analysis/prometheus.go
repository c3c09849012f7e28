// Package analysis runs the measurements of rollout gates: PromQL instant
// queries against the Prometheus servers the operator is allowed to query.
// What a measurement means for the rollout is decided by package gate.
package analysis

import (
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

// Prometheus measures PrometheusAnalysis gates.
type Prometheus struct {
	// Allowed are the base URLs a gate may name (the operator's
	// --analysis-prometheus-address flags); none allows nothing.
	Allowed []string
	// Client does the requests; nil is a client that follows no redirect.
	Client *http.Client
	Now    func() time.Time
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

// Measure runs the query of a and compares its result. Whatever goes wrong
// on the way is Inconclusive: only a result that misses the condition fails.
func (p *Prometheus) Measure(ctx context.Context, a *v1alpha1.PrometheusAnalysis) v1alpha1.AnalysisStatus {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	st := v1alpha1.AnalysisStatus{Phase: v1alpha1.AnalysisInconclusive, MeasuredAt: metav1.NewTime(now())}
	addr := NormalizeAddress(a.Address)
	if !slices.Contains(p.Allowed, addr) {
		st.Message = fmt.Sprintf("the operator may not query %s: allow it with --analysis-prometheus-address", addr)
		return st
	}
	cond, err := gate.ParseCondition(a.SuccessCondition)
	if err != nil {
		st.Message = err.Error()
		return st
	}
	samples, err := p.query(ctx, addr, a.Query)
	if err != nil {
		st.Message = err.Error()
		return st
	}
	met, v, ok := cond.Met(samples)
	if !ok {
		st.Message = fmt.Sprintf("the query returned %d samples: no result[%d] to compare", len(samples), cond.Index)
		return st
	}
	st.Value = strconv.FormatFloat(v, 'g', -1, 64)
	st.Message = fmt.Sprintf("result[%d] = %s, want %s %s", cond.Index, st.Value, cond.Op, strconv.FormatFloat(cond.Value, 'g', -1, 64))
	st.Phase = v1alpha1.AnalysisFailed
	if met {
		st.Phase = v1alpha1.AnalysisPassed
	}
	return st
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
func (p *Prometheus) query(ctx context.Context, addr, q string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/api/v1/query?"+url.Values{"query": {q}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	c := p.Client
	if c == nil {
		c = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := c.Do(req)
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
