// Package fleetplan simulates a FederatedWorkload rollout offline for
// `lockstep plan`: the hub's planner (align.Align) hands out grants wave by
// wave, and every member's own controller is played by align.SimMember (the
// single-cluster planner over its units). It prints the waves as text and draws
// them as an SVG.
package fleetplan

import (
	"fmt"
	"time"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/division"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// MaxWaves bounds a simulation: a rollout that is not done by then is stuck.
const MaxWaves = 10000

// Cluster is one member cluster the workload is placed on.
type Cluster struct {
	Name   string
	Labels map[string]string
}

// Input is what a simulation needs.
type Input struct {
	// Workload is the FederatedWorkload after the change (defaulted).
	Workload *fleetv1alpha1.FederatedWorkload
	Kind     member.Kind
	Clusters []Cluster
	// Startup is how long a created unit takes to become available: one wave.
	Startup time.Duration
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
	Waves    []align.Wave
	// Done: Align reported the rollout finished within MaxWaves.
	Done bool
	// Floor and Ceiling are the fleet-wide bounds every wave must keep:
	// replicas − maxUnavailable available, replicas + maxSurge units.
	Floor, Ceiling int32
	// Breaches lists the waves (from 1) that broke a bound.
	Breaches []string
}

// Run divides the replicas as the hub would and plays the rollout from every
// unit on the old revision.
func Run(in Input) (Result, error) {
	fw := in.Workload
	names := make([]string, len(in.Clusters))
	labels := make(map[string]map[string]string, len(in.Clusters))
	for i, c := range in.Clusters {
		names[i], labels[c.Name] = c.Name, c.Labels
	}
	weights, err := division.Weights(fw.Spec.Division.Weights, labels, names)
	if err != nil {
		return Result{}, err
	}
	shares := division.Shares(fw.Spec.Replicas, names, weights)
	res := Result{Strategy: member.StrategyOf(fw)}
	fleet := make([]*align.SimMember, len(names))
	for i, n := range names {
		res.Shares = append(res.Shares, Share{Cluster: n, Units: shares[i]})
		fleet[i] = align.NewSimMember(n, in.Kind.Align(), shares[i])
	}
	res.Waves, res.Done, err = align.Play(res.Strategy, fleet, MaxWaves)
	if err != nil {
		return res, err
	}
	if len(res.Waves) > 0 {
		p := res.Waves[0].Plan
		res.Floor, res.Ceiling = fw.Spec.Replicas-p.MaxUnavailable, fw.Spec.Replicas+p.MaxSurge
	}
	for i, w := range res.Waves {
		if w.Available < res.Floor || w.Units > res.Ceiling {
			res.Breaches = append(res.Breaches, fmt.Sprintf("wave %d: %d available (floor %d), %d units (ceiling %d)",
				i+1, w.Available, res.Floor, w.Units, res.Ceiling))
		}
	}
	return res, nil
}

// IdealWaves is the fewest waves any rollout could take: the units allowed to
// update, replaced maxUnavailable + maxSurge at a time.
func (r Result) IdealWaves() int {
	if len(r.Waves) == 0 {
		return 0
	}
	p := r.Waves[0].Plan
	step := max(p.MaxUnavailable+p.MaxSurge, 1)
	return int((p.AllowedUpdated + step - 1) / step)
}
