// Package narrate makes every Event a controller records also a structured log
// line, so that the operator's log alone tells what it did, to what and why:
// every action the controllers take (a pod or group replica created or
// deleted, a replica recreated, a rollout step) is recorded as an Event.
package narrate

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// recorded counts the Events the controllers record, by reason, when they
// record them. client-go writes them later, and an Event series' final
// count minutes after its last occurrence: this counter tells a settled
// operator's late Event writes from a new decision.
var recorded = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lockstep_events_recorded_total",
	Help: "Events the controllers recorded, by reason (each also one log line).",
}, []string{"reason"})

func init() { crmetrics.Registry.MustRegister(recorded) }

// Recorder records through inner and logs each event to log.
func Recorder(inner events.EventRecorder, log logr.Logger) events.EventRecorder {
	return &recorder{inner: inner, log: log}
}

type recorder struct {
	inner events.EventRecorder
	log   logr.Logger
}

// Eventf implements events.EventRecorder.
func (r *recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.inner.Eventf(regarding, related, eventtype, reason, action, note, args...)
	recorded.WithLabelValues(reason).Inc()
	kv := []any{"action", action, "reason", reason, "type", eventtype}
	kv = append(kv, objectKeys("object", regarding)...)
	kv = append(kv, objectKeys("related", related)...)
	r.log.Info(fmt.Sprintf(note, args...), kv...)
}

// objectKeys names an object as key/value pairs: its kind, namespace and name.
func objectKeys(prefix string, o runtime.Object) []any {
	if o == nil {
		return nil
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", o)
	}
	return []any{prefix, m.GetNamespace() + "/" + m.GetName(), prefix + "Kind", kind}
}

// Plan logs what a plan decided, at debug level (--log-level debug). summary
// is called only then: the inputs of every plan are costly to format.
func Plan(ctx context.Context, summary func() []any) {
	if l := log.FromContext(ctx).V(1); l.Enabled() {
		l.Info("plan", summary()...)
	}
}
