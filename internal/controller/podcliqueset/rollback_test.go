package podcliqueset

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/internal/revision"
)

// Rolling back restores everything a revision is made of: after it, the spec
// hashes to the old revision itself, also when the group replicas' shape
// (member replicas, minAvailable) changed since.
func TestRestoreRevision_TheSpecBecomesTheOldRevision(t *testing.T) {
	v1 := readExample(t, "../../../examples/disaggregated.yaml")
	v2 := v1.DeepCopy()
	for i := range v2.Spec.Template.Cliques {
		c := &v2.Spec.Template.Cliques[i]
		c.Template.Spec.Containers[0].Image += "-next"
		if v2.Spec.Template.ScalingGroupOf(c.Name) != nil {
			c.Replicas++
			c.MinAvailable = ptr.To(c.Replicas)
		}
	}
	old, err := revision.ForSpec(v1.Name, &v1.Spec)
	if err != nil {
		t.Fatal(err)
	}
	restoreRevision(&v2.Spec.Template, &v1.Spec.Template)
	got, err := revision.ForSpec(v2.Name, &v2.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != old.Name {
		t.Fatalf("after the rollback the spec is revision %s, want the old revision %s", got.Name, old.Name)
	}
	if v2.Spec.Template.ScalingGroup("prefill") == nil {
		t.Fatal("the example lost its scaling group")
	}
}
