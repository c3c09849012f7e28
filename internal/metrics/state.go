package metrics

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// listTimeout bounds one scrape's reads of the cache; a scrape that cannot
// read in time reports lockstep_state_scrape_errors_total instead of blocking.
const listTimeout = 5 * time.Second

// State reports the state of every PodCliqueSet and of its roles (standalone
// cliques and scaling groups) at scrape time, in the style of
// kube-state-metrics. It reads the manager's cache on every scrape, so a
// deleted PodCliqueSet has no series left behind and the reconcilers need not
// know about it. Label values are object and role names, condition types and
// reasons: nothing grows with time or with the number of pods.
type State struct {
	// Reader is the manager's cached client.
	Reader client.Reader
	// Elected reports whether this replica leads; only the leader reports, so
	// that two operator replicas do not double every series.
	Elected func() bool
	// Now is the clock, for the seconds since the last progress.
	Now func() time.Time

	scrapeErrors prometheus.Counter
}

var (
	pcsLabels  = []string{"namespace", "podcliqueset"}
	roleLabels = []string{"namespace", "podcliqueset", "role"}

	descReplicasDesired   = newDesc("lockstep_podcliqueset_replicas_desired", "spec.replicas of the PodCliqueSet.", pcsLabels)
	descReplicasUpdated   = newDesc("lockstep_podcliqueset_replicas_updated", "PodCliqueSet replicas whose every unit runs the update revision.", pcsLabels)
	descReplicasAvailable = newDesc("lockstep_podcliqueset_replicas_available", "PodCliqueSet replicas whose every clique and scaling group has its minimum available.", pcsLabels)
	descReplicasUpdating  = newDesc("lockstep_podcliqueset_replicas_updating", "PodCliqueSet replicas being updated now.", pcsLabels)
	descPaused            = newDesc("lockstep_podcliqueset_paused", "1 when spec.paused holds the rollout, else 0.", pcsLabels)
	descPartition         = newDesc("lockstep_podcliqueset_partition", "spec.updateStrategy.rollingUpdate.partition: replicas below it keep the old revision.", pcsLabels)
	descDeadline          = newDesc("lockstep_podcliqueset_progress_deadline_seconds", "spec.progressDeadlineSeconds.", pcsLabels)
	descSinceProgress     = newDesc("lockstep_podcliqueset_seconds_since_last_progress", "Seconds since the rollout last made progress; only while a rollout runs, unpaused and at no gate (the progress deadline does not run there).", pcsLabels)
	descGateWaiting       = newDesc("lockstep_podcliqueset_gate_waiting_seconds", "Seconds the rollout has waited at its gate (status.updateProgress.gate); only while it waits. reason is Soaking or AwaitingApproval.", []string{"namespace", "podcliqueset", "gate", "reason"})
	descRoleStep          = newDesc("lockstep_podcliqueset_role_step", "Index (0-based) of the earliest roleUpgrade step a replica is at; the role label is that step's role. Only while a replica is at a step.", roleLabels)
	descUnscheduledGangs  = newDesc("lockstep_podcliqueset_unscheduled_gangs", "Gangs with fewer scheduled pods than their minimum.", pcsLabels)
	descCondition         = newDesc("lockstep_podcliqueset_status_condition", "The PodCliqueSet's status conditions: 1 on the series whose status is the current one.", []string{"namespace", "podcliqueset", "condition", "status", "reason"})

	descRoleDesired     = newDesc("lockstep_podcliqueset_role_units_desired", "Units a role should have over all PodCliqueSet replicas: pods of a standalone clique, replicas of a scaling group.", roleLabels)
	descRoleUpdated     = newDesc("lockstep_podcliqueset_role_units_updated", "Units of a role made from its current template.", roleLabels)
	descRoleReady       = newDesc("lockstep_podcliqueset_role_units_ready", "Ready units of a role.", roleLabels)
	descRoleAvailable   = newDesc("lockstep_podcliqueset_role_units_available", "Units of a role ready for at least minReadySeconds.", roleLabels)
	descRoleUnscheduled = newDesc("lockstep_podcliqueset_role_units_unscheduled", "Units of a role that exist but are not bound to nodes.", roleLabels)

	stateDescs = []*prometheus.Desc{
		descReplicasDesired, descReplicasUpdated, descReplicasAvailable, descReplicasUpdating, descPaused,
		descPartition, descDeadline, descSinceProgress, descGateWaiting, descRoleStep, descUnscheduledGangs, descCondition,
		descRoleDesired, descRoleUpdated, descRoleReady, descRoleAvailable, descRoleUnscheduled,
	}
)

