// Package stages plans a fleet rollout stage by stage over a Placement's
// decision groups: which clusters may move now, where each stage stands, and
// when failures halt the rollout. It is pure: the clock and the clusters'
// progress arrive as data. The hub holds every cluster outside the started
// stages (align grows no held member), so the one global budget keeps holding
// across stages.
package stages

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

// Type is how clusters are cut into stages (the API's).
type Type = fleetv1alpha1.StageType

const (
	All                 = fleetv1alpha1.StagesAll
	Progressive         = fleetv1alpha1.StagesProgressive
	ProgressivePerGroup = fleetv1alpha1.StagesProgressivePerGroup
)

// Phase is where a stage stands (the API's).
type Phase = fleetv1alpha1.StagePhase

const (
	Pending          = fleetv1alpha1.StagePending
	Progressing      = fleetv1alpha1.StageProgressing
	Soaking          = fleetv1alpha1.StageSoaking
	AwaitingApproval = fleetv1alpha1.StageAwaitingApproval
	Succeeded        = fleetv1alpha1.StageSucceeded
	Failed           = fleetv1alpha1.StageFailed
)

// Spec is the stages part of a rollout strategy, defaulted.
type Spec struct {
	Type Type
	// Mandatory names decision groups (by name, or "#<index>") that go
	// first, each a stage of its own, in order.
	Mandatory        []string
	MaxConcurrency   *intstr.IntOrString
	MinSuccessTime   time.Duration
	ProgressDeadline time.Duration // 0: none
	MaxFailures      *intstr.IntOrString
}

// Group is one decision group.
type Group struct {
	Name     string
	Index    int32
	Clusters []string
}

// Cluster is one cluster's progress in the rollout.
type Cluster struct {
	// Complete: it runs everything it is allowed to on the new revision,
	// available (align.Finished).
	Complete bool
}

// Stage is one stage's status.
type Stage struct {
	Name      string
	Clusters  []string
	Phase     Phase
	StartedAt time.Time
	// DeadlineFrom is when progressDeadline counts from: the stage's start,
	// or the last time the rollout was paused (a pause stops the clock, and
	// the resume starts it again, as a Deployment's).
	DeadlineFrom time.Time
	// CompleteSince is when every cluster of it but the failed was last
	// seen complete (zero while one is not): minSuccessTime counts from then.
	CompleteSince time.Time
	// CompletedAt is when they had been for minSuccessTime: its gate counts
	// from then.
	CompletedAt time.Time
	// FinishedAt is when it succeeded or failed.
	FinishedAt time.Time
	// Failed are its clusters past the progress deadline.
	Failed []string
}

// Input is everything Plan reads.
type Input struct {
	Spec     Spec
	Groups   []Group
	Clusters map[string]Cluster
	// Previous are the stages the last plan returned (status.stages).
	Previous []Stage
	Now      time.Time
	// Paused: the rollout is paused; no stage's deadline runs.
	Paused bool
	// Gate judges the gate name after a stage (all but the last), reached at
	// the stage's CompletedAt, with the stage's clusters that did not fail;
	// nil when there is none.
	Gate func(name string, clusters []string, reachedAt time.Time) gate.Verdict
}

// GateName names the gate after stage s.
func GateName(stage string) string { return "stage-" + stage }

// GateWait is the stage gate the rollout waits at.
type GateWait struct {
	Name      string
	ReachedAt time.Time
	Verdict   gate.Verdict
}

// Plan is the answer.
type Plan struct {
	Stages []Stage
	// Active are the clusters that may move: those of every started stage.
	Active map[string]bool
	// Halted: more clusters failed than maxFailures allows; nothing new starts.
	Halted bool
	// Failures counts failed clusters; MaxFailures is the resolved limit.
	Failures, MaxFailures int32
	// RecheckIn is when a stage's soak or deadline ends, or its gate may
	// open by itself; 0 for none.
	RecheckIn time.Duration
	// Gate is the closed gate the next stage waits behind, nil for none.
	Gate *GateWait
}

