package fleetsim

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/deploysim"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// The planner's simulated members (align.SimMember) read a Deployment member
// as the hub does without going through its objects: for any state the
// Deployment and ReplicaSet controllers leave, however far each status
// trails, align.DeploymentStatus is what the hub reads of the objects this
// package writes from it (member.StatusOf, then member.WithReplicaSets).
func TestDeploymentStatus_IsWhatTheHubReads(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := deploysim.Spec{Replicas: int32(rapid.IntRange(0, 6).Draw(t, "replicas")), Template: "old",
			MaxUnavailable: intstr.FromInt32(int32(rapid.IntRange(0, 2).Draw(t, "maxUnavailable"))),
			MaxSurge:       intstr.FromInt32(int32(rapid.IntRange(0, 2).Draw(t, "maxSurge")))}
		var d *deploysim.Deployment
		if rapid.Bool().Draw(t, "created paused") {
			spec.Paused = true
			d = deploysim.New(spec)
		} else {
			d = deploysim.AtRest(spec)
		}
		for range rapid.IntRange(0, 20).Draw(t, "steps") {
			switch rapid.IntRange(0, 6).Draw(t, "step") {
			case 0:
				spec.Template = rapid.SampledFrom([]string{"old", "new"}).Draw(t, "template")
				spec.Paused = rapid.Bool().Draw(t, "paused")
				spec.Replicas = int32(rapid.IntRange(0, 6).Draw(t, "new replicas"))
				d.SetSpec(spec)
			case 1, 2:
				d.Sync()
			case 3:
				d.SyncReplicaSets()
			case 4:
				d.ReportReplicaSets()
			case 5:
				d.StartPods()
			case 6:
				d.RemoveTerminating()
			}
		}
		obj := deployment(int64(spec.Replicas))
		obj.SetUID("dep")
		obj.SetAnnotations(map[string]string{fleetv1alpha1.AnnotationTemplateRevision: spec.Template})
		obj.SetGeneration(int64(rapid.IntRange(1, 3).Draw(t, "generation")))
		m := &Member{Name: "m", obj: obj, dep: d, synced: int64(rapid.IntRange(1, 3).Draw(t, "synced"))}
		m.Report()
		got := member.WithReplicaSets(member.StatusOf(m.Get(), "new"), m.Get(), m.ReplicaSets(), "new")
		if want := align.DeploymentStatus(d, spec.Template == "new"); got.Status != want {
			t.Fatalf("the hub reads %+v, the planner's tests %+v: %s", got.Status, want, d)
		}
		if got.Stale != (m.synced < obj.GetGeneration()) {
			t.Fatalf("stale %v at generation %d, synced %d", got.Stale, obj.GetGeneration(), m.synced)
		}
	})
}
