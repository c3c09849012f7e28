package metrics

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// clientBuckets run from 1 ms to 32 s: fine enough to tell a 100 ms
// reconcile goal from what one request costs.
var clientBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// RegisterClientLatency adds, under the names Kubernetes' own components use,
// how long the operator's API requests take (rest_client_request_duration_seconds)
// and how long they waited for the client's own pacing first
// (rest_client_rate_limiter_duration_seconds, --kube-api-qps/--kube-api-burst).
// Together with the reconcile time they tell a slow apiserver from a client
// that needs a higher QPS. controller-runtime hands client-go only its request
// counter, so these are set here; call it once, before any client is made.
//
// It also counts the operator's writes by resource
// (lockstep_client_writes_total), which client-go's request counter does not
// tell: it is how a settled cluster's writes are told apart, for instance
// the Event series client-go closes minutes after their last occurrence from
// a reconcile that writes.
func RegisterClientLatency(reg prometheus.Registerer) {
	labels := []string{"verb", "host"}
	request := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "API request latency seen by the operator, by verb, from sending to the response.",
		Buckets: clientBuckets,
	}, labels))
	waited := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time an API request waited for the client's own rate limit (--kube-api-qps, --kube-api-burst) before it was sent.",
		Buckets: clientBuckets,
	}, labels))
	writes := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockstep_client_writes_total",
		Help: "API requests of the operator that change state, by resource (resource.group/subresource) and verb.",
	}, []string{"resource", "verb"}))
	clientmetrics.RequestLatency = latency{h: request, writes: writes}
	clientmetrics.RateLimiterLatency = latency{h: waited}
}

// latency feeds client-go's latency callbacks into a histogram and, when
// writes is set, counts the writes among them.
type latency struct {
	h      *prometheus.HistogramVec
	writes *prometheus.CounterVec
}

func (l latency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
	if l.writes != nil && verb != http.MethodGet && verb != http.MethodHead {
		l.writes.WithLabelValues(Resource(u.Path), verb).Inc()
	}
}

// Resource names the resource an API path is about as the apiserver's own
// metrics do: "pods", "replicasets.apps/status", "events.events.k8s.io".
// client-go hands the path with its names templated ({namespace}, {name});
// the shape is the same. A path that is no resource's is "other".
func Resource(path string) string {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		seg = seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		group, seg = seg[1], seg[3:]
	default:
		return "other"
	}
	// A namespaced resource's path starts with its namespace; a namespace's
	// own subresources (status, finalize) look the same but stop there.
	if len(seg) >= 3 && seg[0] == "namespaces" && (len(seg) > 3 || (seg[2] != "status" && seg[2] != "finalize")) {
		seg = seg[2:]
	}
	var sub string
	if len(seg) >= 3 {
		sub = seg[2]
	}
	return ResourceKey(group, seg[0], sub)
}

// ResourceKey names a resource as the apiserver's metrics label it (group,
// resource, subresource), in one string: "replicasets.apps/status".
func ResourceKey(group, resource, subresource string) string {
	k := resource
	if group != "" {
		k += "." + group
	}
	if subresource != "" {
		k += "/" + subresource
	}
	return k
}
