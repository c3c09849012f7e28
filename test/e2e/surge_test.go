//go:build e2e

package e2e

import (
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// surgePCS puts single-node-aggregated's surging workers next to
// multinode-aggregated's surging decode group, in one PodCliqueSet replica:
// both roles add a new unit before an old one goes. At the peak 4 workers and
// 3 decode replicas of 3 pods hold 13 GPUs.
const surgePCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: surge
spec:
  replicas: 1
  template:
    cliques:
    - name: frontend
      replicas: 2
      minAvailable: 1
      template:
        spec:
          containers:
          - name: frontend
            image: lockstep-examples/llm-frontend:v1
    - name: agg-worker
      replicas: 3
      updateStrategy: {maxUnavailable: 0, maxSurge: 1}
      template: &gpuPod
        spec:
          containers:
          - name: engine
            image: lockstep-examples/llm-engine:v1
            resources: {limits: {nvidia.com/gpu: 1}}
    - name: decode-leader
      replicas: 1
      template: *gpuPod
    - name: decode-worker
      replicas: 2
      template: *gpuPod
    podCliqueScalingGroups:
    - name: decode
      cliqueNames: [decode-leader, decode-worker]
      replicas: 2
      updateStrategy: {maxUnavailable: 0, maxSurge: 1}
`

// maxSurge 1, maxUnavailable 0 on a standalone clique and on a scaling group:
// the rollout completes, each role keeps all its units available at every
// moment, and it does so by surging: a unit at index replicas appears during
// the rollout and is gone at its end (the monitor checks that no role ever
// has more than replicas + 1 units).
func TestSurge_KeepsFullCapacity(t *testing.T) {
	s := newScene(t, 2, parsePCS(t, surgePCS))
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, layout{
		"0/frontend":   "0=v1 1=v1",
		"0/agg-worker": "0=v1 1=v1 2=v1",
		"0/decode":     "0=v1 1=v1",
	})

	start := time.Now()
	pcs := s.update(setImageTag("v2"))
	s.awaitLayout("the rollout to finish", 3*time.Minute, layout{
		"0/frontend":   "0=v2 1=v2",
		"0/agg-worker": "0=v2 1=v2 2=v2",
		"0/decode":     "0=v2 1=v2",
	})
	if err := s.indicesWithoutHoles(t.Context()); err != nil {
		t.Error(err)
	}
	events := s.m.Timeline()
	spec := &pcs.Spec

	least := leastAvailable(events, spec, start)
	for _, role := range []string{"agg-worker", "decode"} {
		if n, want := least["0/"+role], roleUnits(spec, role); n < want {
			t.Errorf("%s: only %d of %d units were available at one moment; maxUnavailable 0 keeps all", role, n, want)
		}
	}
	if n := least["0/frontend"]; n < 1 {
		t.Errorf("frontend: %d pods available at one moment, want at least 1", n)
	}

	created := filterEvents(events, func(e monitor.Event) bool { return e.Kind == monitor.PodCreated && !e.Time.Before(start) })
	surged := map[string]bool{}
	for _, e := range created {
		switch {
		case e.Group == "" && e.Clique == "agg-worker" && e.Index == 3:
			surged["agg-worker"] = true
		case e.Group == "decode" && e.GroupReplica == 2:
			surged["decode"] = true
		}
	}
	for _, role := range []string{"agg-worker", "decode"} {
		if !surged[role] {
			t.Errorf("%s: no surge unit (index %d) was created during the rollout", role, roleUnits(spec, role))
		}
	}
	o, err := s.observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range o.pods {
		if o.pods[i].DeletionTimestamp == nil && o.pods[i].Labels[v1alpha1.LabelSurge] == "true" { // a surge pod may still be terminating
			t.Errorf("pod %s is still labelled a surge pod after the rollout", o.pods[i].Name)
		}
	}
	up := startupOf(events, start)
	t.Logf("rollout with surge: %s to the last replacement Ready; %d pods started, mean bound-to-Ready %s",
		up.lastReady.Sub(start).Round(10*time.Millisecond), up.pods, up.mean.Round(10*time.Millisecond))
}
