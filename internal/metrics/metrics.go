// Package metrics defines Lockstep's rollout metrics. Reconcile health (rates,
// errors, latency, queue depth) comes from controller-runtime's own metrics on
// the same endpoint.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Rollouts are the metrics of PodCliqueSet rollouts, labelled by namespace and
// PodCliqueSet.
type Rollouts struct {
	InProgress   *prometheus.GaugeVec
	UpdatedUnits *prometheus.GaugeVec
	Duration     *prometheus.HistogramVec
	Steps        *prometheus.CounterVec
	Stalls       *prometheus.CounterVec
	// Rollbacks counts rollback requests (the lockstep.dev/rollback-to
	// annotation) by result: started, skipped (already at that revision) or
	// failed (no such revision).
	Rollbacks *prometheus.CounterVec
	// Gates counts gates' outcomes: passed, analysis_failed.
	Gates *prometheus.CounterVec
	// GateWait is how long rollouts waited at gates they passed.
	GateWait *prometheus.HistogramVec
}

// Outcomes of a gate, the values of Gates' outcome label.
const (
	GatePassed         = "passed"
	GateAnalysisFailed = "analysis_failed"
)

// Results of a rollback request, the values of Rollbacks' result label.
const (
	RollbackStarted = "started"
	RollbackSkipped = "skipped"
	RollbackFailed  = "failed"
)

// NewRollouts creates the rollout metrics and registers them with reg.
func NewRollouts(reg prometheus.Registerer) *Rollouts {
	labels := []string{"namespace", "podcliqueset"}
	m := &Rollouts{
		InProgress: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockstep_rollout_in_progress",
			Help: "1 while a PodCliqueSet is rolling to a new revision, else 0.",
		}, labels),
		UpdatedUnits: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lockstep_rollout_updated_units",
			Help: "Units (pods of standalone cliques, group replicas, replicas) on the update revision, summed over every level.",
		}, labels),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lockstep_rollout_duration_seconds",
			Help: "Time from a rollout's start to its end, by result: complete (every replica runs the new revision), " +
				"superseded (a newer spec replaced it), stalled (it passed its progress deadline).",
			Buckets: prometheus.ExponentialBuckets(5, 2, 12), // 5 s to about 3 h
		}, append(labels, "result")),
		Steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_rollout_steps_total",
			Help: "Rollout steps taken: a replica starting to update, a role step starting.",
		}, append(labels, "step")),
		Stalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_rollout_stalls_total",
			Help: "Times a rollout passed its progress deadline.",
		}, labels),
		Rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_rollbacks_total",
			Help: "Rollback requests by result: started, skipped (already at that revision), failed.",
		}, append(labels, "result")),
		Gates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lockstep_rollout_gates_total",
			Help: "Gates' outcomes: passed (the rollout went past it), analysis_failed (its analysis failed).",
		}, append(labels, "outcome")),
		GateWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "lockstep_rollout_gate_wait_seconds",
			Help:    "How long a rollout waited at a gate it passed, from reaching its checkpoint (soak, analysis and approval included).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1 s to about 9 h
		}, labels),
	}
	m.InProgress = register(reg, m.InProgress)
	m.Gates = register(reg, m.Gates)
	m.GateWait = register(reg, m.GateWait)
	m.UpdatedUnits = register(reg, m.UpdatedUnits)
	m.Duration = register(reg, m.Duration)
	m.Steps = register(reg, m.Steps)
	m.Stalls = register(reg, m.Stalls)
	m.Rollbacks = register(reg, m.Rollbacks)
	return m
}

// register adds c to reg, or returns the collector already there: an operator
// restarted inside one process (as tests do) keeps its series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(fmt.Sprintf("registering metric: %v", err))
	}
	return c
}

// Forget drops the series of a deleted PodCliqueSet.
func (m *Rollouts) Forget(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "podcliqueset": name}
	m.InProgress.Delete(l)
	m.UpdatedUnits.Delete(l)
	m.Duration.DeletePartialMatch(l)
	m.Stalls.Delete(l)
	m.Steps.DeletePartialMatch(l)
	m.Rollbacks.DeletePartialMatch(l)
	m.Gates.DeletePartialMatch(l)
	m.GateWait.Delete(l)
}

// Rollback counts a rollback request of a PodCliqueSet with its result.
func (m *Rollouts) Rollback(namespace, name, result string) {
	m.Rollbacks.WithLabelValues(namespace, name, result).Inc()
}

// LeaderOnly turns a manager's Elected channel into State.Elected.
func LeaderOnly(elected <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}
}
