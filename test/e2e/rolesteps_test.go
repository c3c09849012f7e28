//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// examples/role-ordered-pd.yaml: per PCS replica 2 prefill and 3 decode group
// replicas, each a leader and a worker with a GPU apiece: 10 GPUs, 2 replicas.
const pdNodes = 3

func pdLayout(version string) layout {
	return everyReplica(2, layout{
		"prefill": fmt.Sprintf("0=%[1]s 1=%[1]s", version),
		"decode":  fmt.Sprintf("0=%[1]s 1=%[1]s 2=%[1]s", version),
	})
}

// stepSeen is one (PCS replica, step index, role) status reported current.
type stepSeen struct {
	replica, index int32
	role           string
}

// recordRoleSteps adds every role step status.updateProgress reports current.
func recordRoleSteps(pcs *v1alpha1.PodCliqueSet, seen map[stepSeen]bool) {
	if up := pcs.Status.UpdateProgress; up != nil {
		for _, u := range up.UpdatingReplicas {
			if st := u.RoleStep; st != nil {
				seen[stepSeen{u.ReplicaIndex, st.Index, st.Role}] = true
			}
		}
	}
}

// The prefill/decode upgrade on examples/role-ordered-pd.yaml (steps
// decode 1, prefill 1, prefill 100%, decode 100%). Inside every PCS replica
// the timeline shows the group replicas replaced in the order decode, prefill,
// prefill, decode, decode, each step beginning only once the step before has
// its units updated and Ready; status.updateProgress reports every step of
// every replica as current at some point, and each step start has its
// RoleStepStarted Event.
func TestRoleSteps_PrefillDecodeInOrder(t *testing.T) {
	s := newScene(t, pdNodes, loadExampleAsApplied(t, "role-ordered-pd.yaml"))
	s.awaitLayout("the example to become Available", 2*time.Minute, pdLayout("v1"))

	start := time.Now()
	pcs := s.update(setImageTag("v2"))
	seen := map[stepSeen]bool{}
	var end *observed
	s.mustAwait("the role-ordered rollout to finish", 4*time.Minute, func(ctx context.Context) (bool, string, error) {
		o, err := s.observe(ctx)
		if err != nil {
			return false, "", err
		}
		end = o
		recordRoleSteps(o.pcs, seen)
		d := o.layout.diff(pdLayout("v2"))
		return d == "" && o.settled(), o.describe() + "differences: " + d, nil
	})
	s.assertRolledOut(end, pcs)
	events := s.m.Timeline()

	order := checkRoleStepOrder(t, events, start, pcs)
	for r, units := range order {
		t.Logf("PCS replica %d replaced %v", r, units)
	}

	steps := pcs.Spec.UpdateStrategy.RoleUpgrade.Steps
	fromEvents := roleStepEvents(t, s.ns)
	for r := range *pcs.Spec.Replicas {
		for i, st := range steps {
			k := stepSeen{r, int32(i), st.Role}
			if !seen[k] {
				t.Errorf("status never reported replica %d at step %d (%s to %s) as current", r, i, st.Role, st.UpdateTo.String())
			}
			if !fromEvents[fmt.Sprintf("%d/%d/%s", r, i, st.Role)] {
				t.Errorf("no RoleStepStarted Event for replica %d step %d (%s)", r, i, st.Role)
			}
		}
	}
	var got []string
	for k := range seen {
		got = append(got, fmt.Sprintf("%d/%d/%s", k.replica, k.index, k.role))
	}
	slices.Sort(got)
	t.Logf("role steps seen current in status: %v", got)
	up := startupOf(events, start)
	t.Logf("rolled out in %s; %d pods started", sinceStart(up.lastReady, start), up.pods)
}
