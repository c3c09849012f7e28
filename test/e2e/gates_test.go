//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/testenv"
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

// analysisProm is the Prometheus the operator may query (TestMain starts it
// scraping the operator and exporter); testProm is that server.
var (
	analysisProm string
	testProm     *testenv.Prometheus
)

// exporter is the target whose test_error_ratio series the tests move.
var exporter testenv.Exporter

// A gate measured in a real Prometheus, twice: first on the operator's own
// metrics (available servers of this PodCliqueSet), which pass, so the
// rollout to v2 goes on by itself; then on an error ratio the test turns bad
// once the rollout to v3 starts, so replica 0 comes back to v2 and the rollout
// ends on v2 with an AnalysisRollback event. The monitor checks every budget
// meanwhile, the rollback included.
func TestGate_AnalysisPassesThenATurnedBadQueryRollsBack(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, pluginPCS))
	ns, name := s.ns, s.name
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")
	exporter.Set(ns, "0.01")
	gateOn := func(query string) *v1alpha1.Gate {
		return &v1alpha1.Gate{OnFailure: v1alpha1.GateFailureRollback, Analysis: &v1alpha1.GateAnalysis{IntervalSeconds: 2,
			Prometheus: &v1alpha1.PrometheusAnalysis{Address: analysisProm, Query: query, SuccessCondition: "result >= 3"}}}
	}
	s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
		spec.UpdateStrategy.Gate = gateOn(fmt.Sprintf(`sum(lockstep_podcliqueset_role_units_available{namespace=%q, podcliqueset=%q})`, ns, name))
		setImageTag("v2")(spec)
	})
	expectPlugin(t, ns, 0, "status", name, "--timeout", "3m")
	if o, err := s.observe(t.Context()); err != nil {
		t.Fatal(err)
	} else if got := replicaImages(o); got[0]["v2"] != 2 || got[1]["v2"] != 2 {
		t.Fatalf("after a passing analysis: %v, want every pod on v2", got)
	}

	s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
		spec.UpdateStrategy.Gate = gateOn(fmt.Sprintf(`scalar(1 / max(test_error_ratio{ns=%q}))`, ns)) // 100 now: passes
		setImageTag("v3")(spec)
	})
	exporter.Set(ns, "0.5") // v3 turns bad: 1/0.5 = 2 < 3
	s.mustAwait("the failed analysis to roll back to v2", 3*time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		got := replicaImages(o)
		return progressingIs(o.pcs, v1alpha1.ReasonRolloutComplete) && got[0]["v2"] == 2 && got[1]["v2"] == 2, o.describe(), nil
	})
	var events eventsv1.EventList
	if err := testCluster.Client.List(t.Context(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	rolledBack := false
	for _, e := range events.Items {
		rolledBack = rolledBack || e.Reason == "AnalysisRollback" && strings.Contains(e.Note, "replicas-1")
	}
	if !rolledBack {
		t.Error("no AnalysisRollback event")
	}
}