func newDesc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// NewState returns the collector; register it with RegisterState.
func NewState(reader client.Reader, elected func() bool, now func() time.Time) *State {
	return &State{
		Reader: reader, Elected: elected, Now: now,
		scrapeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lockstep_state_scrape_errors_total",
			Help: "Scrapes whose PodCliqueSet state could not be read from the cache.",
		}),
	}
}

// conditionSeries reports conditions the kube-state-metrics way: one series
// per condition and status (True, False, Unknown), 1 on the current status,
// with the condition's reason. labels come first.
func conditionSeries(ch chan<- prometheus.Metric, d *prometheus.Desc, labels []string, conds []metav1.Condition) {
	for _, c := range conds {
		for _, status := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			values := append(slices.Clone(labels), c.Type, string(status), c.Reason)
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, boolValue(c.Status == status), values...)
		}
	}
}

// RegisterState adds s to reg, replacing the collector of an earlier start in
// the same process (whose cache is gone).
func RegisterState(reg prometheus.Registerer, s prometheus.Collector) error {
	reg.Unregister(s)
	return reg.Register(s)
}

// Describe implements prometheus.Collector.
func (s *State) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range stateDescs {
		ch <- d
	}
	s.scrapeErrors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *State) Collect(ch chan<- prometheus.Metric) {
	defer s.scrapeErrors.Collect(ch)
	if s.Elected != nil && !s.Elected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var sets v1alpha1.PodCliqueSetList
	var cliques v1alpha1.PodCliqueList
	var groups v1alpha1.PodCliqueScalingGroupList
	managed := client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
	if s.Reader.List(ctx, &sets) != nil || s.Reader.List(ctx, &cliques, managed) != nil || s.Reader.List(ctx, &groups, managed) != nil {
		s.scrapeErrors.Inc()
		return
	}
	children := map[key]*family{}
	childrenOf := func(namespace string, labels map[string]string) *family {
		k := key{namespace, labels[v1alpha1.LabelPodCliqueSet]}
		if children[k] == nil {
			children[k] = &family{}
		}
		return children[k]
	}
	for i := range cliques.Items {
		c := &cliques.Items[i]
		f := childrenOf(c.Namespace, c.Labels)
		f.cliques = append(f.cliques, c)
	}
	for i := range groups.Items {
		g := &groups.Items[i]
		f := childrenOf(g.Namespace, g.Labels)
		f.groups = append(f.groups, g)
	}
	now := s.Now()
	for i := range sets.Items {
		pcs := &sets.Items[i]
		f := children[key{pcs.Namespace, pcs.Name}]
		if f == nil {
			f = &family{}
		}
		collectSet(ch, pcs, f, now)
	}
}

type key struct{ namespace, name string }

// family is what a PodCliqueSet owns, read from the cache.
type family struct {
	cliques []*v1alpha1.PodClique
	groups  []*v1alpha1.PodCliqueScalingGroup
}

// roleUnits are the unit counts of one role summed over PodCliqueSet replicas.
type roleUnits struct {
	desired, updated, ready, available, unscheduled int32
}

