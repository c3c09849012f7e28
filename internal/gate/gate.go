// Package gate decides whether a rollout may pass a checkpoint. It is pure:
// the clock and the approval arrive as values, and the planner calls it like
// any other observation.
package gate

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Input is one gate at one checkpoint of one rollout.
type Input struct {
	Gate *v1alpha1.Gate
	// Name names the checkpoint (see v1alpha1.GateStatus).
	Name string
	// Revision is the update revision the rollout moves to.
	Revision string
	// ReachedAt is when the rollout reached the checkpoint.
	ReachedAt, Now time.Time
	// Approved is the object's AnnotationApprovedRevision value ("" for none).
	Approved string
	// Measured is the gate's last analysis measurement (nil: none yet).
	Measured *v1alpha1.AnalysisStatus
	// Conditions are the object's status conditions as last observed.
	Conditions []metav1.Condition
}

// conditionsRecheck is how often unmet required conditions are looked at
// again: a condition another controller writes wakes nothing here.
const conditionsRecheck = 5 * time.Second

// Verdict is what the gate says now.
type Verdict struct {
	Open bool
	// Reason and Message say what a closed gate waits for.
	Reason  v1alpha1.ConditionReason
	Message string
	// RecheckIn is when a closed gate may open by itself (a soak ending, the
	// next measurement); 0 when only someone else can open it.
	RecheckIn time.Duration
	// Failed: the analysis failed; Rollback: and the gate says to roll back.
	Failed, Rollback bool
}

// DefaultAnalysisInterval is how often an analysis measures by default.
const DefaultAnalysisInterval = 10 * time.Second

// AnalysisInterval is how often g's analysis measures.
func AnalysisInterval(g *v1alpha1.Gate) time.Duration {
	if g == nil || g.Analysis == nil || g.Analysis.IntervalSeconds <= 0 {
		return DefaultAnalysisInterval
	}
	return time.Duration(g.Analysis.IntervalSeconds) * time.Second
}

// MeasureDue reports whether a gate waiting for its analysis should measure
// now: it has none taken since its soak ended, or the last is an interval old
// and inconclusive.
func MeasureDue(g *v1alpha1.Gate, reachedAt time.Time, last *v1alpha1.AnalysisStatus, now time.Time) bool {
	if g == nil || g.Analysis == nil || now.Before(soakEnd(g, reachedAt)) {
		return false
	}
	if last == nil || last.MeasuredAt.Time.Before(soakEnd(g, reachedAt)) {
		return true
	}
	// a pass opens the gate and a failure is final: only an inconclusive
	// measurement is taken again
	return last.Phase == v1alpha1.AnalysisInconclusive && !now.Before(last.MeasuredAt.Add(AnalysisInterval(g)))
}

func soakEnd(g *v1alpha1.Gate, reachedAt time.Time) time.Time {
	return reachedAt.Add(time.Duration(g.SoakSeconds) * time.Second)
}

// Evaluate checks the soak, the required conditions, the analysis, then the
// approval. A nil gate is open. An approval of the gate also overrides a
// failed analysis.
func Evaluate(in Input) Verdict {
	g := in.Gate
	if g == nil {
		return Verdict{Open: true}
	}
	if soak := time.Duration(g.SoakSeconds) * time.Second; soak > 0 {
		if left := in.ReachedAt.Add(soak).Sub(in.Now); left > 0 {
			return Verdict{Reason: v1alpha1.ReasonSoaking, RecheckIn: left,
				Message: fmt.Sprintf("gate %s soaks %s more (soakSeconds %d)", in.Name, left.Round(time.Second), g.SoakSeconds)}
		}
	}
	if unmet := unmetConditions(g.RequiredConditions, in.Conditions); len(unmet) > 0 {
		return Verdict{Reason: v1alpha1.ReasonAwaitingConditions, RecheckIn: conditionsRecheck,
			Message: fmt.Sprintf("gate %s awaits the conditions %s", in.Name, strings.Join(unmet, ", "))}
	}
	approved := in.Approved == v1alpha1.ApprovalOf(in.Revision, in.Name)
	if g.Analysis != nil {
		if v, done := analysisVerdict(in, approved); !done {
			return v
		}
	}
	if g.Approval && !approved {
		return Verdict{Reason: v1alpha1.ReasonAwaitingApproval,
			Message: fmt.Sprintf("gate %s awaits approval of revision %s (kubectl lockstep approve, or the annotation %s=%s)",
				in.Name, in.Revision, v1alpha1.AnnotationApprovedRevision, v1alpha1.ApprovalOf(in.Revision, in.Name))}
	}
	return Verdict{Open: true}
}

