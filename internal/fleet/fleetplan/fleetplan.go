// Package fleetplan simulates a FederatedWorkload rollout offline for
// `lockstep plan`: the hub's own rounds (round.Plan: the division, the reach
// rules, the fleet planner, the member-object encoding and the status) run
// wave by wave against member clusters played in memory (fleetsim.Member),
// which receive the member objects the hub's controller would write and whose
// own controllers replace units with the single-cluster planner. It prints the
// waves as text and draws them as an SVG.
package fleetplan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/division"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetsim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/fleet/round"
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
	// OnRound, when set, sees every round the hub runs (those bringing the
	// members to rest on From too).
	OnRound func(Round)
}

// Round is one round of the hub as the simulation ran it.
type Round struct {
	In  round.Input
	Out round.Output
	// Received are the requests each member received this round, by cluster.
	Received map[string][]fleetsim.Request
}

// Share is one cluster's part of the replicas.
type Share struct {
	Cluster string
	Units   int32
}

// Result is what the simulation did.
type Result struct {
	Strategy align.Strategy
	Shares   []Share
	// First is the plan of the first round on the changed workload: the
	// resolved limits and how many units may update.
	First align.Plan
	// Outdated counts the units not on the new revision when the change
	// came.
	Outdated int32
	Waves    []align.Wave
	// Done: the hub's planner reported the rollout finished within MaxWaves.
	Done bool
	// Floor and Ceiling are the fleet-wide bounds every wave must keep:
	// replicas − maxUnavailable available, replicas + maxSurge units that
	// are not terminating.
	Floor, Ceiling int32
	// Breaches lists the waves (from 1) that broke a bound.
	Breaches []string
	// Status is the FederatedWorkload's status the hub wrote last.
	Status fleetv1alpha1.FederatedWorkloadStatus
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
	res := Result{Strategy: member.StrategyOf(fw)}
	if res.Shares, err = shares(in); err != nil {
		return res, err
	}
	h := newHub(in)
	if in.From != nil {
		if err := h.rest(in.From); err != nil {
			return res, err
		}
	}
	h.change(fw)
	for _, m := range h.members {
		c := m.Count(tmpl.Revision)
		res.Outdated += c.Replicas - c.Updated
	}
	for n := range MaxWaves {
		before := h.state()
		out, err := h.round()
		if err != nil {
			return res, err
		}
		if n == 0 {
			res.First = out.Plan
		}
		if out.Plan.Done {
			res.Done = true
			if deletes(out.Writes) {
				// The objects it deleted leave the status at the next round.
				if _, err := h.round(); err != nil {
					return res, err
				}
			}
			break
		}
		w := align.Wave{Plan: out.Plan}
		if err := h.act(); err != nil {
			return res, err
		}
		for _, m := range h.members {
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
		res.Waves = append(res.Waves, w)
		if h.state() == before {
			break // stuck: paused, or waiting for ever
		}
	}
	res.Status = h.fw.Status
	res.Floor, res.Ceiling = fw.Spec.Replicas-res.First.MaxUnavailable, fw.Spec.Replicas+res.First.MaxSurge
	for i, w := range res.Waves {
		if w.Available < res.Floor || w.Units > res.Ceiling {
			res.Breaches = append(res.Breaches, fmt.Sprintf("wave %d: %d available (floor %d), %d units (ceiling %d)",
				i+1, w.Available, res.Floor, w.Units, res.Ceiling))
		}
	}
	return res, nil
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
