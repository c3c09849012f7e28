//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// replicaImages is the image tags of the live pods of each replica of the
// plugin example.
func replicaImages(o *observed) map[int]map[string]int {
	out := map[int]map[string]int{}
	for r := range 2 {
		out[r] = map[string]int{}
		for i := range 2 {
			if p := livePodAt(o, r, "server", i); p != nil {
				out[r][imageTag(p)]++
			}
		}
	}
	return out
}

// An approval gate after each replica on the local cluster: replica 0 rolls
// to v2, then the rollout waits (status exits 4 AwaitingApproval, get shows
// the gate and the command) with replica 1 untouched, until `kubectl
// lockstep approve`; then it completes. The monitor checks every budget
// meanwhile.
func TestGate_ApprovalHoldsAfterReplicaZeroUntilApproved(t *testing.T) {
	pcs := parsePCS(t, pluginPCS)
	pcs.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true}
	s := newScene(t, 1, pcs)
	ns, name := s.ns, s.name
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")

	s.update(setImageTag("v2"))
	if out := expectPlugin(t, ns, 4, "status", name, "--timeout", "2m"); !strings.Contains(out, "AwaitingApproval") {
		t.Fatalf("status of a rollout at an approval gate said %q", out)
	}
	held, err := s.observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	heldAt := time.Now()
	if got := replicaImages(held); got[0]["v2"] != 2 || got[1]["v1"] != 2 {
		t.Fatalf("at the gate: replica images %v, want replica 0 on v2 and replica 1 on v1", got)
	}
	if out := expectPlugin(t, ns, 0, "get", "pcs", name); !strings.Contains(out, "replicas-1 awaiting approval") || !strings.Contains(out, "kubectl lockstep approve "+name) {
		t.Errorf("get at the gate does not show it:\n%s", out)
	}
	// The gate stays closed: replica 1 keeps v1 over several of the
	// operator's passes (each pod readiness or status write wakes it).
	s.mustAwait("a few seconds at the closed gate", 30*time.Second, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		if got := replicaImages(o); got[1]["v1"] != 2 {
			t.Fatalf("replica 1 moved behind a closed gate: %v", got)
		}
		return time.Since(heldAt) > 5*time.Second, o.describe(), nil
	})

	if out := expectPlugin(t, ns, 0, "approve", name); !strings.Contains(out, "@replicas-1") {
		t.Errorf("approve said %q", out)
	}
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")
	end, err := s.observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	live := end.pcs
	s.assertRolledOut(end, live)
	if up := live.Status.UpdateProgress; up == nil || up.ReplicaGatesPassed != 1 || up.Gate != nil {
		t.Errorf("progress after the rollout: %+v, want replicas-1 passed and no gate waiting", up)
	}
}