// ReplicasName names the checkpoint after n updated PodCliqueSet replicas.
func ReplicasName(n int32) string { return fmt.Sprintf("replicas-%d", n) }

// StepName names the checkpoint after role step k (from 1) of replica i.
func StepName(replica int32, k int) string { return fmt.Sprintf("replica-%d-step-%d", replica, k) }

// analysisVerdict judges the last measurement taken since the soak ended;
// done is true when it passed (or failed and the approval overrides it).
func analysisVerdict(in Input, approved bool) (Verdict, bool) {
	g, m := in.Gate, in.Measured
	if m == nil || m.MeasuredAt.Time.Before(soakEnd(g, in.ReachedAt)) {
		return Verdict{Reason: v1alpha1.ReasonAnalysisRunning, RecheckIn: time.Second,
			Message: fmt.Sprintf("gate %s measures: %s", in.Name, describe(g.Analysis))}, false
	}
	switch m.Phase {
	case v1alpha1.AnalysisPassed:
		return Verdict{}, true
	case v1alpha1.AnalysisFailed:
		if approved {
			return Verdict{}, true
		}
		v := Verdict{Reason: v1alpha1.ReasonAnalysisFailed, Failed: true, Rollback: g.OnFailure == v1alpha1.GateFailureRollback}
		if v.Rollback {
			v.Message = fmt.Sprintf("gate %s: the analysis failed (%s): rolling back", in.Name, m.Message)
		} else {
			v.Message = fmt.Sprintf("gate %s: the analysis failed (%s): held until the gate is approved (kubectl lockstep approve, or the annotation %s=%s) or the spec changes",
				in.Name, m.Message, v1alpha1.AnnotationApprovedRevision, v1alpha1.ApprovalOf(in.Revision, in.Name))
		}
		return v, false
	}
	next := max(m.MeasuredAt.Add(AnalysisInterval(g)).Sub(in.Now), time.Second)
	return Verdict{Reason: v1alpha1.ReasonAnalysisRunning, RecheckIn: next,
		Message: fmt.Sprintf("gate %s: the analysis is inconclusive (%s); it measures again", in.Name, m.Message)}, false
}

// Of is the gate named name in spec: replicas-N is spec.updateStrategy.gate,
// replica-I-step-K the gate of role step K; nil for none.
func Of(spec *v1alpha1.PodCliqueSetSpec, name string) *v1alpha1.Gate {
	var n, i, k int
	if _, err := fmt.Sscanf(name, "replicas-%d", &n); err == nil && name == ReplicasName(int32(n)) {
		return spec.UpdateStrategy.Gate
	}
	if _, err := fmt.Sscanf(name, "replica-%d-step-%d", &i, &k); err == nil && name == StepName(int32(i), k) {
		if ru := spec.UpdateStrategy.RoleUpgrade; ru != nil && k >= 1 && k <= len(ru.Steps) {
			return ru.Steps[k-1].Gate
		}
	}
	return nil
}

// describe names what an analysis measures.
func describe(a *v1alpha1.GateAnalysis) string {
	switch {
	case a.Prometheus != nil:
		return a.Prometheus.Query
	case a.Webhook != nil:
		return "webhook " + a.Webhook.URL
	}
	return "nothing"
}

// unmetConditions lists the required conditions conds does not meet, as
// "Type=Status (now X)".
func unmetConditions(required []v1alpha1.RequiredCondition, conds []metav1.Condition) []string {
	var out []string
	for _, r := range required {
		now := "absent"
		if c := apimeta.FindStatusCondition(conds, r.Type); c != nil {
			if c.Status == r.Status {
				continue
			}
			now = string(c.Status)
		}
		out = append(out, fmt.Sprintf("%s=%s (now %s)", r.Type, r.Status, now))
	}
	return out
}
