//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/test/e2e/fleetenv"
)

// Tenancy on the live hub: a Placement in a namespace no set is bound to
// selects nothing, and once a set of some of the members is bound there it
// selects exactly those. Three MemberClusters of its own reach member m1
// through fleet-up.sh's Secret, so the hub's probes make them Ready.
func TestFleet_ClusterSetsDecideWhatANamespaceSees(t *testing.T) {
	ctx := t.Context()
	c := testFleet.Hub
	const ns, set = "cs-e2e", "cs-e2e-gold"
	tiers := map[string]string{"cs-e2e-1": "gold", "cs-e2e-2": "gold", "cs-e2e-3": "silver"}
	for name, tier := range tiers {
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"cs-e2e": "yes", "tier": tier}},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: "lockstep-fleet", Name: memberSecret,
			}},
		}
		if err := c.Create(ctx, mc); err != nil {
			t.Fatalf("creating MemberCluster %s: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), mc) })
	}
	s := &scene{c: c}
	s.awaitReady(t, []string{"cs-e2e-1", "cs-e2e-2", "cs-e2e-3"}, metav1.ConditionTrue, 60*time.Second)

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placementName}}
	if err := c.Create(ctx, pl); err != nil {
		t.Fatalf("creating Placement: %v", err)
	}
	awaitSets(t, ns, nil, metav1.ConditionFalse)

	gold := &fleetv1alpha1.MemberClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: set},
		Spec: fleetv1alpha1.MemberClusterSetSpec{ClusterSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"cs-e2e": "yes", "tier": "gold"}}},
	}
	if err := c.Create(ctx, gold); err != nil {
		t.Fatalf("creating MemberClusterSet: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), gold) })
	if err := fleetenv.Bind(ctx, c, ns, set); err != nil {
		t.Fatal(err)
	}
	awaitSets(t, ns, []string{"cs-e2e-1", "cs-e2e-2"}, metav1.ConditionTrue)
}

// awaitSets polls until placement p in ns has settled decisions holding
// exactly want, with ClusterSetsBound of the given status, on its current
// generation.
func awaitSets(t *testing.T, ns string, want []string, bound metav1.ConditionStatus) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	last := ""
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var pl fleetv1alpha1.Placement
		if err := testFleet.Hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: placementName}, &pl); err != nil {
			last = err.Error()
			return false, nil
		}
		var pds fleetv1alpha1.PlacementDecisionList
		if err := testFleet.Hub.List(ctx, &pds, client.InNamespace(ns), client.MatchingLabels{fleetv1alpha1.LabelPlacement: placementName}); err != nil {
			last = err.Error()
			return false, nil
		}
		placed := []string{}
		for _, pd := range pds.Items {
			for _, d := range pd.Status.Decisions {
				placed = append(placed, d.ClusterName)
			}
		}
		slices.Sort(placed)
		c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementClusterSetsBound))
		settled := meta.IsStatusConditionTrue(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		last = fmt.Sprintf("generation %d observed %d, settled %v, decisions %v, ClusterSetsBound %v", pl.Generation, pl.Status.ObservedGeneration, settled, placed, c)
		return c != nil && c.Status == bound && settled && pl.Status.ObservedGeneration == pl.Generation &&
			slices.Equal(placed, want), nil
	})
	if err != nil {
		t.Fatalf("placement %s/%s: want decisions %v and ClusterSetsBound=%s within 30s: %s", ns, placementName, want, bound, last)
	}
}
