// Package fleetplan simulates a FederatedWorkload rollout offline for
// `lockstep plan`: the hub's own rounds (round.Plan: the division, the reach
// rules, the fleet planner, the member-object encoding and the status) run
// wave by wave against member clusters played in memory (fleetsim.Member),
// which receive the member objects the hub's controller would write and whose
// own controllers replace units (a Deployment's as deploysim plays them, the
// others with the single-cluster planner). Members may report late
// (Input.Late) or be lost to the hub (Input.Lose), fed to the round as the
// hub's controller feeds it such members. It prints the waves as text and
// draws them as an SVG.
package fleetplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/division"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// MaxWaves bounds a simulation: a rollout that is not done by then is stuck.
const MaxWaves = 10000

// maxSetupRounds bounds the rounds that bring the members to rest on the
// workload before the change: a new workload settles in three.
const maxSetupRounds = 20

// Cluster is one member cluster the workload is placed on.
type Cluster struct {
	Name   string
	Labels map[string]string
}

// Input is what a simulation needs.
type Input struct {
	// From is the FederatedWorkload before the change and Workload the one
	// after (both validated). The members start at rest on From, as the hub
	// leaves a new workload; with From nil they start without member objects
	// (Workload is new).
	From, Workload *fleetv1alpha1.FederatedWorkload
	Kind           member.Kind
	// Clusters are the Ready clusters the Placement selects, in name order.
	Clusters []Cluster
	// Before are the clusters it selected before the change, when they
	// differ: clusters that join, and clusters that leave (they stop matching
	// the default Placement; with Placement given none can). Nil: Clusters.
	Before []Cluster
	// Placement, Sets and Bindings chose Clusters; nil Placement: one that
	// selects every cluster of a set of all of them bound to the workload's
	// namespace.
	Placement *fleetv1alpha1.Placement
	Sets      []fleetv1alpha1.MemberClusterSet
	Bindings  []fleetv1alpha1.MemberClusterSetBinding
	// Startup is how long a created unit takes to become available: one wave.
	Startup time.Duration
	// Late are the clusters whose status reaches the hub late, by how many
	// rounds (at least 1): the hub's round reads what their controllers
	// reported that many rounds before (fleetsim.Member.Late), from the
	// first round on.
	Late map[string]int
	// Lose are the clusters the hub loses, by the wave (from 1) from which
	// on it cannot reach them. Their MemberCluster turns Ready=False, reason
	// Unreachable, at that wave's round, as the hub's probe leaves a member
	// that stops answering, so the placement drops them and the hub's round
	// reads nothing from them and writes nothing to them; it counts
	// memberLostTimeoutSeconds from then. Their own controllers go on with
	// what their objects hold.
	Lose map[string]int
	// Approve are the stage gates approved, by gate name (stage-<stage>), at
	// a time from the change, as `kubectl lockstep approve fw/NAME` would.
	Approve map[string]time.Duration
	// Analyses are scripted results of stage gates' analyses, in place of the
	// hub's measurements; time counts from the change.
	Analyses []gate.Scripted
	// Fail are the clusters whose new units never start, by the wave (from
	// 1) from which on: a cluster whose new pods cannot be scheduled. Its
	// stage's progressDeadline counts it failed.
	Fail map[string]int
	// OnRound, when set, sees every round the hub runs (those bringing the
	// members to rest on From too).
	OnRound func(Round)
}

// Round is one round of the hub as the simulation ran it.
type Round struct {
	In  round.Input
	Out round.Output
	// Wave counts the rounds on the changed workload from 1; 0 while the
	// members are brought to rest on From.
	Wave int
	// Received are the requests each member received this round, by cluster.
	Received map[string][]fleetsim.Request
	// Unreachable are the clusters the hub could not reach this round, and
	// Failed the writes to them that failed (the round never makes any: it
	// writes only to the members it read).
	Unreachable []string
	Failed      []round.Write
}

// Share is one cluster's part of the replicas.
type Share struct {
	Cluster string
	Units   int32
}

