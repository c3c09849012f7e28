package metrics

import (
	"context"
	"net/url"
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
	clientmetrics.RequestLatency = latency{request}
	clientmetrics.RateLimiterLatency = latency{waited}
}

// latency feeds client-go's latency callbacks into a histogram.
type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}
