//go:build e2e

package fleetrollout

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// plugin runs `lockstep VERB ... -n ns` (the plugin verbs of the binary
// built from this checkout) against the hub, and returns its output and exit
// status.
func (s *story) plugin(args ...string) (string, int) {
	s.t.Helper()
	args = append(args, "--kubeconfig", testFleet.HubKubeconfig, "-n", s.ns)
	cmd := exec.CommandContext(s.ctx, filepath.Join(testFleet.Dir, "lockstep"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	case err != nil:
		s.t.Fatalf("lockstep %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0
}

func (s *story) expectPlugin(want int, args ...string) string {
	s.t.Helper()
	out, code := s.plugin(args...)
	if code != want {
		s.t.Fatalf("lockstep %s: exit status %d, want %d; output:\n%s", strings.Join(args, " "), code, want, out)
	}
	s.t.Logf("lockstep %s: exit %d", strings.Join(args, " "), code)
	return out
}

// `kubectl lockstep status fw/NAME` follows a real fleet rollout with the
// exit codes it gives a PodCliqueSet: 3 when --timeout passes mid-rollout, 4
// while the rollout is paused, 0 once every member runs the new template;
// `pause` and `resume` steer it, and `get fw/NAME` draws both members.
func TestPlugin_StatusExitCodesOnARealFleet(t *testing.T) {
	s := newStory(t, "plugin", "Deployment")
	s.create(story1Strategy())
	w := s.watch(story1Bounds)
	s.startRollout()
	s.waitPods(w, "the first pod on the new image", func(c fleetwatch.PodCounts) bool { return c.Updated > 0 })
	// Ten pods within maxUnavailable 2 take several rounds of the hub:
	// still rolling when the two seconds pass.
	s.expectPlugin(3, "status", "fw/web", "--timeout", "2s")

	s.expectPlugin(0, "pause", "fw/web")
	s.waitFor("the workload paused", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return fw.Status.ObservedGeneration == fw.Generation && progressing(fw).Reason == string(fleetv1alpha1.FederatedWorkloadReasonRolloutPaused)
	})
	s.expectPlugin(4, "status", "fw/web", "--timeout", "1m")
	s.expectPlugin(4, "status", "fw/web", "--watch=false")
	tree := s.expectPlugin(0, "get", "fw/web")
	for _, m := range memberNames {
		if !strings.Contains(tree, m) {
			t.Errorf("get fw/web draws no line for member %s:\n%s", m, tree)
		}
	}

	s.expectPlugin(0, "resume", "fw/web")
	s.expectPlugin(0, "status", "fw/web", "--timeout", "3m")
	s.finish(w, 10)
	s.checkWatcher(w)
}
