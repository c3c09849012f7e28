package align

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Play runs the seed's first story (10 units split 4/6 over two Deployment
// members, maxUnavailable 2, maxSurge 1) to the end within the global floor
// and ceiling on every wave, in about units / budget waves.
func TestPlay_DeploymentsSplitFourSixFinishWithinTheBudget(t *testing.T) {
	fleet := []*SimMember{NewSimMember("eu-1", Deployment, 4), NewSimMember("us-1", Deployment, 6)}
	s := Strategy{Replicas: 10, MaxUnavailable: intstr.FromInt32(2), MaxSurge: intstr.FromInt32(1)}
	waves, done, err := Play(s, fleet, 50)
	if err != nil || !done {
		t.Fatalf("done %v, err %v after %d waves", done, err, len(waves))
	}
	for i, w := range waves {
		if w.Available < 8 || w.Units > 11 {
			t.Fatalf("wave %d: %d available (floor 8), %d units (ceiling 11)", i+1, w.Available, w.Units)
		}
	}
	last := waves[len(waves)-1]
	for _, m := range last.Members {
		if m.Updated != m.Desired || m.Available != m.Desired {
			t.Fatalf("%s ends with %d updated, %d available of %d", m.Name, m.Updated, m.Available, m.Desired)
		}
	}
	// 10 units, 3 at a time (2 unavailable + 1 surge): at least 4 waves
	if len(waves) < 4 || len(waves) > 12 {
		t.Fatalf("%d waves, want between 4 and 12", len(waves))
	}
}
