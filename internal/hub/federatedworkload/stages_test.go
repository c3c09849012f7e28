package federatedworkload

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

// A stage is counted once, when a round ends it, and its duration runs from
// its start to its completion: the time at the gate after it is not counted.
func TestRecordStages_CountsEachStageOnceWithoutItsGateTime(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	completed := metav1.NewTime(start.Add(40 * time.Second))
	finished := metav1.NewTime(start.Add(time.Hour)) // approved an hour later
	waiting := []fleetv1alpha1.StageStatus{
		{Name: "canary-0", Phase: fleetv1alpha1.StageAwaitingApproval, StartedAt: &start, CompletedAt: &completed},
		{Name: "group-1", Phase: fleetv1alpha1.StagePending},
	}
	passed := []fleetv1alpha1.StageStatus{
		{Name: "canary-0", Phase: fleetv1alpha1.StageSucceeded, StartedAt: &start, CompletedAt: &completed, FinishedAt: &finished},
		{Name: "group-1", Phase: fleetv1alpha1.StageFailed, StartedAt: &finished},
	}
	succeeded, failed := testutil.ToFloat64(stagesEnded.WithLabelValues("succeeded")), testutil.ToFloat64(stagesEnded.WithLabelValues("failed"))
	before := histogram(t)
	recordStages(waiting, passed)
	recordStages(passed, passed) // a later round ends nothing
	if d := testutil.ToFloat64(stagesEnded.WithLabelValues("succeeded")) - succeeded; d != 1 {
		t.Errorf("succeeded counted %v times", d)
	}
	if d := testutil.ToFloat64(stagesEnded.WithLabelValues("failed")) - failed; d != 1 {
		t.Errorf("failed counted %v times", d)
	}
	after := histogram(t)
	if n, sum := after.GetSampleCount()-before.GetSampleCount(), after.GetSampleSum()-before.GetSampleSum(); n != 1 || sum != 40 {
		t.Errorf("durations observed: %d summing to %vs, want one of 40s", n, sum)
	}
}

func histogram(t *testing.T) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := stageDuration.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
