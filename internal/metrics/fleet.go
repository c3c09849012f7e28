package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// Fleet reports the hub's state at scrape time, in the same style as State:
// every FederatedWorkload, each of its members (bounded by the status, which
// lists at most 1,000 clusters, and in practice by the fleet's size) and every
// MemberCluster. It reads the hub's cache on every scrape; only the leading
// hub reports.
type Fleet struct {
	Reader  client.Reader
	Elected func() bool

	scrapeErrors prometheus.Counter
}

var (
	fwLabels     = []string{"namespace", "federatedworkload"}
	memberLabels = []string{"namespace", "federatedworkload", "cluster"}

	descFWDesired   = newDesc("lockstep_federatedworkload_replicas_desired", "spec.replicas of the FederatedWorkload: units over the whole fleet.", fwLabels)
	descFWUpdated   = newDesc("lockstep_federatedworkload_replicas_updated", "Units on the update revision over all members.", fwLabels)
	descFWAvailable = newDesc("lockstep_federatedworkload_replicas_available", "Available units over all members.", fwLabels)
	descFWPaused    = newDesc("lockstep_federatedworkload_paused", "1 when spec.rolloutStrategy.paused holds the rollout, else 0.", fwLabels)
	descFWCondition = newDesc("lockstep_federatedworkload_status_condition", "The FederatedWorkload's status conditions: 1 on the series whose status is the current one.",
		[]string{"namespace", "federatedworkload", "condition", "status", "reason"})

	descMemberDesired        = newDesc("lockstep_federatedworkload_member_replicas_desired", "A member's share of the FederatedWorkload's units.", memberLabels)
	descMemberUpdated        = newDesc("lockstep_federatedworkload_member_replicas_updated", "A member's units on the update revision, as the hub last read them.", memberLabels)
	descMemberAvailable      = newDesc("lockstep_federatedworkload_member_replicas_available", "A member's available units, as the hub last read them.", memberLabels)
	descMemberStarted        = newDesc("lockstep_federatedworkload_member_grant_started", "1 when the member holds the new revision.", memberLabels)
	descMemberMaxUnavailable = newDesc("lockstep_federatedworkload_member_grant_max_unavailable", "maxUnavailable granted to a Deployment member.", memberLabels)
	descMemberMaxSurge       = newDesc("lockstep_federatedworkload_member_grant_max_surge", "maxSurge granted to a Deployment member.", memberLabels)
	descMemberPartition      = newDesc("lockstep_federatedworkload_member_grant_partition", "Partition granted to a StatefulSet or PodCliqueSet member.", memberLabels)
	descMemberWaiting        = newDesc("lockstep_federatedworkload_member_waiting", "1 while the rollout waits for this member (its status says why).", memberLabels)

	descClusterCondition = newDesc("lockstep_membercluster_status_condition", "A MemberCluster's status conditions: 1 on the series whose status is the current one.",
		[]string{"cluster", "condition", "status", "reason"})

	fleetDescs = []*prometheus.Desc{
		descFWDesired, descFWUpdated, descFWAvailable, descFWPaused, descFWCondition,
		descMemberDesired, descMemberUpdated, descMemberAvailable, descMemberStarted, descMemberMaxUnavailable,
		descMemberMaxSurge, descMemberPartition, descMemberWaiting, descClusterCondition,
	}
)

// NewFleet returns the hub's collector; register it with RegisterState.
func NewFleet(reader client.Reader, elected func() bool) *Fleet {
	return &Fleet{Reader: reader, Elected: elected, scrapeErrors: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lockstep_fleet_state_scrape_errors_total",
		Help: "Scrapes whose fleet state could not be read from the hub's cache.",
	})}
}

// Describe implements prometheus.Collector.
func (f *Fleet) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range fleetDescs {
		ch <- d
	}
	f.scrapeErrors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (f *Fleet) Collect(ch chan<- prometheus.Metric) {
	defer f.scrapeErrors.Collect(ch)
	if f.Elected != nil && !f.Elected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var fws fleetv1alpha1.FederatedWorkloadList
	var mcs fleetv1alpha1.MemberClusterList
	if f.Reader.List(ctx, &fws) != nil || f.Reader.List(ctx, &mcs) != nil {
		f.scrapeErrors.Inc()
		return
	}
	for i := range fws.Items {
		collectFederatedWorkload(ch, &fws.Items[i])
	}
	for i := range mcs.Items {
		mc := &mcs.Items[i]
		conditionSeries(ch, descClusterCondition, []string{mc.Name}, mc.Status.Conditions)
	}
}

func collectFederatedWorkload(ch chan<- prometheus.Metric, fw *fleetv1alpha1.FederatedWorkload) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{fw.Namespace, fw.Name}, labels...)...)
	}
	st := &fw.Status
	gauge(descFWDesired, float64(fw.Spec.Replicas))
	gauge(descFWUpdated, float64(st.UpdatedReplicas))
	gauge(descFWAvailable, float64(st.AvailableReplicas))
	gauge(descFWPaused, boolValue(fw.Spec.RolloutStrategy.Paused))
	conditionSeries(ch, descFWCondition, []string{fw.Namespace, fw.Name}, st.Conditions)
	for _, m := range st.Clusters {
		gauge(descMemberDesired, float64(m.DesiredReplicas), m.Name)
		gauge(descMemberUpdated, float64(m.UpdatedReplicas), m.Name)
		gauge(descMemberAvailable, float64(m.AvailableReplicas), m.Name)
		gauge(descMemberStarted, boolValue(m.Grant.Started), m.Name)
		gauge(descMemberMaxUnavailable, float64(m.Grant.MaxUnavailable), m.Name)
		gauge(descMemberMaxSurge, float64(m.Grant.MaxSurge), m.Name)
		gauge(descMemberPartition, float64(m.Grant.Partition), m.Name)
		gauge(descMemberWaiting, boolValue(m.Waiting != ""), m.Name)
	}
}