// Finished: every stage succeeded, or the walk halted.
func (p *Plan) Finished() bool {
	return p.Halted || !slices.ContainsFunc(p.Stages, func(s Stage) bool { return s.Phase != Succeeded })
}

// Cut is the stages' clusters, in order.
func Cut(s Spec, groups []Group) ([]Stage, error) {
	gs := slices.Clone(groups)
	slices.SortFunc(gs, func(a, b Group) int { return int(a.Index - b.Index) })
	var all []string
	for _, g := range gs {
		all = append(all, g.Clusters...)
	}
	if s.Type == "" || s.Type == All {
		return []Stage{{Name: "all", Clusters: all}}, nil
	}
	var out []Stage
	taken := map[int32]bool{}
	for _, ref := range s.Mandatory {
		i := slices.IndexFunc(gs, func(g Group) bool { return g.Name == ref || fmt.Sprintf("#%d", g.Index) == ref })
		if i < 0 {
			return nil, fmt.Errorf("mandatory decision group %q: no such group", ref)
		}
		if !taken[gs[i].Index] {
			out = append(out, Stage{Name: stageName(gs[i]), Clusters: slices.Clone(gs[i].Clusters)})
			taken[gs[i].Index] = true
		}
	}
	switch s.Type {
	case ProgressivePerGroup:
		for _, g := range gs {
			if !taken[g.Index] && len(g.Clusters) > 0 {
				out = append(out, Stage{Name: stageName(g), Clusters: slices.Clone(g.Clusters)})
			}
		}
	case Progressive:
		var rest []string
		for _, g := range gs {
			if !taken[g.Index] {
				rest = append(rest, g.Clusters...)
			}
		}
		n := int32(len(rest))
		if s.MaxConcurrency != nil {
			c, err := limit.Resolve(*s.MaxConcurrency, int32(len(all)), limit.Up)
			if err != nil {
				return nil, fmt.Errorf("maxConcurrency: %w", err)
			}
			n = max(c, 1)
		}
		for i := 0; i < len(rest); i += int(n) {
			out = append(out, Stage{Name: fmt.Sprintf("wave-%d", len(out)), Clusters: slices.Clone(rest[i:min(len(rest), i+int(n))])})
		}
	default:
		return nil, fmt.Errorf("stage type %q: want All, Progressive or ProgressivePerGroup", s.Type)
	}
	return out, nil
}

func stageName(g Group) string {
	if g.Name == "" {
		return fmt.Sprintf("group-%d", g.Index)
	}
	return fmt.Sprintf("%s-%d", g.Name, g.Index)
}

