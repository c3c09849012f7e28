package gate

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Scripted is a result an offline simulation gives the analysis of gate
// Gate, in place of a measurement: taken once the analysis is due at or
// after At (from the start of the simulation), Passed or Failed.
type Scripted struct {
	At    time.Duration
	Gate  string
	Phase v1alpha1.AnalysisPhase
}

// TakeScripted is the measurement the first result scripted for gate name
// gives at now (simulated time since the start; at on the clock), and the
// results left; nil when none is due.
func TakeScripted(results []Scripted, name string, now time.Duration, at time.Time) (*v1alpha1.AnalysisStatus, []Scripted) {
	i := slices.IndexFunc(results, func(r Scripted) bool { return r.Gate == name && r.At <= now })
	if i < 0 {
		return nil, results
	}
	m := &v1alpha1.AnalysisStatus{Phase: results[i].Phase, MeasuredAt: metav1.NewTime(at), Message: "scripted (lockstep plan --analysis)"}
	return m, slices.Delete(slices.Clone(results), i, i+1)
}
