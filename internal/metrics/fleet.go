package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
)

// Fleet reports the hub's state at scrape time, in the same style as State:
// every FederatedWorkload, each of its members (bounded by the status, which
// lists at most 1,000 clusters, and in practice by the fleet's size) and every
// MemberCluster. It reads the hub's cache on every scrape; only the leading
// hub reports. What the status does not carry (the global budget as the
// planner charged it, the members it counted lost) comes from the workload's
// last round (RecordFleetRound), reported only while that workload is listed.
type Fleet struct {
	Reader  client.Reader
	Elected func() bool
	// Now is the clock of the gate waits; time.Now when nil.
	Now func() time.Time

	rounds       *fleetRounds
	scrapeErrors prometheus.Counter
}

var (
	fwLabels     = []string{"namespace", "federatedworkload"}
	memberLabels = []string{"namespace", "federatedworkload", "cluster"}

	descFWDesired   = newDesc("lockstep_federatedworkload_replicas_desired", "spec.replicas of the FederatedWorkload: units over the whole fleet.", fwLabels)
	descFWUpdated   = newDesc("lockstep_federatedworkload_replicas_updated", "Units on the update revision over all members.", fwLabels)
	descFWAvailable = newDesc("lockstep_federatedworkload_replicas_available", "Available units over all members.", fwLabels)
	descFWPaused    = newDesc("lockstep_federatedworkload_paused", "1 when spec.rolloutStrategy.paused holds the rollout, else 0.", fwLabels)
	descFWCurrent   = newDesc("lockstep_federatedworkload_replicas_current", "Units in all members, surge included (status.replicas).", fwLabels)
	descFWCondition = newDesc("lockstep_federatedworkload_status_condition", "The FederatedWorkload's status conditions: 1 on the series whose status is the current one.",
		[]string{"namespace", "federatedworkload", "condition", "status", "reason"})

	descFWMaxUnavailable = newDesc("lockstep_federatedworkload_budget_max_unavailable", "The global maxUnavailable in units, as the last round resolved it against spec.replicas.", fwLabels)
	descFWMaxSurge       = newDesc("lockstep_federatedworkload_budget_max_surge", "The global maxSurge in units, as the last round resolved it against spec.replicas.", fwLabels)
	descFWUnavailCharged = newDesc("lockstep_federatedworkload_budget_unavailable_charged",
		"Units the last round's grants may take down together: what the planner charged against maxUnavailable.", fwLabels)
	descFWSurgeCharged = newDesc("lockstep_federatedworkload_budget_surge_charged",
		"Units the last round's grants may run above replicas together: what the planner charged against maxSurge.", fwLabels)

	descMemberDesired        = newDesc("lockstep_federatedworkload_member_replicas_desired", "A member's share of the FederatedWorkload's units.", memberLabels)
	descMemberUpdated        = newDesc("lockstep_federatedworkload_member_replicas_updated", "A member's units on the update revision, as the hub last read them.", memberLabels)
	descMemberAvailable      = newDesc("lockstep_federatedworkload_member_replicas_available", "A member's available units, as the hub last read them.", memberLabels)
	descMemberStarted        = newDesc("lockstep_federatedworkload_member_grant_started", "1 when the member holds the new revision.", memberLabels)
	descMemberMaxUnavailable = newDesc("lockstep_federatedworkload_member_grant_max_unavailable", "maxUnavailable granted to a Deployment member.", memberLabels)
	descMemberMaxSurge       = newDesc("lockstep_federatedworkload_member_grant_max_surge", "maxSurge granted to a Deployment member.", memberLabels)
	descMemberPartition      = newDesc("lockstep_federatedworkload_member_grant_partition", "Partition granted to a StatefulSet or PodCliqueSet member.", memberLabels)
	descMemberWaiting        = newDesc("lockstep_federatedworkload_member_waiting", "1 while the rollout waits for this member (its status says why).", memberLabels)
	descMemberCurrent        = newDesc("lockstep_federatedworkload_member_replicas_current", "A member's units, surge included, as the hub last read them.", memberLabels)
	descMemberLost           = newDesc("lockstep_federatedworkload_member_lost",
		"1 when the last round counted the member lost (unreachable for longer than memberLostTimeoutSeconds: its whole share unavailable), else 0.", memberLabels)

	descFWGateWaiting = newDesc("lockstep_federatedworkload_gate_waiting_seconds",
		"Seconds the rollout has waited at the stage gate status.gate names; only while it waits. reason is Soaking, AwaitingConditions, AnalysisRunning, AwaitingApproval or AnalysisFailed.",
		[]string{"namespace", "federatedworkload", "gate", "reason"})
	descFWStage = newDesc("lockstep_federatedworkload_stage_phase", "1 on the phase each stage of the rollout is in (status.stages).",
		[]string{"namespace", "federatedworkload", "stage", "phase"})

	descClusterCondition = newDesc("lockstep_membercluster_status_condition", "A MemberCluster's status conditions: 1 on the series whose status is the current one.",
		[]string{"cluster", "condition", "status", "reason"})

	fleetDescs = []*prometheus.Desc{
		descFWDesired, descFWUpdated, descFWAvailable, descFWPaused, descFWCurrent, descFWCondition,
		descFWMaxUnavailable, descFWMaxSurge, descFWUnavailCharged, descFWSurgeCharged,
		descMemberDesired, descMemberUpdated, descMemberAvailable, descMemberStarted, descMemberMaxUnavailable,
		descMemberMaxSurge, descMemberPartition, descMemberWaiting, descMemberCurrent, descMemberLost, descClusterCondition,
		descFWGateWaiting, descFWStage,
	}
)