// Result is what the simulation did.
type Result struct {
	Strategy align.Strategy
	// Shares are the clusters' shares under the new workload; From their
	// shares at rest on the one before (nil without Input.From).
	Shares, From []Share
	// First is the plan of the first round on the changed workload: the
	// resolved limits and how many units may update.
	First align.Plan
	// Outdated counts the units not on the new revision when the change
	// came.
	Outdated int32
	Waves    []Wave
	// Done: the hub's planner reported the rollout finished within MaxWaves.
	Done bool
	// Stuck is why the hub could not plan the last round (its Progressing
	// reason and message), "" when it could.
	Stuck string
	// Floor and Ceiling are the fleet-wide bounds every wave must keep:
	// replicas − maxUnavailable available, replicas + maxSurge units that
	// are not terminating.
	Floor, Ceiling int32
	// Breaches lists the waves (from 1) that broke a bound.
	Breaches []string
	// Lost is what became of each cluster of Input.Lose, in name order.
	Lost []LostCluster
	// Held: the rollout waits at a stage gate nobody approves (held by
	// design); Halted: more clusters failed than the stages' maxFailures.
	Held, Halted bool
	// Status is the FederatedWorkload's status the hub wrote last.
	Status fleetv1alpha1.FederatedWorkloadStatus
}

// Wave is one wave: the hub's plan, the fleet and each member (align.Wave),
// and what the plan adds for clusters the hub cannot reach.
type Wave struct {
	align.Wave
	// Stages says where each stage stands after the wave's round ("" without
	// stages), and the gate it waits at.
	Stages string
	// Floor is the floor of this wave: Result.Floor, lowered by the shares
	// the hub still holds for clusters it cannot reach. From the first wave
	// a cluster is unreachable, Available and Units count only the clusters
	// the hub reaches: the others' units are out of its hands.
	Floor int32
	// Unreached are the clusters the hub could not reach this wave.
	Unreached []Unreached
}

// Unreached is a cluster the hub could not reach in a wave, as its round saw
// it.
type Unreached struct {
	Cluster string
	// Reach is Stale until memberLostTimeoutSeconds pass, then Lost.
	Reach align.Reach
	// Share is the share the hub holds for it; Unavailable and Surge what the
	// global budget charged it this wave. A lost cluster that left the
	// placement is written off: charged nothing itself, its whole share is
	// held back from the others until they have grown into it.
	Share, Unavailable, Surge int32
	WrittenOff                bool
	// Forgotten: no longer planned nor reported (the others have grown
	// into its share).
	Forgotten bool
}

// LostCluster is what became of a cluster of Input.Lose: the waves (from 1)
// from which the hub could not reach it, took it as lost, and forgot it; 0
// when the plan ended before.
type LostCluster struct {
	Cluster               string
	From, Lost, Forgotten int
	// Share is the share the hub held for it when it became unreachable;
	// Runs the units it runs at the end, out of the hub's reach.
	Share, Runs int32
}

