//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/internal/dashview"
)

// series are the lockstep_podcliqueset_* samples of one PodCliqueSet, keyed
// by the sample's text up to its value, e.g.
// `lockstep_podcliqueset_role_units_updated{namespace="x",podcliqueset="y",role="decode"}`.
type series map[string]float64

func (s series) get(name, role string) (float64, bool) {
	for k, v := range s {
		if strings.HasPrefix(k, name+"{") && (role == "" || strings.Contains(k, `role="`+role+`"`)) {
			return v, true
		}
	}
	return 0, false
}

// scrapeState reads the operator's /metrics and keeps the state series of one
// PodCliqueSet.
func scrapeState(ctx context.Context, namespace, name string) (series, error) {
	body, err := testOperator.metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := series{}
	match := fmt.Sprintf(`namespace=%q,podcliqueset=%q`, namespace, name)
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "lockstep_podcliqueset_") || !strings.Contains(line, match) {
			continue
		}
		i := strings.LastIndex(line, " ")
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, nil
}

// The per-role series move with a role-ordered rollout (examples/role-ordered-pd.yaml):
// before it every role is fully updated; mid-rollout the operator reports a
// role step and a role with some but not all of its units updated; at the end
// every role is updated again and no step is reported.
func TestMetrics_PerRoleSeriesFollowARollout(t *testing.T) {
	s := newScene(t, pdNodes, loadExampleAsApplied(t, "role-ordered-pd.yaml"))
	s.awaitLayout("the example to become Available", 2*time.Minute, pdLayout("v1"))
	roles := map[string]float64{"prefill": 4, "decode": 6} // group replicas over 2 PCS replicas

	fullyUpdated := func(ctx context.Context) (bool, string, error) {
		got, err := scrapeState(ctx, s.ns, s.name)
		if err != nil {
			return false, err.Error(), nil
		}
		for role, desired := range roles {
			d, _ := got.get("lockstep_podcliqueset_role_units_desired", role)
			u, _ := got.get("lockstep_podcliqueset_role_units_updated", role)
			a, _ := got.get("lockstep_podcliqueset_role_units_available", role)
			if d != desired || u != desired || a != desired {
				return false, fmt.Sprintf("%s: desired %v updated %v available %v", role, d, u, a), nil
			}
		}
		if _, stepping := got.get("lockstep_podcliqueset_role_step", ""); stepping {
			return false, "a role step is still reported", nil
		}
		return true, "", nil
	}
	s.mustAwait("every role to be reported updated and available", time.Minute, fullyUpdated)

	s.update(setImageTag("v2"))
	record := recordSeries(t, s.ns, s.name)
	var mid series
	s.mustAwait("a scrape mid-rollout with a role step and a partly updated role", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		got, err := scrapeState(ctx, s.ns, s.name)
		if err != nil {
			return false, err.Error(), nil
		}
		step, stepping := got.get("lockstep_podcliqueset_role_step", "")
		since, clock := got.get("lockstep_podcliqueset_seconds_since_last_progress", "")
		for role, desired := range roles {
			u, _ := got.get("lockstep_podcliqueset_role_units_updated", role)
			if stepping && clock && since >= 0 && u > 0 && u < desired {
				mid = got
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("step %v (%v), progress clock %v, series %v", step, stepping, clock, got), nil
	})
	for _, k := range slices.Sorted(maps.Keys(mid)) {
		t.Logf("mid-rollout: %s %v", k, mid[k])
	}
	s.mustAwait("every role to be reported updated again", 4*time.Minute, fullyUpdated)
	samples := record()
	if path := os.Getenv(envDashboardSVG); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := dashview.Write(f, s.name, samples); err != nil {
			t.Fatal(err)
		}
		t.Logf("the dashboard's series of this rollout (%d scrapes) drawn in %s", len(samples), path)
	}
}

// envDashboardSVG, when set, names the file TestMetrics_PerRoleSeriesFollowARollout
// draws its scrapes into (`make dashboard-picture`).
const envDashboardSVG = "LOCKSTEP_DASHBOARD_SVG"

// recordSeries scrapes the operator every 250 ms until the returned function
// is called, which returns the samples.
func recordSeries(t *testing.T, namespace, name string) func() []dashview.Sample {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan []dashview.Sample, 1)
	start := time.Now()
	go func() {
		var out []dashview.Sample
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if got, err := scrapeState(ctx, namespace, name); err == nil {
				out = append(out, dashview.Sample{At: time.Since(start), Series: got})
			}
			select {
			case <-ctx.Done():
				done <- out
				return
			case <-tick.C:
			}
		}
	}()
	return func() []dashview.Sample {
		cancel()
		return <-done
	}
}