// NewFleet returns the hub's collector; register it with RegisterState.
func NewFleet(reader client.Reader, elected func() bool) *Fleet {
	return &Fleet{Reader: reader, Elected: elected, rounds: lastRounds, scrapeErrors: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "lockstep_fleet_state_scrape_errors_total",
		Help: "Scrapes whose fleet state could not be read from the hub's cache.",
	})}
}

func (f *Fleet) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
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
	listedAt := time.Now()
	var fws fleetv1alpha1.FederatedWorkloadList
	var mcs fleetv1alpha1.MemberClusterList
	if f.Reader.List(ctx, &fws) != nil || f.Reader.List(ctx, &mcs) != nil {
		f.scrapeErrors.Inc()
		return
	}
	listed := make(map[types.NamespacedName]types.UID, len(fws.Items))
	for i := range fws.Items {
		fw := &fws.Items[i]
		listed[client.ObjectKeyFromObject(fw)] = fw.UID
		collectFederatedWorkload(ch, fw, f.rounds.of(fw), f.now())
	}
	f.rounds.keepOnly(listed, listedAt)
	for i := range mcs.Items {
		mc := &mcs.Items[i]
		conditionSeries(ch, descClusterCondition, []string{mc.Name}, mc.Status.Conditions)
	}
}

func collectFederatedWorkload(ch chan<- prometheus.Metric, fw *fleetv1alpha1.FederatedWorkload, last *fleetRound, now time.Time) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{fw.Namespace, fw.Name}, labels...)...)
	}
	st := &fw.Status
	gauge(descFWDesired, float64(fw.Spec.Replicas))
	gauge(descFWUpdated, float64(st.UpdatedReplicas))
	gauge(descFWAvailable, float64(st.AvailableReplicas))
	gauge(descFWPaused, boolValue(fw.Spec.RolloutStrategy.Paused))
	gauge(descFWCurrent, float64(st.Replicas))
	conditionSeries(ch, descFWCondition, []string{fw.Namespace, fw.Name}, st.Conditions)
	if g := st.Gate; g != nil {
		gauge(descFWGateWaiting, max(0, now.Sub(g.ReachedAt.Time).Seconds()), g.Name, string(g.Reason))
	}
	for _, s := range st.Stages {
		gauge(descFWStage, 1, s.Name, string(s.Phase))
	}
	if b := last.budgetOf(); b != nil {
		gauge(descFWMaxUnavailable, float64(b.maxUnavailable))
		gauge(descFWMaxSurge, float64(b.maxSurge))
		gauge(descFWUnavailCharged, float64(b.unavailable))
		gauge(descFWSurgeCharged, float64(b.surge))
	}
	for _, m := range st.Clusters {
		gauge(descMemberDesired, float64(m.DesiredReplicas), m.Name)
		gauge(descMemberUpdated, float64(m.UpdatedReplicas), m.Name)
		gauge(descMemberAvailable, float64(m.AvailableReplicas), m.Name)
		gauge(descMemberStarted, boolValue(m.Grant.Started), m.Name)
		gauge(descMemberMaxUnavailable, float64(m.Grant.MaxUnavailable), m.Name)
		gauge(descMemberMaxSurge, float64(m.Grant.MaxSurge), m.Name)
		gauge(descMemberPartition, float64(m.Grant.Partition), m.Name)
		gauge(descMemberWaiting, boolValue(m.Waiting != ""), m.Name)
		gauge(descMemberCurrent, float64(m.Replicas), m.Name)
		if lost, seen := last.lostOf(m.Name); seen {
			gauge(descMemberLost, boolValue(lost), m.Name)
		}
	}
}