// Run divides the replicas as the hub does, brings the members to rest on the
// workload before the change, then plays the rollout wave by wave: each wave
// is one round of the hub, its writes delivered, each member's controller
// acting once, and the units it made available a start-up time later.
func Run(in Input) (Result, error) {
	fw := in.Workload
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		return Result{}, fmt.Errorf("spec.template: %w", err)
	}
	if err := checkFaults(in); err != nil {
		return Result{}, err
	}
	res := Result{Strategy: member.StrategyOf(fw)}
	if res.Shares, err = shares(in); err != nil {
		return res, err
	}
	h := newHub(in)
	if in.From != nil {
		if err := h.rest(in.From); err != nil {
			return res, err
		}
		res.From = restShares(res.Shares, h.fw.Status)
	}
	h.change(fw)
	for _, m := range h.members {
		c := m.Count(tmpl.Revision)
		res.Outdated += c.Replicas - c.Updated
	}
	lost := newLostClusters(in)
	for n := range MaxWaves {
		before := h.state()
		out, err := h.round()
		if err != nil {
			return res, err
		}
		if n == 0 {
			res.First = out.Plan
		}
		lost.cut(h.wave, h.unreachable, out.Status)
		if out.Stuck != "" {
			res.Stuck = progressingMessage(out.Status)
			break
		}
		lost.saw(h.wave, h.unreached(out))
		if out.Plan.Done && (out.Stages == nil || out.Stages.Finished()) {
			res.Done = true
			if deletes(out.Writes) {
				// The objects it deleted leave the status at the next round.
				out, err := h.round()
				if err != nil {
					return res, err
				}
				lost.saw(h.wave, h.unreached(out))
			}
			break
		}
		w := Wave{Wave: align.Wave{Plan: out.Plan}, Stages: stagesLine(out)}
		res.Halted = out.Stages != nil && out.Stages.Halted
		res.Held = out.Stages != nil && out.Stages.Gate != nil && out.Stages.Gate.Verdict.Reason == v1alpha1.ReasonAwaitingApproval
		if err := h.act(); err != nil {
			return res, err
		}
		for _, m := range h.members {
			if h.unreachable[m.Name] {
				continue // out of the hub's hands: not counted (see Wave.Floor)
			}
			c := m.Count(tmpl.Revision)
			w.Available += c.Available
			// Terminating units do not count (a Deployment's controller
			// bounds only its ReplicaSets' replicas by maxSurge), as the
			// e2e tests' watcher counts.
			w.Units += c.Replicas
		}
		h.settle()
		plans := make(map[string]align.MemberPlan, len(out.Plan.Members))
		for _, mp := range out.Plan.Members {
			plans[mp.Name] = mp
		}
		for _, s := range res.Shares {
			mp := plans[s.Cluster]
			c := h.byName[s.Cluster].Count(tmpl.Revision)
			w.Members = append(w.Members, align.WaveMember{Name: s.Cluster, Desired: mp.Replicas, Updated: c.Updated,
				Available: c.Available, Grant: mp.Grant, Waiting: mp.Waiting})
		}
		w.Unreached = h.unreached(out)
		res.Waves = append(res.Waves, w)
		if h.state() == before && !h.pending() {
			break // stuck: paused, or waiting for ever
		}
	}
	res.Status = h.fw.Status
	res.Floor, res.Ceiling = fw.Spec.Replicas-res.First.MaxUnavailable, fw.Spec.Replicas+res.First.MaxSurge
	for i := range res.Waves {
		w := &res.Waves[i]
		w.Floor = res.Floor
		for _, u := range w.Unreached {
			if !u.Forgotten {
				w.Floor -= u.Share
			}
		}
		if w.Available < w.Floor || w.Units > res.Ceiling {
			res.Breaches = append(res.Breaches, fmt.Sprintf("wave %d: %d available (floor %d), %d units (ceiling %d)",
				i+1, w.Available, w.Floor, w.Units, res.Ceiling))
		}
	}
	for _, c := range lost {
		c.Runs = h.byName[c.Cluster].Count(tmpl.Revision).Replicas
	}
	res.Lost = lost.list()
	return res, nil
}

