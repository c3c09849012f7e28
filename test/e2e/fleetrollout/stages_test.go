//go:build e2e

package fleetrollout

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	lockstepv1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/fleetwatch"
)

// A rollout in stages over the placement's decision groups: the canary group
// (m1, region eu) rolls alone and waits at its approval gate while m2 runs
// nothing new; approved, m2's stage starts, but m2 cannot run a new pod (its
// node is cordoned), so it fails its progressDeadline and, with maxFailures 0,
// the rollout halts with MaxFailuresExceeded. The global budget holds
// throughout.
func TestStages_CanaryGroupThenApprovalThenAFailingGroupHalts(t *testing.T) {
	s := newStory(t, "stages", "Deployment")
	s.groupPlacement(fleetv1alpha1.DecisionGroup{GroupName: "canary",
		GroupClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}})
	// Created with its stages: a new workload's first members start at once
	// (they replace nothing), and it settles.
	st := story1Strategy()
	zero := intstr.FromInt32(0)
	st.Stages = &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesProgressivePerGroup,
		Gate: &lockstepv1alpha1.Gate{Approval: true}, ProgressDeadline: metav1.Duration{Duration: 40 * time.Second}, MaxFailures: &zero}
	s.create(st)
	// Until the approval no more than m1's share (4) may run the new image.
	w := s.watch(fleetwatch.PodBounds{MinAvailable: 8, MaxPods: 11, MaxUpdated: 4})
	s.update("starting a staged rollout", func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.Template = s.template(newImage) })

	s.waitPods(w, "m1 all on the new image", func(fleetwatch.PodCounts) bool {
		c := w.MemberCounts("m1")
		return c.Pods == 4 && c.Updated == 4 && c.Available == 4 && c.Terminating == 0
	})
	fw := s.waitFor("the canary's gate awaiting approval", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return fw.Status.ObservedGeneration == fw.Generation && progressing(fw).Reason == string(lockstepv1alpha1.ReasonAwaitingApproval)
	})
	if g := fw.Status.Gate; g == nil || g.Name != "stage-canary-0" {
		t.Fatalf("the gate: %+v, want stage-canary-0\n%s", g, statusYAML(fw))
	}
	s.expectPlugin(4, "status", "fw/web", "--watch=false")
	// A negative: for five seconds (two and a half rounds of the hub) m2 may
	// start nothing new.
	for until := time.Now().Add(5 * time.Second); time.Now().Before(until); {
		if c := w.MemberCounts("m2"); c.Updated > 0 {
			t.Fatalf("m2 runs %d pod(s) of the new template behind a closed gate: %s", c.Updated, c)
		}
		time.Sleep(poll) // pacing the checks of a negative, not synchronisation
	}

	// m2's new pods stay Pending; its old ones keep running (but for those
	// its grant lets it take down).
	s.cordon("m2", true)
	t.Cleanup(func() { s.cordon("m2", false) })
	w.SetBounds(story1Bounds)
	s.expectPlugin(0, "approve", "fw/web")

	fw = s.waitFor("the rollout halted by m2's failure", func(fw *fleetv1alpha1.FederatedWorkload) bool {
		return progressing(fw).Reason == string(fleetv1alpha1.FederatedWorkloadReasonMaxFailuresExceeded) &&
			meta.IsStatusConditionTrue(fw.Status.Conditions, string(fleetv1alpha1.FederatedWorkloadStalled))
	})
	t.Logf("halted:\n%s", statusYAML(fw))
	if st := fw.Status.Stages; len(st) != 2 || st[0].Phase != fleetv1alpha1.StageSucceeded ||
		st[1].Phase != fleetv1alpha1.StageFailed || !slices.Equal(st[1].FailedClusters, []string{"m2"}) {
		t.Errorf("stages: %+v, want canary-0 Succeeded and group-1 Failed with m2", st)
	}
	s.expectPlugin(1, "status", "fw/web", "--watch=false")
	s.checkWatcher(w)
}

// groupPlacement gives the story's placement the predefined decision groups
// (the clusters none matches form a group after them) and waits until its
// decisions are settled in those groups plus one.
func (s *story) groupPlacement(groups ...fleetv1alpha1.DecisionGroup) {
	s.t.Helper()
	var pl fleetv1alpha1.Placement
	key := client.ObjectKey{Namespace: s.ns, Name: "both"}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.hub.Get(s.ctx, key, &pl); err != nil {
			return err
		}
		pl.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = groups
		return s.hub.Update(s.ctx, &pl)
	})
	if err != nil {
		s.t.Fatalf("grouping the placement: %v", err)
	}
	s.eventually("the placement settled in its decision groups", func() (bool, string) {
		if err := s.hub.Get(s.ctx, key, &pl); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pl.Generation &&
			len(pl.Status.DecisionGroups) == len(groups)+1, describePlacement(&pl)
	})
}

// cordon sets spec.unschedulable on every node of member m. A cleanup calls
// it when t's context is over: it runs on a context of its own.
func (s *story) cordon(m string, on bool) {
	s.t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := s.members[m].List(ctx, &nodes); err != nil {
		s.t.Errorf("listing the nodes of %s: %v", m, err)
		return
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		base := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = on
		if err := s.members[m].Patch(ctx, n, base); err != nil {
			s.t.Errorf("setting unschedulable=%t on %s/%s: %v", on, m, n.Name, err)
		}
	}
}