// lastRounds is what RecordFleetRound records and every Fleet reads: the
// rounds run on the leading hub, which alone reports.
var lastRounds = newFleetRounds()

// RecordFleetRound keeps of a FederatedWorkload's round what its status does
// not say: the global budget the planner resolved and charged, and which
// members it counted lost. Call it once the round's status is written. A
// round that could not be planned (out.Stuck) leaves no budget. Nothing needs
// forgetting: the collector reports a record only while its workload (the
// same UID) is listed, and drops the others.
func RecordFleetRound(fw *fleetv1alpha1.FederatedWorkload, out *round.Output) {
	lastRounds.record(fw, out)
}

// fleetRound is one workload's last round, as the collector reports it.
type fleetRound struct {
	uid types.UID
	at  time.Time
	// budget is the planner's answer; nil when the round could not be planned.
	budget *fleetBudget
	// lost says, of every member the round saw, whether it was counted lost.
	lost map[string]bool
}

// fleetBudget is the global budget in units: the limits and what the grants
// were charged (align.Plan).
type fleetBudget struct {
	maxUnavailable, maxSurge, unavailable, surge int32
}

// budgetOf is the round's budget; nil without a round or a plan.
func (r *fleetRound) budgetOf() *fleetBudget {
	if r == nil {
		return nil
	}
	return r.budget
}

// lostOf reports whether the round counted the member lost, and whether the
// round saw it at all.
func (r *fleetRound) lostOf(member string) (lost, seen bool) {
	if r == nil {
		return false, false
	}
	lost, seen = r.lost[member]
	return lost, seen
}

type fleetRounds struct {
	mu   sync.Mutex
	last map[types.NamespacedName]*fleetRound
}

func newFleetRounds() *fleetRounds {
	return &fleetRounds{last: map[types.NamespacedName]*fleetRound{}}
}

func (rs *fleetRounds) record(fw *fleetv1alpha1.FederatedWorkload, out *round.Output) {
	r := &fleetRound{uid: fw.UID, at: time.Now(), lost: make(map[string]bool, len(out.Members))}
	if out.Stuck == "" {
		p := &out.Plan
		r.budget = &fleetBudget{maxUnavailable: p.MaxUnavailable, maxSurge: p.MaxSurge, unavailable: p.Unavailable, surge: p.Surge}
	}
	for i := range out.Members {
		r.lost[out.Members[i].Name] = out.Members[i].Reach == align.Lost
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.last[client.ObjectKeyFromObject(fw)] = r
}

// of is the last round of fw, nil when none of this very workload (a
// workload deleted and created again under its name has had none yet).
func (rs *fleetRounds) of(fw *fleetv1alpha1.FederatedWorkload) *fleetRound {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.last[client.ObjectKeyFromObject(fw)]; r != nil && r.uid == fw.UID {
		return r
	}
	return nil
}

// keepOnly forgets the rounds of workloads no longer listed; a round
// recorded after the list was read may be of a workload the list missed.
func (rs *fleetRounds) keepOnly(listed map[types.NamespacedName]types.UID, listedAt time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for k, r := range rs.last {
		if uid, ok := listed[k]; (!ok || uid != r.uid) && r.at.Before(listedAt) {
			delete(rs.last, k)
		}
	}
}