// Walk walks the stages in order: a stage starts when the one before it
// succeeded; it succeeds once every cluster of it that has not failed has been
// complete for minSuccessTime (Soaking until then) and the gate after it
// opened; a cluster not complete progressDeadline after its stage started has
// failed. More failures than maxFailures halt the rollout: the failing stage
// is Failed and no stage after it starts. Clusters of started stages stay
// active, halted or not: what they started they finish.
func Walk(in Input) (Plan, error) {
	stages, err := Cut(in.Spec, in.Groups)
	if err != nil {
		return Plan{}, err
	}
	total := int32(0)
	for _, s := range stages {
		total += int32(len(s.Clusters))
	}
	p := Plan{Active: map[string]bool{}}
	if in.Spec.MaxFailures != nil {
		if p.MaxFailures, err = limit.Resolve(*in.Spec.MaxFailures, total, limit.Down); err != nil {
			return Plan{}, fmt.Errorf("maxFailures: %w", err)
		}
	}
	prev := map[string]Stage{}
	for _, s := range in.Previous {
		prev[s.Name] = s
	}
	open := true // the stage before succeeded
	for i := range stages {
		st := &stages[i]
		was, seen := prev[st.Name]
		if !open || p.Halted {
			st.Phase = Pending
			continue
		}
		st.StartedAt, st.DeadlineFrom = in.Now, in.Now
		if seen && !was.StartedAt.IsZero() {
			st.StartedAt, st.DeadlineFrom = was.StartedAt, was.DeadlineFrom
			if st.DeadlineFrom.IsZero() {
				st.DeadlineFrom = was.StartedAt
			}
		}
		if in.Paused {
			st.DeadlineFrom = in.Now
		}
		for _, c := range st.Clusters {
			p.Active[c] = true
		}
		if seen && was.Phase == Succeeded {
			// a stage once succeeded stays so in its rollout
			clusters := st.Clusters
			*st = was
			st.Clusters = clusters
			p.Failures += int32(len(was.Failed))
			continue
		}
		st.Phase = Progressing
		soaked := true
		if seen && !was.CompletedAt.IsZero() {
			// complete and soaked once: only its gate is left
			st.CompleteSince, st.CompletedAt, st.Failed = was.CompleteSince, was.CompletedAt, was.Failed
		} else {
			soaked = p.progress(st, was, in)
		}
		p.Failures += int32(len(st.Failed))
		switch {
		case p.Failures > p.MaxFailures:
			st.Phase, st.FinishedAt, p.Halted = Failed, finished(was.FinishedAt, in.Now), true
		case soaked:
			st.CompletedAt = finished(was.CompletedAt, in.Now)
			if i < len(stages)-1 && in.Gate != nil {
				name := GateName(st.Name)
				ok := slices.DeleteFunc(slices.Clone(st.Clusters), func(c string) bool { return slices.Contains(st.Failed, c) })
				if v := in.Gate(name, ok, st.CompletedAt); !v.Open {
					st.Phase = AwaitingApproval
					if v.Reason == v1alpha1.ReasonSoaking {
						st.Phase = Soaking
					}
					p.Gate = &GateWait{Name: name, ReachedAt: st.CompletedAt, Verdict: v}
					p.recheck(v.RecheckIn)
					open = false
					continue
				}
			}
			st.Phase, st.FinishedAt = Succeeded, finished(was.FinishedAt, in.Now)
		case !st.CompleteSince.IsZero():
			st.Phase = Soaking
			open = false
		default:
			open = false
		}
	}
	p.Stages = stages
	return p, nil
}

// progress judges the stage's clusters: one not complete by the deadline
// has failed, for the rest of the rollout; it reports whether every other
// one has been complete for minSuccessTime.
func (p *Plan) progress(st *Stage, was Stage, in Input) bool {
	st.Failed = slices.Clone(was.Failed)
	all, complete := true, 0
	for _, c := range st.Clusters {
		switch {
		case slices.Contains(st.Failed, c):
		case in.Clusters[c].Complete:
			complete++
		case in.Spec.ProgressDeadline > 0 && !in.Paused && !in.Now.Before(st.DeadlineFrom.Add(in.Spec.ProgressDeadline)):
			st.Failed = append(st.Failed, c)
		default:
			all = false
			if in.Spec.ProgressDeadline > 0 {
				p.recheck(st.DeadlineFrom.Add(in.Spec.ProgressDeadline).Sub(in.Now))
			}
		}
	}
	if !all {
		return false
	}
	if complete == 0 {
		return true // every cluster failed: nothing to soak
	}
	st.CompleteSince = finished(was.CompleteSince, in.Now)
	if left := st.CompleteSince.Add(in.Spec.MinSuccessTime).Sub(in.Now); left > 0 {
		p.recheck(left)
		return false
	}
	return true
}

// finished keeps a time once set.
func finished(was, now time.Time) time.Time {
	if !was.IsZero() {
		return was
	}
	return now
}

func (p *Plan) recheck(d time.Duration) {
	if d > 0 && (p.RecheckIn == 0 || d < p.RecheckIn) {
		p.RecheckIn = d
	}
}