func collectSet(ch chan<- prometheus.Metric, pcs *v1alpha1.PodCliqueSet, f *family, now time.Time) {
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{pcs.Namespace, pcs.Name}, extra...)...)
	}
	spec, st := &pcs.Spec, &pcs.Status
	replicas := int32(1)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	gauge(descReplicasDesired, float64(replicas))
	gauge(descReplicasUpdated, float64(st.UpdatedReplicas))
	gauge(descReplicasAvailable, float64(st.AvailableReplicas))
	gauge(descPaused, boolValue(spec.Paused))
	partition := int32(0)
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	gauge(descPartition, float64(partition))
	if spec.ProgressDeadlineSeconds != nil {
		gauge(descDeadline, float64(*spec.ProgressDeadlineSeconds))
	}

	updating := 0
	if up := st.UpdateProgress; up != nil {
		updating = len(up.UpdatingReplicas)
		switch {
		case up.UpdateEndedAt != nil:
		case up.Gate != nil:
			gauge(descGateWaiting, max(0, now.Sub(up.Gate.ReachedAt.Time).Seconds()), up.Gate.Name, string(up.Gate.Reason))
		case spec.Paused: // the deadline clock stands while paused
		case up.LastProgressAt != nil:
			gauge(descSinceProgress, max(0, now.Sub(up.LastProgressAt.Time).Seconds()))
		}
		if step := earliestRoleStep(up.UpdatingReplicas); step != nil {
			gauge(descRoleStep, float64(step.Index), step.Role)
		}
	}
	gauge(descReplicasUpdating, float64(updating))
	gauge(descUnscheduledGangs, float64(unscheduledGangs(f)))

	conditionSeries(ch, descCondition, []string{pcs.Namespace, pcs.Name}, st.Conditions)

	roles := rolesOf(pcs, replicas, f)
	names := make([]string, 0, len(roles))
	for name := range roles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := roles[name]
		gauge(descRoleDesired, float64(r.desired), name)
		gauge(descRoleUpdated, float64(r.updated), name)
		gauge(descRoleReady, float64(r.ready), name)
		gauge(descRoleAvailable, float64(r.available), name)
		gauge(descRoleUnscheduled, float64(r.unscheduled), name)
	}
}

// rolesOf sums the units of every role named in the template: a standalone
// clique counts its pods, a scaling group its group replicas. Children of
// roles no longer in the template are left out.
func rolesOf(pcs *v1alpha1.PodCliqueSet, replicas int32, f *family) map[string]*roleUnits {
	t := &pcs.Spec.Template
	roles := map[string]*roleUnits{}
	for _, g := range t.PodCliqueScalingGroups {
		roles[g.Name] = &roleUnits{desired: replicas * g.Replicas}
	}
	for _, c := range t.Cliques {
		if t.ScalingGroupOf(c.Name) == nil {
			roles[c.Name] = &roleUnits{desired: replicas * c.Replicas}
		}
	}
	add := func(r *roleUnits, s *v1alpha1.ChildStatus) {
		r.updated += s.UpdatedReplicas
		r.ready += s.ReadyReplicas
		r.available += s.AvailableReplicas
		r.unscheduled += max(0, s.Replicas-s.ScheduledReplicas)
	}
	for _, c := range f.cliques {
		if _, inGroup := c.Labels[v1alpha1.LabelPodCliqueScalingGroup]; inGroup {
			continue
		}
		if r := roles[c.Labels[v1alpha1.LabelClique]]; r != nil {
			add(r, &c.Status)
		}
	}
	for _, g := range f.groups {
		if r := roles[g.Labels[v1alpha1.LabelPodCliqueScalingGroup]]; r != nil {
			add(r, &g.Status)
		}
	}
	return roles
}

// unscheduledGangs counts the gangs (PodGroups named by the PodCliques) some
// member PodClique of which has fewer scheduled pods than its minimum. Gated
// gangs count: they wait for their base gang.
func unscheduledGangs(f *family) int {
	short := map[string]bool{}
	for _, c := range f.cliques {
		if c.Spec.Gang == nil {
			continue
		}
		name := c.Spec.Gang.PodGroupName
		if _, seen := short[name]; !seen {
			short[name] = false
		}
		if c.Status.ScheduledReplicas < c.Spec.EffectiveMinAvailable() {
			short[name] = true
		}
	}
	n := 0
	for _, unscheduled := range short {
		if unscheduled {
			n++
		}
	}
	return n
}

// earliestRoleStep is the step of the updating replica that is furthest behind.
func earliestRoleStep(replicas []v1alpha1.PodCliqueSetReplicaUpdateProgress) *v1alpha1.RoleStepProgress {
	var earliest *v1alpha1.RoleStepProgress
	for i := range replicas {
		if s := replicas[i].RoleStep; s != nil && (earliest == nil || s.Index < earliest.Index) {
			earliest = s
		}
	}
	return earliest
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
