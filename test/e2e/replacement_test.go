//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/monitor"
)

// replacementPCS is one standalone clique of 3 pods rolled one at a time, whose
// pods take 4 s to go away once deleted (kwok's delete stage), so that a
// replacement started while its predecessor terminates is plain to see.
const replacementPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: replace
spec:
  replicas: 1
  podReplacementPolicy: %s
  surgePlacement: %s
  template:
    cliques:
    - name: server
      replicas: 3
      minAvailable: 1
      updateStrategy: {maxUnavailable: %d, maxSurge: %d}
      template:
        metadata:
          annotations:
            pod-delete.stage.kwok.x-k8s.io/delay: 4s
        spec:
          containers:
          - name: server
            image: lockstep-examples/llm-frontend:v1
`

// The pod replacement policies and surge placements on a real cluster, under
// the invariant monitor (which holds TerminationComplete to one pod per index,
// and TerminationStarted to one live pod per index unless the surge goes to the
// replaced index). Under TerminationStarted an index has two pods for a while,
// the replacement running beside its terminating predecessor; under
// TerminationComplete never. With surgePlacement ReplacedIndex the surge pod
// runs live beside the outdated pod it replaces, and no pod ever takes an index
// at or above replicas.
func TestPodReplacementPolicy_TwoPodsOfOneIndexOnlyUnderTerminationStarted(t *testing.T) {
	for _, tc := range []struct {
		policy                   v1alpha1.PodReplacementPolicy
		surge                    v1alpha1.SurgePlacement
		maxUnavailable, maxSurge int
		overlap, liveOverlap     bool
	}{
		{v1alpha1.TerminationStarted, v1alpha1.AboveReplicas, 1, 0, true, false},
		{v1alpha1.TerminationComplete, v1alpha1.AboveReplicas, 1, 0, false, false},
		{v1alpha1.TerminationStarted, v1alpha1.ReplacedIndex, 0, 1, true, true},
	} {
		t.Run(string(tc.policy)+"/"+string(tc.surge), func(t *testing.T) {
			s := newScene(t, 1, parsePCS(t, fmt.Sprintf(replacementPCS, tc.policy, tc.surge, tc.maxUnavailable, tc.maxSurge)))
			s.awaitLayout("3 servers on v1", 2*time.Minute, layout{"0/server": "0=v1 1=v1 2=v1"})
			start := time.Now()
			s.update(setImageTag("v2"))
			s.awaitLayout("3 servers on v2, the old ones gone", 2*time.Minute, layout{"0/server": "0=v2 1=v2 2=v2"})
			took := time.Since(start)

			overlaps, liveOverlaps, highest := map[int32]bool{}, map[int32]bool{}, int32(0)
			replay(s.m.Timeline(), func(e monitor.Event, pods map[string]*podRecord) {
				if e.Time.Before(start) {
					return
				}
				at, live := map[int32][]string{}, map[int32]int{}
				for name, p := range pods {
					at[p.index] = append(at[p.index], name)
					if !p.terminating && p.ready {
						live[p.index]++
					}
					highest = max(highest, p.index)
				}
				for index, names := range at {
					if len(names) > 1 {
						if !overlaps[index] {
							t.Logf("index %d has %d pods at %s: %s", index, len(names), sinceStart(e.Time, start), strings.Join(names, ", "))
						}
						overlaps[index] = true
					}
					if live[index] > 1 {
						liveOverlaps[index] = true
					}
				}
			})
			t.Logf("%s, %s: rolled 3 pods in %s; indices with two pods at once: %d, two ready pods: %d; highest index %d",
				tc.policy, tc.surge, took.Round(100*time.Millisecond), len(overlaps), len(liveOverlaps), highest)
			if tc.overlap != (len(overlaps) > 0) {
				t.Errorf("indices with two pods at once: %d, want some: %t", len(overlaps), tc.overlap)
			}
			if tc.liveOverlap != (len(liveOverlaps) > 0) {
				t.Errorf("indices with two ready pods at once: %d, want some: %t", len(liveOverlaps), tc.liveOverlap)
			}
			if tc.surge == v1alpha1.ReplacedIndex && highest >= 3 {
				t.Errorf("a pod took index %d, at or above replicas, with the surge at the replaced index", highest)
			}
		})
	}
}
