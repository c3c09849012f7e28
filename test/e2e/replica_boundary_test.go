//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// boundaryPCS is the shape of issue 28: two PodCliqueSet replicas, each a
// scaling group kv (a leader and two workers, 2 GPUs each; 2 group replicas,
// surge 1, none unavailable) beside a clique api of 5 pods surging 40%.
// Steady it holds 24 GPUs (12 GPU pods); a surge kv replica asks for 6 more.
const boundaryPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: boundary
spec:
  replicas: 2
  podReplacementPolicy: %s
  replicaReplacementPolicy: %s
  template:
    cliques:
    - name: api
      replicas: 5
      updateStrategy: {maxUnavailable: 0, maxSurge: 40%%}
      template:
        spec:
          containers:
          - name: api
            image: lockstep-examples/llm-frontend:v1
    - name: kv-leader
      replicas: 1
      template: &gpuPod
        spec:
          containers:
          - name: engine
            image: lockstep-examples/llm-engine:v1
            resources: {limits: {nvidia.com/gpu: 2}}
    - name: kv-worker
      replicas: 2
      template: *gpuPod
    podCliqueScalingGroups:
    - name: kv
      cliqueNames: [kv-leader, kv-worker]
      replicas: 2
      updateStrategy: {maxUnavailable: 0, maxSurge: 1}
`

var boundaryLayout = func(tag string) layout {
	return everyReplica(2, layout{"api": fmt.Sprintf("0=%[1]s 1=%[1]s 2=%[1]s 3=%[1]s 4=%[1]s", tag), "kv": fmt.Sprintf("0=%[1]s 1=%[1]s", tag)})
}

// rollBoundary creates the PodCliqueSet on nodes GPU nodes, waits for it, rolls
// it to v2 and returns the timeline from the change on.
func rollBoundary(t *testing.T, nodes int, pods v1alpha1.PodReplacementPolicy, replicas v1alpha1.ReplicaReplacementPolicy) ([]monitor.Event, time.Time) {
	s := newScene(t, nodes, parsePCS(t, fmt.Sprintf(boundaryPCS, pods, replicas)))
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, boundaryLayout("v1"))
	start := time.Now()
	s.update(setImageTag("v2"))
	s.awaitLayout("the rollout to finish", 5*time.Minute, boundaryLayout("v2"))
	t.Logf("rolled out in %s", time.Since(start).Round(100*time.Millisecond))
	return s.m.Timeline(), start
}

// replicaOneStart is when PCS replica 1 got its first pod on v2.
func replicaOneStart(events []monitor.Event, from time.Time) time.Time {
	for _, e := range events {
		if e.Kind == monitor.PodCreated && e.Replica == 1 && !e.Time.Before(from) {
			return e.Time
		}
	}
	return time.Time{}
}

// surgeLeftAt lists replica 0's surge pods (api at index 5 and up, kv group
// replica 2) that, at moment at, were still live, or existed at all when
// terminating pods count too.
func surgeLeftAt(events []monitor.Event, at time.Time, api, kv bool) []string {
	state := map[string]string{}
	for _, e := range events {
		if e.Time.After(at) || e.Replica != 0 {
			continue
		}
		surge := (e.Group == "" && e.Clique == "api" && e.Index >= 5) || (e.Group == "kv" && e.GroupReplica >= 2)
		if !surge {
			continue
		}
		switch e.Kind {
		case monitor.PodCreated:
			state[e.Name] = "live"
		case monitor.PodDeleting:
			state[e.Name] = "terminating"
		case monitor.PodDeleted:
			delete(state, e.Name)
		}
	}
	var out []string
	for name, st := range state {
		group := strings.Contains(name, "-kv-")
		if st == "live" || (st == "terminating" && ((group && kv) || (!group && api))) {
			out = append(out, name+" "+st)
		}
	}
	slices.Sort(out)
	return out
}

// Issue 28: PodCliqueSet replica 1 starts only when replica 0 has no surge
// unit left with a live pod (under TerminationComplete: no surge pod at all).
// The monitor checks the rule on every pod created; the test also reads it
// off the timeline.
func TestReplicaBoundary_NextReplicaWaitsForTheSurgePods(t *testing.T) {
	for _, pods := range []v1alpha1.PodReplacementPolicy{v1alpha1.TerminationStarted, v1alpha1.TerminationComplete} {
		t.Run(string(pods), func(t *testing.T) {
			began := time.Now()
			events, start := rollBoundary(t, 4, pods, v1alpha1.Immediate)
			one := replicaOneStart(events, start)
			if one.IsZero() {
				t.Fatal("replica 1 got no pod on v2")
			}
			if left := surgeLeftAt(events, one, pods == v1alpha1.TerminationComplete, false); len(left) > 0 {
				t.Errorf("replica 1 started at %s while replica 0 still had %v", one.Format("15:04:05.000"), left)
			}
			t.Logf("%s: test took %s", pods, time.Since(began).Round(100*time.Millisecond))
		})
	}
}

// replicaReplacementPolicy PostTermination on a cluster with room for the
// workload and one surge kv replica (4 nodes of 8 GPUs: 16 pods of 2 GPUs;
// the workload holds 12, a surge replica 3 more): replica 1's surge replica
// is created only once replica 0's is gone, so at no moment do more GPU pods
// exist (terminating ones included) than the cluster holds, and none is
// preempted or left unschedulable.
func TestReplicaBoundary_PostTerminationNeverOverasksAGPUTightCluster(t *testing.T) {
	began := time.Now()
	events, start := rollBoundary(t, 4, v1alpha1.TerminationStarted, v1alpha1.PostTermination)
	const capacity, workload, surge = 4 * e2eGPUsPerNode / 2, 12, 3
	exist, most, mostAt := 0, 0, time.Time{}
	for _, e := range events {
		if e.Group != "kv" {
			continue
		}
		switch e.Kind {
		case monitor.PodCreated:
			exist++
		case monitor.PodDeleted:
			exist--
		}
		if exist > most {
			most, mostAt = exist, e.Time
		}
	}
	if most > workload+surge || most > capacity {
		t.Errorf("%d GPU pods existed at %s, more than the workload's %d plus one surge replica's %d (the cluster holds %d)",
			most, mostAt.Format("15:04:05.000"), workload, surge, capacity)
	}
	one := replicaOneStart(events, start)
	if left := surgeLeftAt(events, one, false, true); len(left) > 0 {
		t.Errorf("replica 1 started at %s while replica 0 still had %v", one.Format("15:04:05.000"), left)
	}
	t.Logf("at most %d GPU pods (cluster %d); test took %s", most, capacity, time.Since(began).Round(100*time.Millisecond))
}
