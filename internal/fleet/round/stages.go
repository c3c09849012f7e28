package round

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/stages"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/metatime"
)

// DecisionGroups are a placement's decision groups, from the labels its
// PlacementDecisions carry (name and index), each with its clusters sorted.
// A decision without an index label counts as group 0.
func DecisionGroups(decisions []fleetv1alpha1.PlacementDecision) []stages.Group {
	byIndex := map[int32]*stages.Group{}
	for i := range decisions {
		d := &decisions[i]
		idx, _ := strconv.ParseInt(d.Labels[fleetv1alpha1.LabelDecisionGroupIndex], 10, 32)
		g := byIndex[int32(idx)]
		if g == nil {
			g = &stages.Group{Index: int32(idx), Name: d.Labels[fleetv1alpha1.LabelDecisionGroupName]}
			byIndex[int32(idx)] = g
		}
		for _, c := range d.Status.Decisions {
			if !slices.Contains(g.Clusters, c.ClusterName) {
				g.Clusters = append(g.Clusters, c.ClusterName)
			}
		}
	}
	out := make([]stages.Group, 0, len(byIndex))
	for _, idx := range slices.Sorted(maps.Keys(byIndex)) {
		g := byIndex[idx]
		slices.Sort(g.Clusters)
		out = append(out, *g)
	}
	return out
}

// stagesSpec is the workload's stages as the planner takes them, nil when
// it has none.
func stagesSpec(fw *fleetv1alpha1.FederatedWorkload) *stages.Spec {
	rs := fw.Spec.RolloutStrategy.Stages
	if rs == nil {
		return nil
	}
	s := &stages.Spec{Type: rs.Type, MaxConcurrency: rs.MaxConcurrency, MaxFailures: rs.MaxFailures,
		MinSuccessTime: rs.MinSuccessTime.Duration, ProgressDeadline: rs.ProgressDeadline.Duration}
	for _, g := range rs.MandatoryDecisionGroups {
		if g.GroupIndex != nil {
			s.Mandatory = append(s.Mandatory, fmt.Sprintf("#%d", *g.GroupIndex))
		} else {
			s.Mandatory = append(s.Mandatory, g.GroupName)
		}
	}
	return s
}

// planStaged plans the round's grants under the workload's stages: members
// whose stage has not started are held (align.Member.Held). Which stage may
// start depends on which clusters are complete under the plan, and the plan
// on which stages started, so it plans with the stages started so far, walks
// the stages with what that plan completes, and plans again when the walk
// started another stage. walk is nil without stages.
func planStaged(in Input, revision string, ms []*observed, strategy align.Strategy) (align.Plan, *stages.Plan, error) {
	members := alignMembers(ms)
	fw := in.Workload
	spec := stagesSpec(fw)
	if spec == nil || !rollingOut(fw, revision, members) {
		p, err := align.Align(strategy, members)
		return p, nil, err
	}
	staged := map[string]bool{}
	for _, g := range in.Groups {
		for _, c := range g.Clusters {
			staged[c] = true
		}
	}
	walkIn := stages.Input{Spec: *spec, Groups: in.Groups, Clusters: map[string]stages.Cluster{}, Now: in.Now,
		Previous: previousStages(fw, revision), Gate: stageGate(fw, revision, in.Now, memberConditions(ms)), Paused: fw.Spec.RolloutStrategy.Paused}
	before, err := stages.Walk(walkIn)
	if err != nil {
		return align.Plan{}, nil, err
	}
	hold(members, staged, before.Active)
	p, err := align.Align(strategy, members)
	if err != nil {
		return align.Plan{}, nil, err
	}
	for i, m := range members {
		if staged[m.Name] {
			walkIn.Clusters[m.Name] = stages.Cluster{Complete: align.Finished(p, m, p.Members[i])}
		}
	}
	walk, err := stages.Walk(walkIn)
	if err != nil {
		return align.Plan{}, nil, err
	}
	if !maps.Equal(walk.Active, before.Active) {
		hold(members, staged, walk.Active)
		if p, err = align.Align(strategy, members); err != nil {
			return align.Plan{}, nil, err
		}
	}
	return p, &walk, nil
}

// rollingOut: the stages apply. They do to a rollout from one template
// revision to another, from its first round (the status reports the revision
// before) until it ends, and not to a new workload's first members, which
// replace nothing (nor to a rollout under way when the stages were set: they
// apply from the next template change). With the status lost, a rollout is
// under way where a member runs units of another revision.
func rollingOut(fw *fleetv1alpha1.FederatedWorkload, revision string, members []align.Member) bool {
	switch was := fw.Status.UpdateRevision; {
	case was == revision:
		return len(fw.Status.Stages) > 0
	case was != "":
		return true
	}
	return slices.ContainsFunc(members, func(m align.Member) bool { return m.Status.Replicas+m.Status.Terminating > m.Status.Updated })
}

func hold(members []align.Member, staged, active map[string]bool) {
	for i := range members {
		members[i].Held = staged[members[i].Name] && !active[members[i].Name]
	}
}

// previousStages are the stages the status reports for revision: none when
// it reports another revision's (a new rollout starts at the first stage).
func previousStages(fw *fleetv1alpha1.FederatedWorkload, revision string) []stages.Stage {
	if fw.Status.UpdateRevision != revision {
		return nil
	}
	out := make([]stages.Stage, 0, len(fw.Status.Stages))
	for _, s := range fw.Status.Stages {
		out = append(out, stages.Stage{Name: s.Name, Clusters: s.Clusters, Phase: s.Phase, Failed: s.FailedClusters,
			StartedAt: metatime.Of(s.StartedAt), DeadlineFrom: metatime.Of(s.DeadlineFrom), CompleteSince: metatime.Of(s.CompleteSince), CompletedAt: metatime.Of(s.CompletedAt), FinishedAt: metatime.Of(s.FinishedAt)})
	}
	return out
}

