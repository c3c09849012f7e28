//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/test/bench"
)

// envBenchPods sets the pods each rollout of TestBench_RolloutAgainstTheDeploymentController
// rolls; `make bench-rollout` sets 60. The e2e suite runs a short version.
const envBenchPods = "LOCKSTEP_BENCH_PODS"

// The same pods and budgets rolled by the Deployment controller and by
// Lockstep, one after the other on one cluster, each pod ready exactly 1 s after
// it is bound and gone 1 s after it is deleted: wall time against the ideal
// (waves × 1 s) and the apiserver's writes, per strategy. The figures are
// printed, not asserted (speed is measured, not tested); the test asserts that
// every rollout finishes and that every write was counted.
func TestBench_RolloutAgainstTheDeploymentController(t *testing.T) {
	pods := 6
	if v := os.Getenv(envBenchPods); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", envBenchPods, v)
		}
		pods = n
	}
	if err := testCluster.SetNodes(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	const ready = time.Second
	r := &bench.Runner{
		Client: testCluster.Client, Config: testCluster.RESTConfig, Namespace: newNamespace(t, "bench"),
		Pods: pods, ReadyDelay: ready, Poll: 50 * time.Millisecond, Timeout: 10 * time.Minute,
		PodAnnotations: map[string]string{
			readyDelayAnnotation:                   ready.String(),
			"pod-delete.stage.kwok.x-k8s.io/delay": "1s",
		},
	}
	var pairs []bench.Pair
	for i, s := range bench.Strategies {
		var p bench.Pair
		var err error
		if p.Deployment, err = r.Deployment(t.Context(), "deploy-"+strconv.Itoa(i), s); err != nil {
			t.Fatal(err)
		}
		if err := r.AwaitNoPods(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p.Lockstep, err = r.Lockstep(t.Context(), "lockstep-"+strconv.Itoa(i), s); err != nil {
			t.Fatal(err)
		}
		if err := r.AwaitNoPods(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, res := range []bench.Result{p.Deployment, p.Lockstep} {
			// every pod was created and deleted once at least: the scrape saw the rollout
			if res.Writes["pods"] < float64(pods) {
				t.Errorf("%s, %s: %v pod writes counted for %d pods replaced: %s", res.Controller, s.Name, res.Writes["pods"], pods, res.Writes)
			}
		}
		pairs = append(pairs, p)
	}
	var out bytes.Buffer
	bench.WriteTable(&out, pairs)
	t.Logf("rollouts of %d pods, ready %s after binding, gone 1 s after deletion:\n%s", pods, ready, out.String())
}
