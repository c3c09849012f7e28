//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// pluginPCS is two replicas of two small pods: quick to roll, no GPUs.
const pluginPCS = `
apiVersion: lockstep.dev/v1alpha1
kind: PodCliqueSet
metadata:
  name: plug
spec:
  replicas: 2
  template:
    cliques:
    - name: server
      replicas: 2
      template:
        spec:
          containers:
          - name: server
            image: lockstep-examples/server:v1
`

// plugin runs `lockstep VERB ...` (the binary the operator runs, built from
// this checkout) against the e2e cluster in namespace ns.
func plugin(ctx context.Context, ns string, args ...string) (string, int, error) {
	args = append(args, "--kubeconfig", testCluster.Kubeconfig, "-n", ns)
	cmd := exec.CommandContext(ctx, testOperator.bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode(), nil
	}
	return out.String(), 0, err
}

// expectPlugin runs a verb and fails the test unless it exits with want.
func expectPlugin(t *testing.T, ns string, want int, args ...string) string {
	t.Helper()
	start := time.Now()
	out, code, err := plugin(t.Context(), ns, args...)
	if err != nil {
		t.Fatalf("lockstep %s: %v", strings.Join(args, " "), err)
	}
	if code != want {
		t.Fatalf("lockstep %s: exit status %d, want %d; output:\n%s", strings.Join(args, " "), code, want, out)
	}
	t.Logf("lockstep %s: exit %d after %s", strings.Join(args, " "), code, time.Since(start).Round(100*time.Millisecond))
	return out
}

// The plugin's verbs steer a real rollout, and `status` exits 0 when it
// completes, 4 while paused and while the partition holds replicas back, 1
// when the progress deadline passes and when the PodCliqueSet is deleted.
func TestPlugin_StatusExitCodesThroughPauseResumePromoteUndoAndDeadline(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, pluginPCS))
	ns, name := s.ns, s.name
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")

	expectPlugin(t, ns, 0, "pause", name)
	s.update(setImageTag("v2"))
	if out := expectPlugin(t, ns, 4, "status", name, "--timeout", "1m"); !strings.Contains(out, "Paused") {
		t.Errorf("status of a paused rollout said %q", out)
	}
	expectPlugin(t, ns, 0, "resume", name)
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")

	expectPlugin(t, ns, 0, "promote", name, "--partition", "1")
	s.update(setImageTag("v3"))
	if out := expectPlugin(t, ns, 4, "status", name, "--timeout", "2m"); !strings.Contains(out, "PartitionReached") {
		t.Errorf("status of a partition-held rollout said %q", out)
	}
	expectPlugin(t, ns, 0, "promote", name, "--full")
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")

	expectPlugin(t, ns, 0, "restart", name)
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")
	if out := expectPlugin(t, ns, 0, "undo", name); !strings.Contains(out, "RollbackStarted") {
		t.Errorf("undo reported %q, want the RollbackStarted event", out)
	}
	expectPlugin(t, ns, 0, "status", name, "--timeout", "2m")
	if out := expectPlugin(t, ns, 0, "get", "pcs", name, "--pods"); !strings.Contains(out, "Complete (RolloutComplete)") {
		t.Errorf("get after the undo:\n%s", out)
	}

	// A version whose pods never turn ready, with a deadline of 10s.
	s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
		setImageTag("v4-broken")(spec)
		spec.ProgressDeadlineSeconds = new(int32(10))
		spec.Template.Clique("server").Template.Annotations = map[string]string{readyDelayAnnotation: "1h"}
	})
	if out := expectPlugin(t, ns, 1, "status", name, "--timeout", "2m"); !strings.Contains(out, "ProgressDeadlineExceeded") {
		t.Errorf("status of a stalled rollout said %q", out)
	}
	if out := expectPlugin(t, ns, 0, "get", "pcs", name); !strings.Contains(out, "Waiting on") || !strings.Contains(out, "Stalled") {
		t.Errorf("get of a stalled rollout does not say what it waits on:\n%s", out)
	}
}

// `status` watching a rollout exits 1 when the PodCliqueSet is deleted under it.
func TestPlugin_StatusOfADeletedPodCliqueSetIsFailed(t *testing.T) {
	s := newScene(t, 1, parsePCS(t, strings.Replace(pluginPCS, "name: plug", "name: doomed", 1)))
	expectPlugin(t, s.ns, 0, "status", s.name, "--timeout", "2m")
	s.update(func(spec *v1alpha1.PodCliqueSetSpec) {
		setImageTag("v2")(spec)
		spec.Template.Clique("server").Template.Annotations = map[string]string{readyDelayAnnotation: "1h"}
	})
	type result struct {
		out  string
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, code, err := plugin(t.Context(), s.ns, "status", s.name, "--timeout", "2m")
		done <- result{out, code, err}
	}()
	s.mustAwait("the rollout to be under way", time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		return progressingIs(o.pcs, v1alpha1.ReasonRollingUpdateInProgress), statusLine(o.pcs), nil
	})
	pcs, err := s.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := testCluster.Client.Delete(t.Context(), pcs); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.code != 1 || !strings.Contains(r.out, "deleted") {
			t.Errorf("status of a deleted PodCliqueSet: exit %d (%v), output %q; want 1 and 'deleted'", r.code, r.err, r.out)
		}
	case <-time.After(time.Minute):
		t.Fatal("status did not end within a minute of the deletion")
	}
}
