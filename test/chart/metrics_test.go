package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/yaml"

	// The hub's own histograms register with controller-runtime's registry
	// when its package loads; reconcileOnce gathers them from there.
	_ "github.com/lockstep-dev/lockstep/internal/hub/federatedworkload"
	"github.com/lockstep-dev/lockstep/internal/metrics"
)

var (
	fqName     = regexp.MustCompile(`fqName: "([^"]+)"`)
	metricName = regexp.MustCompile(`\b(?:lockstep|controller_runtime|workqueue)_[a-z0-9_]+\b`)
)

// operatorMetricNames are the series names the operator's and the hub's
// /metrics can carry: Lockstep's collectors, the hub's histograms, and what
// controller-runtime registers for a controller that reconciled once.
func operatorMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	add := func(c prometheus.Collector, histogram bool) {
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			names[m[1]] = true
			if histogram {
				names[m[1]+"_bucket"], names[m[1]+"_sum"], names[m[1]+"_count"] = true, true, true
			}
		}
	}
	r := metrics.NewRollouts(prometheus.NewRegistry())
	for _, c := range []prometheus.Collector{r.InProgress, r.UpdatedUnits, r.Steps, r.Stalls, r.Rollbacks} {
		add(c, false)
	}
	add(r.Duration, true)
	add(metrics.NewState(nil, nil, time.Now), false)
	add(metrics.NewFleet(nil, nil), false) // the hub's, from the same chart

	for _, f := range reconcileOnce(t) {
		names[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			names[f.GetName()+"_bucket"], names[f.GetName()+"_sum"], names[f.GetName()+"_count"] = true, true, true
		}
	}
	return names
}

// reconcileOnce runs a controller-runtime controller through one reconcile
// and returns what the controller-runtime registry then holds.
func reconcileOnce(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	done := make(chan struct{})
	c, err := controller.NewTypedUnmanaged("podcliqueset", controller.TypedOptions[reconcile.Request]{
		SkipNameValidation: ptr.To(true),
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			close(done)
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan event.TypedGenericEvent[string], 1)
	events <- event.TypedGenericEvent[string]{Object: "one"}
	if err := c.Watch(source.TypedChannel(events, handler.TypedFuncs[string, reconcile.Request]{
		GenericFunc: func(_ context.Context, _ event.TypedGenericEvent[string], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{})
		},
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- c.Start(ctx) }()
	select {
	case <-done:
	case err := <-stopped:
		t.Fatalf("controller stopped before reconciling: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no reconcile within a minute")
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// exprs returns every "expr" string in a decoded JSON or YAML document.
func exprs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expr" {
				out = append(out, s)
				continue
			}
			out = append(out, exprs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, exprs(x)...)
		}
	}
	return out
}

func namesIn(queries []string) []string {
	set := map[string]bool{}
	for _, q := range queries {
		for _, n := range metricName.FindAllString(q, -1) {
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// dashboard is the chart's dashboard, decoded.
func dashboard(t *testing.T) any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "lockstep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	return d
}

func TestDashboardAndAlerts_UseOnlyMetricsTheOperatorRegisters(t *testing.T) {
	registered := operatorMetricNames(t)
	dashboard := dashboard(t)
	rule := find(t, objects(t, mustRender(t, "metrics.prometheusRule.enabled=true")), "PrometheusRule", "lockstep-alerts")

	for source, queries := range map[string][]string{
		"dashboards/lockstep.json": exprs(dashboard),
		"PrometheusRule":           exprs(rule.Object),
	} {
		used := namesIn(queries)
		if len(queries) == 0 || len(used) == 0 {
			t.Fatalf("%s: found %d queries naming %d metrics", source, len(queries), len(used))
		}
		for _, n := range used {
			if !registered[n] {
				t.Errorf("%s uses %s, which the operator does not register", source, n)
			}
		}
	}

	// Every per-role series, and every series of a FederatedWorkload and of
	// its members, is on the dashboard: it is what users chart.
	dashboardNames := map[string]bool{}
	for _, n := range namesIn(exprs(dashboard)) {
		dashboardNames[n] = true
	}
	charted := regexp.MustCompile(`^lockstep_(podcliqueset_role_|federatedworkload_)`)
	for n := range registered {
		if charted.MatchString(n) && !dashboardNames[n] {
			t.Errorf("the dashboard does not chart %s", n)
		}
	}
}

// grafanaVariable is a dashboard variable in a query ($namespace,
// ${datasource}, $__rate_interval).
var grafanaVariable = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)

// filledIn is q with its variables replaced: Grafana's own ($__interval,
// $__rate_interval) by a duration, the dashboard's by a label value.
func filledIn(q string) string {
	return grafanaVariable.ReplaceAllStringFunc(q, func(v string) string {
		if strings.HasPrefix(strings.Trim(v, "${}"), "__") {
			return "5m"
		}
		return "x"
	})
}

// Every dashboard query is PromQL that Prometheus parses, its variables
// replaced: promtool checks them as the expressions of recording rules.
func TestDashboard_QueriesParse(t *testing.T) {
	promtool := tool(t, "promtool")
	var rules []map[string]string
	for i, q := range exprs(dashboard(t)) {
		rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:query_%d", i), "expr": filledIn(q)})
	}
	doc, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard.yaml")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, promtool, "check", "rules", path); err != nil {
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s", len(rules), err, out)
	}
}

func TestAlerts_PassPromtoolCheckAndUnitTests(t *testing.T) {
	promtool := tool(t, "promtool")
	rule := find(t, objects(t, mustRender(t, "metrics.prometheusRule.enabled=true")), "PrometheusRule", "lockstep-alerts")
	spec, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, promtool, "check", "rules", filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := run(t, promtool, "test", "rules", filepath.Join(dir, "alerts_test.yaml")); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
