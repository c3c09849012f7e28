//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/simulate"
	"github.com/lockstep-dev/lockstep/test/bench"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
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
	deployed := map[string]bench.Result{} // one Deployment rollout per budget
	for i, s := range bench.Strategies {
		var p bench.Pair
		var err error
		var ok bool
		if p.Deployment, ok = deployed[s.Budget()]; !ok {
			if p.Deployment, err = r.Deployment(t.Context(), "deploy-"+strconv.Itoa(i), s); err != nil {
				t.Fatal(err)
			}
			if err := r.AwaitNoPods(t.Context()); err != nil {
				t.Fatal(err)
			}
			deployed[s.Budget()] = p.Deployment
		}
		// Lockstep runs under the invariant monitor: no figure may come from
		// breaking the budget.
		name := "lockstep-" + strconv.Itoa(i)
		m := monitor.Options{PollInterval: 200 * time.Millisecond}.Start(t.Context(), t, testCluster.RESTConfig, r.Namespace, name)
		if p.Lockstep, err = r.Lockstep(t.Context(), name, s); err != nil {
			t.Fatal(err)
		}
		m.Stop()
		if vs := m.Violations(); len(vs) > 0 {
			t.Fatalf("Lockstep broke an invariant under %s:\n%s", s.Name, vs[0].Report())
		}
		t.Logf("Lockstep, %s: most pods live at once %d, fewest available %d; %s; %s", s.Name, mostLive(m.Timeline()), fewestAvailable(m.Timeline(), pods),
			waveLatency(m.Timeline()), endsLatency(m.Timeline(), p.Lockstep))
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

	// The disaggregated example (a frontend, prefill and decode leader/worker
	// groups, two replicas), rolled whole, against Lockstep's own planner with
	// no control plane in the way.
	ex := withoutGPUs(loadExampleAsApplied(t, "disaggregated.yaml"))
	m := monitor.Options{PollInterval: 200 * time.Millisecond}.Start(t.Context(), t, testCluster.RESTConfig, r.Namespace, ex.Name)
	set, err := r.Set(t.Context(), ex, plannerTime(t, ex, ready, time.Second))
	m.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if vs := m.Violations(); len(vs) > 0 {
		t.Fatalf("Lockstep broke an invariant rolling %s:\n%s", ex.Name, vs[0].Report())
	}
	out.Reset()
	bench.WriteSets(&out, []bench.SetResult{set})
	t.Logf("the disaggregated example, ready %s after binding, gone 1 s after deletion; %s:\n%s", ready, waveLatency(m.Timeline()), out.String())
}

// plannerTime is how long the offline simulator (Lockstep's planner, every
// pod ready startup after it is created, gone grace after it is deleted)
// takes to roll pcs to every image tagged v2.
func plannerTime(t *testing.T, pcs *v1alpha1.PodCliqueSet, startup, grace time.Duration) time.Duration {
	t.Helper()
	from := pcs.DeepCopy()
	from.Default()
	to := from.DeepCopy()
	bench.RetagImages(&to.Spec, "v2")
	fromRev, err := revision.ForSpec(pcs.Name, &from.Spec)
	if err != nil {
		t.Fatal(err)
	}
	toRev, err := revision.ForSpec(pcs.Name, &to.Spec)
	if err != nil {
		t.Fatal(err)
	}
	res := simulate.Run(simulate.Scenario{From: &from.Spec, FromRevision: fromRev, To: &to.Spec, ToRevision: toRev, Startup: startup, Grace: grace})
	if res.Outcome.Kind != simulate.Complete {
		t.Fatalf("simulating %s: %s (%s)", pcs.Name, res.Outcome.Kind, res.Outcome.Reason)
	}
	return res.Summary.Duration
}

// waveLatency says where a wave's time goes, as the monitor saw it: from a
// pod turning ready to the next pod created (the operator's reaction), from a
// pod created to bound (scheduling) and from bound to ready (the ready delay).
func waveLatency(events []monitor.Event) string {
	var react, schedule, start []time.Duration
	var lastReady time.Time
	created, bound := map[string]time.Time{}, map[string]time.Time{}
	for _, e := range events {
		switch e.Kind {
		case monitor.PodReady:
			lastReady = e.Time
			if b, ok := bound[e.Name]; ok {
				start = append(start, e.Time.Sub(b))
			}
		case monitor.PodBound:
			bound[e.Name] = e.Time
			if c, ok := created[e.Name]; ok {
				schedule = append(schedule, e.Time.Sub(c))
			}
		case monitor.PodCreated:
			created[e.Name] = e.Time
			if !lastReady.IsZero() {
				react = append(react, e.Time.Sub(lastReady))
				lastReady = time.Time{}
			}
		}
	}
	return fmt.Sprintf("pod ready → next pod created: median %s over %d; created → bound: median %s over %d; bound → ready: median %s over %d",
		median(react), len(react), median(schedule), len(schedule), median(start), len(start))
}

// endsLatency is the time a rollout spends outside its waves: from the
// template change to the first pod created, and from the last pod ready to the
// rollout reported done.
func endsLatency(events []monitor.Event, res bench.Result) string {
	var first, last time.Time
	for _, e := range events {
		if e.Time.Before(res.Started) {
			continue
		}
		if e.Kind == monitor.PodCreated && first.IsZero() {
			first = e.Time
		}
		if e.Kind == monitor.PodReady {
			last = e.Time
		}
	}
	if first.IsZero() || last.IsZero() {
		return "no pod created or ready after the template changed"
	}
	return fmt.Sprintf("template changed → first pod created %s; last pod ready → done %s",
		first.Sub(res.Started).Round(time.Millisecond), res.Started.Add(res.Took).Sub(last).Round(time.Millisecond))
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2].Round(time.Millisecond)
}

// mostLive is the most pods live (not terminating) at once over a timeline.
func mostLive(events []monitor.Event) int {
	most := 0
	replay(events, func(_ monitor.Event, pods map[string]*podRecord) {
		n := 0
		for _, p := range pods {
			if !p.terminating {
				n++
			}
		}
		most = max(most, n)
	})
	return most
}

// fewestAvailable is the fewest ready, live pods at once once all pods first
// were (the rollout's dip).
func fewestAvailable(events []monitor.Event, pods int) int {
	fewest, full := pods, false
	replay(events, func(_ monitor.Event, ps map[string]*podRecord) {
		n := 0
		for _, p := range ps {
			if p.ready && !p.terminating {
				n++
			}
		}
		full = full || n >= pods
		if full {
			fewest = min(fewest, n)
		}
	})
	return fewest
}
