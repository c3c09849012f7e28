//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// scaleRollingPCS is rolled while an autoscaler changes replicas at one level:
// a standalone clique that surges and a scaling group that surges, so scale-in
// meets surge units and outdated units at once.
const scaleRollingPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: scaleroll
spec:
  replicas: %d
  template:
    cliques:
    - name: frontend
      replicas: %d
      minAvailable: 1
      updateStrategy: {maxUnavailable: 1, maxSurge: 1}
      template: &pod
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
    - name: shard-leader
      replicas: 1
      template: *pod
    - name: shard-worker
      replicas: 1
      template: *pod
    podCliqueScalingGroups:
    - name: shard
      cliqueNames: [shard-leader, shard-worker]
      replicas: %d
      minAvailable: 1
      updateStrategy: {maxUnavailable: 1, maxSurge: 1}
`

// scaleRollingCase is one level an autoscaler scales mid-rollout: the shape
// the PodCliqueSet starts with, the replicas it patches through that level's
// /scale one after the other, and the layout the rollout must end with.
type scaleRollingCase struct {
	name                         string
	pcsReplicas, frontend, shard int32
	// patch sets the level's replicas to n through its /scale subresource.
	patch   func(s *scene, n int32)
	patches []int32
	want    layout
}

// Replicas changed again and again mid-rollout, at each level, as an
// autoscaler changes them: the rollout goes on (it never restarts and never
// makes a pod on the old revision), the invariant monitor sees no limit
// broken, and it ends complete with the replicas of the last patch, every
// unit on the new revision.
func TestScaleRolling_ReplicaPatchesMidRolloutAtEveryLevel(t *testing.T) {
	for _, tc := range []scaleRollingCase{{
		name: "PodCliqueSet replicas", pcsReplicas: 2, frontend: 3, shard: 1,
		patch:   func(s *scene, n int32) { s.scale(&v1alpha1.PodCliqueSet{}, s.name, n) },
		patches: []int32{3, 1, 4, 2},
		want:    everyReplica(2, layout{"frontend": "0=v2 1=v2 2=v2", "shard": "0=v2"}),
	}, {
		name: "scaling group replicas", pcsReplicas: 1, frontend: 2, shard: 3,
		patch:   func(s *scene, n int32) { s.scale(&v1alpha1.PodCliqueScalingGroup{}, s.scalingGroupName(0, "shard"), n) },
		patches: []int32{5, 2, 4, 1, 3},
		want:    layout{"0/frontend": "0=v2 1=v2", "0/shard": "0=v2 1=v2 2=v2"},
	}, {
		name: "clique replicas", pcsReplicas: 1, frontend: 4, shard: 1,
		patch:   func(s *scene, n int32) { s.scale(&v1alpha1.PodClique{}, s.podCliqueName(0, "frontend"), n) },
		patches: []int32{6, 2, 5, 3, 7, 4},
		want:    layout{"0/frontend": "0=v2 1=v2 2=v2 3=v2", "0/shard": "0=v2"},
	}} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			began := time.Now()
			tc.run(t)
			t.Logf("%s: %s", tc.name, time.Since(began).Round(100*time.Millisecond))
		})
	}
}

func (tc scaleRollingCase) run(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, fmt.Sprintf(scaleRollingPCS, tc.pcsReplicas, tc.frontend, tc.shard)))
	start := layout{}
	for r := range tc.pcsReplicas {
		start[fmt.Sprintf("%d/frontend", r)] = unitsAt(tc.frontend, "v1")
		start[fmt.Sprintf("%d/shard", r)] = unitsAt(tc.shard, "v1")
	}
	s.awaitLayout("the PodCliqueSet to become Available", 2*time.Minute, start)

	updated := time.Now()
	pcs := s.update(setImageTag("v2"))
	hashes := templateHashes(t, pcs)
	// An autoscaler's patches come on its own clock, not on the rollout's:
	// one every 1.5 s, all within 30 s of the update (a rollout here takes
	// about 10 s, and at least 3 patches must come while it runs).
	tick := time.NewTicker(1500 * time.Millisecond)
	defer tick.Stop()
	midRollout := 0
	for _, n := range tc.patches {
		<-tick.C
		o, err := s.observe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !o.settled() {
			midRollout++
		}
		tc.patch(s, n)
		t.Logf("%s: patched to %d at %s (rollout complete before it: %t)", tc.name, n, time.Since(updated).Round(100*time.Millisecond), o.settled())
	}
	if d := time.Since(updated); d > 30*time.Second {
		t.Errorf("the patches took %s, more than 30 s", d.Round(time.Second))
	}
	if midRollout < 3 {
		t.Errorf("only %d of %d patches came while the rollout ran, want at least 3", midRollout, len(tc.patches))
	}
	o := s.awaitLayout("the rollout to end at the last patch's replicas", 3*time.Minute, tc.want)
	s.assertRolledOut(o, pcs)
	// The children's statuses follow their pods: a count that only drops
	// (a scaled-in pod gone) may be written up to a second later.
	eventuallyState(t, 30*time.Second, "every PodClique's status at its replicas", func(ctx context.Context) (bool, string, error) {
		if err := s.childrenAtTheirReplicas(ctx); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	// Every pod made after the update runs the new template: scale-out never
	// makes an old pod, and the rollout never goes back to replace one.
	for _, e := range s.m.Timeline() {
		if e.Kind == monitor.PodCreated && e.Time.After(updated) && e.TemplateHash != hashes[e.Clique] {
			t.Errorf("pod %s was created at %s on template %s, not the new %s", e.Name, e.Time.Sub(updated).Round(time.Millisecond), e.TemplateHash, hashes[e.Clique])
		}
	}
	t.Logf("%s: rolled out in %s (%d patches)", tc.name, time.Since(updated).Round(100*time.Millisecond), len(tc.patches))
}

// unitsAt is a role's layout of n units at version v: "0=v 1=v ...".
func unitsAt(n int32, v string) string {
	parts := make([]string, 0, n)
	for i := range n {
		parts = append(parts, fmt.Sprintf("%d=%s", i, v))
	}
	return strings.Join(parts, " ")
}

// childrenAtTheirReplicas checks that every PodClique and scaling group reports
// as many replicas, updated and available units as its spec asks for.
func (s *scene) childrenAtTheirReplicas(ctx context.Context) error {
	cliques, err := s.children(ctx)
	if err != nil {
		return err
	}
	var errs []string
	for _, c := range cliques {
		st := &c.Status
		if st.Replicas != c.Spec.Replicas || st.UpdatedReplicas != c.Spec.Replicas || st.AvailableReplicas != c.Spec.Replicas {
			errs = append(errs, fmt.Sprintf("PodClique %s: spec %d, status replicas %d updated %d available %d", c.Name, c.Spec.Replicas, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}
