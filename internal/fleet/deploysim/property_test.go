package deploysim

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"
)

func drawLimit(t *rapid.T, label string) intstr.IntOrString {
	if rapid.Bool().Draw(t, label+" is percent") {
		return intstr.FromString(fmt.Sprintf("%d%%", rapid.IntRange(0, 100).Draw(t, label+" percent")))
	}
	return intstr.FromInt32(int32(rapid.IntRange(0, 3).Draw(t, label)))
}

// The model keeps the real controller's own guarantees, whatever the order
// its controllers run in and however late the ReplicaSets report: from a
// Deployment at rest, over a template change (maybe paused and resumed), its
// ReplicaSets never ask for more than replicas + maxSurge, and, pods never
// failing, never fewer than replicas − maxUnavailable pods are available;
// once time passes and every controller runs, it ends with every pod on the
// new template, available.
//
// Not drawn: a change back to the first template mid-rollout. The real
// controller then takes the old ReplicaSet for the new one while it may still
// report the pods it was just told to delete (a ReplicaSet's status counts
// the pods it saw before it acted), and can scale the other one down past
// maxUnavailable; the model does the same.
func TestDeployment_KeepsItsLimitsAndCompletes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := Spec{Replicas: int32(rapid.IntRange(0, 8).Draw(t, "replicas")), Template: "v1",
			MaxUnavailable: drawLimit(t, "maxUnavailable"), MaxSurge: drawLimit(t, "maxSurge")}
		d := AtRest(s)
		s.Template = "v2"
		d.SetSpec(s)
		surge, minAvailable := s.maxSurge(), s.minAvailable()
		for step := range rapid.IntRange(0, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 6).Draw(t, "step") {
			case 0, 1:
				d.Sync()
			case 2:
				d.SyncReplicaSets()
			case 3:
				d.ReportReplicaSets()
			case 4:
				d.StartPods()
			case 5:
				d.RemoveTerminating()
			case 6:
				s.Paused = !s.Paused
				d.SetSpec(s)
			}
			if r := replicasOf(d.ReplicaSets); r > s.Replicas+surge {
				t.Fatalf("step %d: ReplicaSets ask for %d, most %d: %s", step, r, s.Replicas+surge, d)
			}
			if a := d.Pods().Available; a < minAvailable {
				t.Fatalf("step %d: %d available, least %d: %s", step, a, minAvailable, d)
			}
		}
		s.Paused = false
		d.SetSpec(s)
		for range 4*s.Replicas + 8 {
			d.Sync()
			d.SyncReplicaSets()
			d.StartPods()
			d.RemoveTerminating()
			d.ReportReplicaSets()
		}
		d.Sync()
		rs := d.Of(s.Template)
		if rs == nil || rs.Pods != (Pods{Available: s.Replicas}) || replicasOf(d.ReplicaSets) != s.Replicas ||
			d.Status != (Status{ObservedGeneration: d.Generation, Replicas: s.Replicas, Updated: s.Replicas, Available: s.Replicas}) {
			t.Fatalf("not done: %s, status %+v", d, d.Status)
		}
	})
}
