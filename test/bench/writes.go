// Package bench measures rollouts on a local cluster: how long the Deployment
// controller and Lockstep take to roll the same pods under the same budget, and
// how many writes each makes, read from the apiserver's own metrics. It backs
// `make bench-rollout` and the short version the e2e suite runs.
package bench

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lockstep-dev/lockstep/internal/metrics"
)

// Writes counts apiserver write requests by resource ("pods", "pods/status",
// "podcliques.lockstep.dev/status", ...).
type Writes map[string]float64

// writeVerbs are the verbs that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true}

// IsWriteVerb reports whether a metric's verb (the apiserver's or client-go's
// label) changes state.
func IsWriteVerb(verb string) bool { return writeVerbs[verb] }

// ScrapeAPIServer reads the apiserver's /metrics.
func ScrapeAPIServer(ctx context.Context, cfg *rest.Config) (map[string]*dto.MetricFamily, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("parsing the apiserver's metrics: %w", err)
	}
	return families, nil
}

// ScrapeWrites reads apiserver_request_total from the apiserver's /metrics.
func ScrapeWrites(ctx context.Context, cfg *rest.Config) (Writes, error) {
	families, err := ScrapeAPIServer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	w := Writes{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return w, nil
	}
	for _, m := range fam.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if !writeVerbs[l["verb"]] {
			continue
		}
		w[metrics.ResourceKey(l["group"], l["resource"], l["subresource"])] += m.GetCounter().GetValue()
	}
	return w, nil
}

// Minus is what happened between an earlier scrape and this one.
func (w Writes) Minus(earlier Writes) Writes { return Growth(w, earlier) }

// Growth is what counters by name rose by since an earlier reading: the
// names that rose, with how much.
func Growth[M ~map[string]float64](now, earlier M) M {
	out := M{}
	for k, v := range now {
		if d := v - earlier[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// lifecycle are the writes every rollout causes whoever drives it: the
// scheduler binding pods, the node agent (kwok) reporting their status, node
// heartbeats and leader leases.
func lifecycle(key string) bool {
	switch key {
	case "pods/binding", "pods/status", "nodes/status", "nodes", "leases.coordination.k8s.io":
		return true
	}
	return false
}

// endpoints are the writes kube-controller-manager makes to keep a Service's
// endpoints: a PodCliqueSet replica's headless Service (for its pods' DNS
// names) has them, a bare Deployment has none.
func endpoints(key string) bool {
	return key == "endpoints" || key == "endpointslices.discovery.k8s.io"
}

// events are Event writes, core/v1 and events.k8s.io alike: every component
// writes them (the scheduler one per pod it binds), throttled and merged by
// each client's event broadcaster.
func events(key string) bool {
	return key == "events" || key == "events.events.k8s.io"
}

// Controller is the sum of the writes the rollout's controller made itself:
// everything but the pod lifecycle's and the Service endpoints'.
func (w Writes) Controller() float64 {
	return w.sum(func(k string) bool { return !lifecycle(k) && !endpoints(k) })
}

// Objects is Controller without the Event writes: what the controller wrote
// to the objects it manages (and the harness's own writes to them).
func (w Writes) Objects() float64 { return w.sum(object) }

// Events is the sum of the Event writes.
func (w Writes) Events() float64 { return w.sum(events) }

// Plus is both counts together.
func (w Writes) Plus(other Writes) Writes {
	out := maps.Clone(w)
	if out == nil {
		out = Writes{}
	}
	for k, v := range other {
		out[k] += v
	}
	return out
}

// object keeps the writes Objects counts.
func object(key string) bool { return !lifecycle(key) && !endpoints(key) && !events(key) }

// filter keeps the writes to the resources keep accepts.
func (w Writes) filter(keep func(string) bool) Writes {
	out := Writes{}
	for k, v := range w {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// WithoutLifecycle leaves out the pod lifecycle's writes.
func (w Writes) WithoutLifecycle() Writes {
	return w.filter(func(k string) bool { return !lifecycle(k) })
}

// Lifecycle is the sum of the pod lifecycle's writes.
func (w Writes) Lifecycle() float64 { return w.sum(lifecycle) }

// Endpoints is the sum of the Service endpoints' writes.
func (w Writes) Endpoints() float64 { return w.sum(endpoints) }

func (w Writes) sum(keep func(string) bool) float64 {
	n := 0.0
	for k, v := range w {
		if keep(k) {
			n += v
		}
	}
	return n
}

// String lists the writes by resource, most first.
func (w Writes) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if w[keys[i]] != w[keys[j]] {
			return w[keys[i]] > w[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
	}
	return strings.Join(parts, ", ")
}

// SplitSettled splits what the operator wrote over a window of a settled
// cluster (by resource, from its own lockstep_client_writes_total) into the
// writes the window caused and the late Event writes it did not: client-go
// writes an Event series' final count once, about six minutes after the
// series' last occurrence, so Events recorded long before may be written now.
// An Event write counts as late only when the operator recorded no Event in
// the window (lockstep_events_recorded_total): a recorded one is a decision.
func SplitSettled(wrote Writes, recorded float64) (settled, late float64) {
	all := wrote.sum(func(string) bool { return true })
	if recorded == 0 {
		late = wrote.Events()
	}
	return all - late, late
}