// checkFaults checks that Late and Lose name clusters of the plan, late by
// at least a round, lost from wave 1 on.
func checkFaults(in Input) error {
	known := func(name string) bool {
		has := func(c Cluster) bool { return c.Name == name }
		return slices.ContainsFunc(in.Clusters, has) || slices.ContainsFunc(in.Before, has)
	}
	for _, name := range slices.Sorted(maps.Keys(in.Late)) {
		switch {
		case !known(name):
			return fmt.Errorf("late cluster %s is not one of the clusters", name)
		case in.Late[name] < 1:
			return fmt.Errorf("late cluster %s: %d rounds late; want at least 1", name, in.Late[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.Lose)) {
		switch {
		case !known(name):
			return fmt.Errorf("lost cluster %s is not one of the clusters", name)
		case in.Lose[name] < 1:
			return fmt.Errorf("lost cluster %s: wave %d; waves count from 1", name, in.Lose[name])
		}
	}
	return nil
}

// restShares are the shares the members held at rest on the workload before
// the change, as its status reports them, in the order of shares.
func restShares(shares []Share, st fleetv1alpha1.FederatedWorkloadStatus) []Share {
	out := make([]Share, len(shares))
	for i, s := range shares {
		out[i].Cluster = s.Cluster
		for _, c := range st.Clusters {
			if c.Name == s.Cluster {
				out[i].Units = c.DesiredReplicas
			}
		}
	}
	return out
}

// lostClusters follows what becomes of each cluster of Input.Lose, round by
// round.
type lostClusters map[string]*LostCluster

func newLostClusters(in Input) lostClusters {
	lc := lostClusters{}
	for name := range in.Lose {
		lc[name] = &LostCluster{Cluster: name}
	}
	return lc
}

// cut notes the wave from which each unreachable cluster was so, and the
// share the round's status holds for it (the share it last wrote to it).
func (lc lostClusters) cut(wave int, unreachable map[string]bool, st fleetv1alpha1.FederatedWorkloadStatus) {
	for name := range unreachable {
		c := lc[name]
		if c == nil || c.From != 0 {
			continue
		}
		c.From = wave
		for _, e := range st.Clusters {
			if e.Name == name {
				c.Share = e.DesiredReplicas
			}
		}
	}
}

// saw takes what the round of wave saw of the clusters it could not reach.
func (lc lostClusters) saw(wave int, us []Unreached) {
	for _, u := range us {
		c := lc[u.Cluster]
		if c == nil {
			continue
		}
		if c.Lost == 0 && u.Reach == align.Lost {
			c.Lost = wave
		}
		if c.Forgotten == 0 && u.Forgotten {
			c.Forgotten = wave
		}
	}
}

func (lc lostClusters) list() []LostCluster {
	var out []LostCluster
	for _, name := range slices.Sorted(maps.Keys(lc)) {
		out = append(out, *lc[name])
	}
	return out
}

// deletes: some of writes delete a member object.
func deletes(writes []round.Write) bool {
	return slices.ContainsFunc(writes, func(w round.Write) bool { return w.Op == round.Delete })
}

// shares are the clusters' shares under the division, as the hub computes
// them, and 0 for each cluster that leaves.
func shares(in Input) ([]Share, error) {
	names := make([]string, len(in.Clusters))
	labels := make(map[string]map[string]string, len(in.Clusters))
	for i, c := range in.Clusters {
		names[i], labels[c.Name] = c.Name, c.Labels
	}
	weights, err := division.Weights(in.Workload.Spec.Division.Weights, labels, names)
	if err != nil {
		return nil, err
	}
	units := division.Shares(in.Workload.Spec.Replicas, names, weights)
	out := make([]Share, len(names))
	for i, n := range names {
		out[i] = Share{Cluster: n, Units: units[i]}
	}
	for _, c := range in.Before {
		if !slices.Contains(names, c.Name) {
			out = append(out, Share{Cluster: c.Name})
		}
	}
	slices.SortFunc(out, func(a, b Share) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out, nil
}

// IdealWaves is the fewest waves any rollout could take: the outdated units
// allowed to update, replaced maxUnavailable + maxSurge at a time.
func (r Result) IdealWaves() int {
	p := r.First
	step := max(p.MaxUnavailable+p.MaxSurge, 1)
	return int((min(r.Outdated, p.AllowedUpdated) + step - 1) / step)
}

// leftLabel marks a MemberCluster that left the default placement: it no
// longer matches its selector, as a relabelled cluster would not.
const leftLabel = "fleetplan.lockstep.dev/left"

// defaultPlacement places the workload on every cluster but those labelled
// as left, from a set of all clusters bound to its namespace.
func defaultPlacement(fw *fleetv1alpha1.FederatedWorkload) (*fleetv1alpha1.Placement, []fleetv1alpha1.MemberClusterSet, []fleetv1alpha1.MemberClusterSetBinding) {
	const set = "default"
	return &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: fw.Spec.PlacementRef.Name},
			Spec: fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: leftLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}}},
		[]fleetv1alpha1.MemberClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: set}}},
		[]fleetv1alpha1.MemberClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: fw.Namespace, Name: set},
			Spec: fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: set}}}
}

// stagesLine is where each stage stands after a round, and the gate it
// waits at: "canary-0 Succeeded, group-1 Progressing".
func stagesLine(out round.Output) string {
	if out.Stages == nil {
		return ""
	}
	var parts []string
	for _, s := range out.Stages.Stages {
		p := fmt.Sprintf("%s %s", s.Name, s.Phase)
		if len(s.Failed) > 0 {
			p += fmt.Sprintf(" (failed: %s)", strings.Join(s.Failed, ", "))
		}
		parts = append(parts, p)
	}
	line := strings.Join(parts, ", ")
	if g := out.Stages.Gate; g != nil {
		line += "; " + g.Verdict.Message
	}
	if out.Stages.Halted {
		line += fmt.Sprintf("; halted: %d failed, maxFailures %d", out.Stages.Failures, out.Stages.MaxFailures)
	}
	return line
}