// stageGate judges the gate after a stage (internal/gate), with the
// workload's approval annotation, the last measurement the status reports
// for that gate, and as conditions those every member object of the stage
// reports (conds, by cluster).
func stageGate(fw *fleetv1alpha1.FederatedWorkload, revision string, now time.Time, conds map[string][]metav1.Condition) func(string, []string, time.Time) gate.Verdict {
	g := fw.Spec.RolloutStrategy.Stages.Gate
	if g == nil {
		return nil
	}
	return func(name string, clusters []string, reachedAt time.Time) gate.Verdict {
		return gate.Evaluate(gate.Input{Gate: g, Name: name, Revision: revision, ReachedAt: reachedAt, Now: now,
			Approved: fw.Annotations[v1alpha1.AnnotationApprovedRevision], Measured: Measured(fw, name, reachedAt),
			Conditions: commonConditions(clusters, conds)})
	}
}

// memberConditions are the conditions each member object reports, by
// cluster; a member not read, or without an object of the workload's, has
// none.
func memberConditions(ms []*observed) map[string][]metav1.Condition {
	out := make(map[string][]metav1.Condition, len(ms))
	for _, m := range ms {
		if m.held == nil {
			continue
		}
		list, _, _ := unstructured.NestedSlice(m.held.Object, "status", "conditions")
		for _, c := range list {
			cm, _ := c.(map[string]any)
			t, _ := cm["type"].(string)
			st, _ := cm["status"].(string)
			if t != "" {
				out[m.Name] = append(out[m.Name], metav1.Condition{Type: t, Status: metav1.ConditionStatus(st)})
			}
		}
	}
	return out
}

// commonConditions are the type=status pairs every one of clusters reports:
// a stage gate's required condition holds when each member object of the
// stage has it.
func commonConditions(clusters []string, conds map[string][]metav1.Condition) []metav1.Condition {
	if len(clusters) == 0 {
		return nil
	}
	var out []metav1.Condition
	for _, c := range conds[clusters[0]] {
		if !slices.ContainsFunc(clusters[1:], func(o string) bool {
			return !slices.ContainsFunc(conds[o], func(x metav1.Condition) bool { return x.Type == c.Type && x.Status == c.Status })
		}) {
			out = append(out, c)
		}
	}
	return out
}

// Measured is the last measurement the status reports for the stage gate
// name reached at reachedAt, nil for none.
func Measured(fw *fleetv1alpha1.FederatedWorkload, name string, reachedAt time.Time) *v1alpha1.AnalysisStatus {
	if g := fw.Status.Gate; g != nil && g.Name == name && g.ReachedAt.Unix() == reachedAt.Unix() {
		// (status times are kept to the second)
		return g.Analysis
	}
	return nil
}

// stagesStatus is status.stages and status.gate after the walk.
func stagesStatus(fw *fleetv1alpha1.FederatedWorkload, walk *stages.Plan) ([]fleetv1alpha1.StageStatus, *v1alpha1.GateStatus) {
	if walk == nil {
		return nil, nil
	}
	out := make([]fleetv1alpha1.StageStatus, 0, len(walk.Stages))
	for _, s := range walk.Stages {
		out = append(out, fleetv1alpha1.StageStatus{Name: s.Name, Clusters: s.Clusters, Phase: s.Phase, FailedClusters: s.Failed,
			StartedAt: metatime.Ptr(s.StartedAt), DeadlineFrom: metatime.Ptr(s.DeadlineFrom), CompleteSince: metatime.Ptr(s.CompleteSince), CompletedAt: metatime.Ptr(s.CompletedAt), FinishedAt: metatime.Ptr(s.FinishedAt)})
	}
	var gs *v1alpha1.GateStatus
	if w := walk.Gate; w != nil {
		gs = &v1alpha1.GateStatus{Name: w.Name, Reason: w.Verdict.Reason, ReachedAt: metav1.NewTime(w.ReachedAt),
			Analysis: Measured(fw, w.Name, w.ReachedAt)}
	}
	return out, gs
}

// stageProgress is the Progressing condition under the stages: a halt or a
// closed gate says so, anything else is left as the members made it.
func stageProgress(prog metav1.Condition, walk *stages.Plan) metav1.Condition {
	switch {
	case walk == nil:
		return prog
	case walk.Halted:
		var failed []string
		for _, s := range walk.Stages {
			failed = append(failed, s.Failed...)
		}
		prog.Status, prog.Reason = metav1.ConditionFalse, string(fleetv1alpha1.FederatedWorkloadReasonMaxFailuresExceeded)
		prog.Message = fmt.Sprintf("halted: %s past their stage's progressDeadline (%s), more than maxFailures %d allows; no further stage starts until the template or the stages change",
			plural(walk.Failures, "cluster"), strings.Join(failed, ", "), walk.MaxFailures)
	case walk.Gate != nil && prog.Reason != string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused) &&
		prog.Reason != string(fleetv1alpha1.FederatedWorkloadReasonMemberObjectConflict):
		v := walk.Gate.Verdict
		prog.Status, prog.Reason, prog.Message = metav1.ConditionTrue, string(v.Reason), v.Message
		if v.Failed {
			prog.Status = metav1.ConditionFalse
		}
	}
	return prog
}

// stagesMessage names the stages not yet succeeded and where they stand.
func stagesMessage(walk *stages.Plan) string {
	var parts []string
	for _, s := range walk.Stages {
		if s.Phase != stages.Succeeded {
			parts = append(parts, fmt.Sprintf("stage %s %s", s.Name, s.Phase))
		}
	}
	return strings.Join(parts, ", ")
}
