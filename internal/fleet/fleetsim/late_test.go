package fleetsim

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A late member's reads trail its reports by Late: the hub sees no status
// until the first report has come through, then each report Late reports
// after it was made, with the ReplicaSets and revision annotation of the
// same moment. The object itself, and the hub's writes to it, are current.
func TestMember_ALateMembersReadsTrailItsReports(t *testing.T) {
	m := NewMember("a")
	m.Late = 2
	if err := m.Create(deployment(3)); err != nil {
		t.Fatal(err)
	}
	readOG := func() (int64, bool) {
		og, found, _ := unstructured.NestedInt64(m.Get().Object, "status", "observedGeneration")
		return og, found
	}
	var reported []int64 // the observedGeneration of each report
	step := func() {
		t.Helper()
		if err := m.Act(); err != nil {
			t.Fatal(err)
		}
		m.Settle()
		m.Report()
		og, _, _ := unstructured.NestedInt64(m.obj.Object, "status", "observedGeneration")
		reported = append(reported, og)
	}

	step()
	if _, found := readOG(); found || len(m.ReplicaSets()) != 0 || m.Get().GetAnnotations()[deploymentRevision] != "" {
		t.Fatalf("after one report the hub reads a status, ReplicaSets or a revision: %v", m.Get().Object)
	}
	if !m.ReportsInFlight() {
		t.Error("a report not yet read is not in flight")
	}
	step()
	// A write of the hub lands at once: a new generation the reads show
	// while their status still trails.
	mine := deployment(5)
	mine.SetUID(m.Get().GetUID())
	if err := m.Apply(mine); err != nil {
		t.Fatal(err)
	}
	if m.Get().GetGeneration() != 2 {
		t.Fatalf("the hub's write is not read back at once: generation %d", m.Get().GetGeneration())
	}
	step()
	if og, _ := readOG(); og != reported[0] || len(m.ReplicaSets()) != 1 {
		t.Fatalf("after three reports the hub reads observedGeneration %d and %d ReplicaSets; want the first report's (%d, 1)",
			og, len(m.ReplicaSets()), reported[0])
	}
	step()
	step()
	if og, _ := readOG(); og != 2 || og != reported[len(reported)-3] {
		t.Fatalf("the hub reads observedGeneration %d; want the report of two reports ago, 2 (reports %v)", og, reported)
	}
	// Nothing moves any more: once the hub has read the same report as
	// the latest twice over, none is in flight.
	for range 3 {
		step()
	}
	if m.ReportsInFlight() {
		t.Errorf("reports still in flight after the member came to rest: %v", reported)
	}
}
