package rollout

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// Counts and the messages that carry them may wait for the next write; the
// rest of a child's status may not.
func TestChildProgressOnly(t *testing.T) {
	prev := v1alpha1.ChildStatus{Replicas: 10, ReadyReplicas: 7, AvailableReplicas: 7, UpdatedReplicas: 3, UpdatedReadyReplicas: 2,
		ScheduledReplicas: 9, CurrentRevision: "a", UpdateRevision: "b",
		Conditions: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "RollingUpdate", Message: "3 of 10 updated"}}}
	counts := func(s *v1alpha1.ChildStatus) {
		s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas, s.UpdatedReadyReplicas, s.ScheduledReplicas = 8, 8, 4, 3, 10
		s.Conditions[0].Message = "4 of 10 updated"
	}
	cases := []struct {
		name   string
		change func(*v1alpha1.ChildStatus)
		want   bool
	}{
		{"counts and a message", counts, true},
		{"replicas", func(s *v1alpha1.ChildStatus) { counts(s); s.Replicas = 11 }, false},
		{"the current revision", func(s *v1alpha1.ChildStatus) { counts(s); s.CurrentRevision = "b" }, false},
		{"a condition's reason", func(s *v1alpha1.ChildStatus) { counts(s); s.Conditions[0].Reason = "Complete" }, false},
		{"every unit available", func(s *v1alpha1.ChildStatus) { counts(s); s.AvailableReplicas = 10 }, false},
		{"every unit updated", func(s *v1alpha1.ChildStatus) { counts(s); s.UpdatedReplicas = 10 }, false},
		{"the pods selected to update", func(s *v1alpha1.ChildStatus) {
			s.UpdateProgress = &v1alpha1.ChildUpdateProgress{PodsSelectedToUpdate: []string{"p-4"}}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next := *prev.DeepCopy()
			c.change(&next)
			if got := ChildProgressOnly(prev, next, 10); got != c.want {
				t.Fatalf("ChildProgressOnly = %v, want %v", got, c.want)
			}
		})
	}
	// A count falling from the spec's replicas may wait: the parent sees the
	// pods go before any status.
	full := *prev.DeepCopy()
	full.AvailableReplicas, full.UpdatedReplicas = 10, 10
	less := *full.DeepCopy()
	less.AvailableReplicas, less.UpdatedReplicas = 9, 9
	if !ChildProgressOnly(full, less, 10) {
		t.Fatal("available and updated falling below the replicas may not wait")
	}
}
