package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNewRollouts_RegistersOnceAndSurvivesARestartInOneProcess(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := NewRollouts(reg)
	first.InProgress.WithLabelValues("ns", "pcs").Set(1)
	second := NewRollouts(reg) // a second operator start in the same process
	if got := testutil.ToFloat64(second.InProgress.WithLabelValues("ns", "pcs")); got != 1 {
		t.Fatalf("the restarted operator lost the series: got %v", got)
	}
	second.Forget("ns", "pcs")
	if n := testutil.CollectAndCount(second.InProgress); n != 0 {
		t.Fatalf("%d series left after Forget", n)
	}
}
