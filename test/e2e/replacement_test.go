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
  template:
    cliques:
    - name: server
      replicas: 3
      minAvailable: 1
      template:
        metadata:
          annotations:
            pod-delete.stage.kwok.x-k8s.io/delay: 4s
        spec:
          containers:
          - name: server
            image: lockstep-examples/llm-frontend:v1
`

// The two pod replacement policies on a real cluster, under the invariant
// monitor (which holds TerminationComplete to one pod per index): under
// TerminationStarted an index has two pods for a while, the replacement
// running beside its terminating predecessor; under TerminationComplete never.
func TestPodReplacementPolicy_TwoPodsOfOneIndexOnlyUnderTerminationStarted(t *testing.T) {
	for _, tc := range []struct {
		policy  v1alpha1.PodReplacementPolicy
		overlap bool
	}{
		{v1alpha1.TerminationStarted, true},
		{v1alpha1.TerminationComplete, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			s := newScene(t, 1, parsePCS(t, fmt.Sprintf(replacementPCS, tc.policy)))
			s.awaitLayout("3 servers on v1", 2*time.Minute, layout{"0/server": "0=v1 1=v1 2=v1"})
			start := time.Now()
			s.update(setImageTag("v2"))
			s.awaitLayout("3 servers on v2, the old ones gone", 2*time.Minute, layout{"0/server": "0=v2 1=v2 2=v2"})
			took := time.Since(start)

			overlaps := map[int32]bool{}
			replay(s.m.Timeline(), func(e monitor.Event, pods map[string]*podRecord) {
				if e.Time.Before(start) {
					return
				}
				at := map[int32][]string{}
				for name, p := range pods {
					at[p.index] = append(at[p.index], name)
				}
				for index, names := range at {
					if len(names) > 1 {
						if !overlaps[index] {
							t.Logf("index %d has %d pods at %s: %s", index, len(names), sinceStart(e.Time, start), strings.Join(names, ", "))
						}
						overlaps[index] = true
					}
				}
			})
			t.Logf("%s: rolled 3 pods in %s; indices with two pods at once: %d", tc.policy, took.Round(100*time.Millisecond), len(overlaps))
			if tc.overlap && len(overlaps) == 0 {
				t.Errorf("under %s no replacement ran beside its terminating predecessor", tc.policy)
			}
			if !tc.overlap && len(overlaps) > 0 {
				t.Errorf("under %s %d indices had two pods at once", tc.policy, len(overlaps))
			}
		})
	}
}
