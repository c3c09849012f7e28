package federatedworkload

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

var (
	// stageDuration is how long stages took from their start until their
	// clusters were complete and soaked: the time at the gate after them is
	// not counted.
	stageDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "lockstep_fleet_stage_duration_seconds",
		Help:    "How long a FederatedWorkload rollout stage took from its start until its clusters were complete for minSuccessTime; the time at the gate after it is not counted.",
		Buckets: prometheus.ExponentialBuckets(5, 2, 12),
	})
	// stagesEnded counts stages that ended, by outcome.
	stagesEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockstep_fleet_stages_total",
		Help: "FederatedWorkload rollout stages that ended, by outcome: succeeded (gate passed), failed (more clusters past progressDeadline than maxFailures allows).",
	}, []string{"outcome"})
)

func init() {
	crmetrics.Registry.MustRegister(stageDuration, stagesEnded)
	// both series from the start, so that a rate over them reads 0, not nothing
	stagesEnded.WithLabelValues("succeeded")
	stagesEnded.WithLabelValues("failed")
}

// recordStages counts the stages a round ended: in after, succeeded or
// failed, and not so in before (the same rollout's stages, by name).
func recordStages(before, after []fleetv1alpha1.StageStatus) {
	was := make(map[string]fleetv1alpha1.StagePhase, len(before))
	for _, s := range before {
		was[s.Name] = s.Phase
	}
	for _, s := range after {
		if s.Phase == was[s.Name] {
			continue
		}
		switch s.Phase {
		case fleetv1alpha1.StageSucceeded:
			stagesEnded.WithLabelValues("succeeded").Inc()
			if s.StartedAt != nil && s.CompletedAt != nil {
				stageDuration.Observe(s.CompletedAt.Sub(s.StartedAt.Time).Seconds())
			}
		case fleetv1alpha1.StageFailed:
			stagesEnded.WithLabelValues("failed").Inc()
		}
	}
}
