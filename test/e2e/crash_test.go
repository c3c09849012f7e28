//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/naming"
)

// Crash tests: the operator is SIGKILLed and started again at random moments
// of a rollout, as many times as the rollout lasts for, and the rollout still
// ends whole under the invariant monitor. The moments come from a seeded
// generator so that a failing run can be repeated.

// envSeed names the variable that sets the seed of the kill moments.
const envSeed = "LOCKSTEP_E2E_SEED"

// Crash tests kill at least minKills times per strategy, and stop killing
// after maxKills in one rollout so that it can finish.
const (
	minKills = 5
	maxKills = 8
	// kills fall between these delays after the previous restart (or the
	// spec change)
	minKillDelay = 500 * time.Millisecond
	maxKillDelay = 6 * time.Second
)

// crashRand returns the generator of one crash test, seeded from envSeed (or a
// fixed default) and the test's own stream number; the seed is logged.
func crashRand(t *testing.T, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(20251122)
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envSeed, v, err)
		}
		seed = n
	}
	t.Logf("kill moments from seed %d, stream %d (set %s to repeat)", seed, stream, envSeed)
	return rand.New(rand.NewPCG(seed, stream))
}

// killedRollout is one rollout under kills.
type killedRollout struct {
	pcs   *v1alpha1.PodCliqueSet // the spec rolled to
	start time.Time
	end   *observed
	kills []time.Duration // when, into the rollout
}

// rolloutUnderKills changes the image to version and kills and restarts the
// operator at random delays until the pods look like want and the rollout is
// reported complete; at most budget kills, then it waits for the end.
func (s *scene) rolloutUnderKills(rng *rand.Rand, version string, want layout, budget int) killedRollout {
	s.t.Helper()
	ctx := s.t.Context()
	k := killedRollout{start: time.Now()}
	k.pcs = s.update(setImageTag(version))
	for len(k.kills) < budget {
		delay := minKillDelay + time.Duration(rng.Int64N(int64(maxKillDelay-minKillDelay)))
		// Waiting for the end with the delay as the timeout: the rollout
		// either finishes before the kill or is still under way at it.
		if err := s.await("the rollout to "+version, delay, s.settledAt(want, &k.end)); err == nil {
			return k
		}
		if err := testOperator.restart(ctx); err != nil {
			s.t.Fatal(err)
		}
		k.kills = append(k.kills, time.Since(k.start))
		if time.Since(k.start) > 6*time.Minute {
			s.t.Fatalf("the rollout to %s is not done %s after it began, %d kills in", version, time.Since(k.start), len(k.kills))
		}
	}
	k.end = s.awaitLayout("the rollout to "+version+" after the last kill", 4*time.Minute, want)
	return k
}

// logKills reports the kills of one rollout.
func logKills(t *testing.T, version string, k killedRollout) {
	t.Helper()
	at := make([]string, len(k.kills))
	for i, d := range k.kills {
		at[i] = d.Round(10 * time.Millisecond).String()
	}
	t.Logf("rollout to %s: %d kills at %v; complete after %s", version, len(k.kills), at, time.Since(k.start).Round(100*time.Millisecond))
}

// ReplicaRecreate (disaggregated-recreate at 3 replicas, maxUnavailable 1)
// rolled while the operator is killed again and again: every rollout ends
// with every pod on its template at indices without holes, no replica ever
// ran two revisions, and each went down whole before it came back.
func TestCrash_ReplicaRecreateRolloutSurvivesKills(t *testing.T) {
	rng := crashRand(t, 1)
	// 3 replicas of 6 GPUs: 18 of 24.
	s := newScene(t, 3, withReplicas(loadExampleAsApplied(t, "disaggregated-recreate.yaml"), 3))
	want := func(v string) layout { return everyReplica(3, recreateRoles(v)) }
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, want("v1"))

	kills := 0
	for i := 2; kills < minKills; i++ {
		if i > 5 {
			t.Fatalf("only %d kills in %d rollouts", kills, i-2)
		}
		version := fmt.Sprintf("v%d", i)
		k := s.rolloutUnderKills(rng, version, want(version), maxKills-kills)
		kills += len(k.kills)
		logKills(t, version, k)
		s.assertRolledOut(k.end, k.pcs)
		checkReplicaRecreate(t, s, k.pcs, s.m.Timeline(), k.start)
	}
	if err := s.m.Err(); err != nil {
		t.Error(err)
	}
}

// Role steps (role-ordered-pd) rolled while the operator is killed again and
// again: every rollout ends with every pod on its template at indices without
// holes, and the timeline still shows the steps in order, each beginning only
// once the one before was satisfied.
func TestCrash_RoleStepRolloutSurvivesKills(t *testing.T) {
	rng := crashRand(t, 2)
	s := newScene(t, pdNodes, loadExampleAsApplied(t, "role-ordered-pd.yaml"))
	s.awaitLayout("the example to become Available", 2*time.Minute, pdLayout("v1"))

	kills := 0
	for i := 2; kills < minKills; i++ {
		if i > 5 {
			t.Fatalf("only %d kills in %d rollouts", kills, i-2)
		}
		version := fmt.Sprintf("v%d", i)
		k := s.rolloutUnderKills(rng, version, pdLayout(version), maxKills-kills)
		kills += len(k.kills)
		logKills(t, version, k)
		s.assertRolledOut(k.end, k.pcs)
		for r, units := range checkRoleStepOrder(t, s.m.Timeline(), k.start, k.pcs) {
			t.Logf("rollout to %s: PCS replica %d replaced %v", version, r, units)
		}
	}
	if err := s.m.Err(); err != nil {
		t.Error(err)
	}
}

// shardPCS is one scaling group of a leader and two workers.
const shardPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: shard
spec:
  replicas: 1
  template:
    cliques:
    - name: leader
      replicas: 1
      template: &pod
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
    - name: worker
      replicas: 2
      template: *pod
    podCliqueScalingGroups:
    - name: shard
      cliqueNames: [leader, worker]
      replicas: 1
`

// What a kill between the creation of two member PodCliques of a group
// replica leaves behind (seen in TestCrash_ReplicaRecreateRolloutSurvivesKills),
// made on purpose: one member PodClique of a group replica is deleted by hand.
// The operator must make the group replica whole again.
func TestCrash_PartialGroupReplicaIsRepaired(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, shardPCS))
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, layout{"0/shard": "0=v1"})

	workers := naming.GroupPodClique(s.scalingGroupName(0, "shard"), 0, "worker")
	s.m.ExpectDeletionOf(labels.Set{v1alpha1.LabelPodClique: workers})
	pc := &v1alpha1.PodClique{}
	pc.Namespace, pc.Name = s.ns, workers
	if err := testCluster.Client.Delete(t.Context(), pc); err != nil {
		t.Fatal(err)
	}
	// First its worker pods go (the garbage collector takes them), then the
	// group replica must come back whole.
	s.mustAwait("the worker pods to go", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		return o.layout["0/shard"] != "0=v1", o.describe(), nil
	})
	s.awaitLayout("the group replica to be whole again", 90*time.Second, layout{"0/shard": "0=v1"})
}
