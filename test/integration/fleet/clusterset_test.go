package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/hub/clusterset"
	"github.com/lockstep-dev/lockstep/internal/hub/placement"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The cluster set tests run the Placement controller and the cluster set
// controllers on MemberClusters of their own (labelled cs-test=<namespace>),
// with Ready set by the test.

const csTimeout = 30 * time.Second

// runClusterSetControllers runs the Placement and cluster set controllers.
func runClusterSetControllers(t *testing.T) {
	t.Helper()
	runManager(t, func(mgr ctrl.Manager) error {
		if err := (&placement.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
			Recorder: mgr.GetEventRecorder("lockstep-hub-placement"),
		}).SetupWithManager(mgr); err != nil {
			return err
		}
		return (&clusterset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("lockstep-hub-clusterset")}).SetupWithManager(mgr)
	})
}

// csMembers registers Ready MemberClusters <ns>-<name> labelled cs-test=<ns>
// and tier=<tier>, deleted when the test ends, and returns their names.
func csMembers(t *testing.T, ns string, tiers map[string]string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	byTier := map[string][]string{}
	for name, tier := range tiers {
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name, Labels: map[string]string{"cs-test": ns, "tier": tier}},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: "lockstep-fleet", Name: "shared",
			}},
		}
		if err := hubEnv.Client.Create(ctx, mc); err != nil {
			t.Fatalf("creating MemberCluster %s: %v", mc.Name, err)
		}
		t.Cleanup(func() { _ = hubEnv.Client.Delete(context.Background(), mc) })
		setReady(t, mc.Name, true)
		byTier[tier] = append(byTier[tier], mc.Name)
	}
	for _, names := range byTier {
		slices.Sort(names)
	}
	return byTier
}

// csSet creates a MemberClusterSet of the test's members of one tier ("" for
// all of them), deleted when the test ends.
func csSet(t *testing.T, name, ns, tier string) {
	t.Helper()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"cs-test": ns}}
	if tier != "" {
		sel.MatchLabels["tier"] = tier
	}
	if err := testenv.EnsureClusterSet(context.Background(), hubEnv.Client, name, sel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = hubEnv.Client.Delete(context.Background(), &fleetv1alpha1.MemberClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

func csBind(t *testing.T, ns, set string) {
	t.Helper()
	if err := testenv.BindClusterSet(context.Background(), hubEnv.Client, ns, set); err != nil {
		t.Fatal(err)
	}
}

// csPlacement creates placement "p" in ns with no clusterSelector: only the
// cluster sets limit what it sees.
func csPlacement(t *testing.T, ns string, clusterSets ...string) {
	t.Helper()
	pl := &fleetv1alpha1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placementName},
		Spec:       fleetv1alpha1.PlacementSpec{ClusterSets: clusterSets},
	}
	if err := hubEnv.Client.Create(context.Background(), pl); err != nil {
		t.Fatalf("creating Placement %s/%s: %v", ns, placementName, err)
	}
}

// placedClusters is the union of the placement's PlacementDecisions, sorted.
func placedClusters(ns string) ([]string, error) {
	var pds fleetv1alpha1.PlacementDecisionList
	if err := hubEnv.Client.List(context.Background(), &pds, client.InNamespace(ns),
		client.MatchingLabels{fleetv1alpha1.LabelPlacement: placementName}); err != nil {
		return nil, err
	}
	out := []string{}
	for _, pd := range pds.Items {
		for _, d := range pd.Status.Decisions {
			if !slices.Contains(out, d.ClusterName) {
				out = append(out, d.ClusterName)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitForPlacement waits until placement "p" in ns, on its current
// generation, has settled decisions holding exactly want and a
// ClusterSetsBound condition of the given status and reason whose message
// contains every one of message.
func waitForPlacement(t *testing.T, ns string, want []string, bound metav1.ConditionStatus, message ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	var got metav1.Condition
	var pl fleetv1alpha1.Placement
	eventually(t, csTimeout, fmt.Sprintf("placement %s/p selecting %v with ClusterSetsBound=%s", ns, want, bound), func() (bool, string) {
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: placementName}, &pl); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementClusterSetsBound))
		settled := meta.IsStatusConditionTrue(pl.Status.Conditions, string(fleetv1alpha1.PlacementDecisionsSettled))
		placed, err := placedClusters(ns)
		if err != nil {
			return false, err.Error()
		}
		state := fmt.Sprintf("observedGeneration %d of %d, selected %d, settled %v, decisions %v, ClusterSetsBound %+v",
			pl.Status.ObservedGeneration, pl.Generation, pl.Status.NumberOfSelectedClusters, settled, placed, c)
		if c == nil || pl.Status.ObservedGeneration != pl.Generation || !settled || c.Status != bound ||
			int(pl.Status.NumberOfSelectedClusters) != len(want) || !slices.Equal(placed, want) {
			return false, state
		}
		for _, m := range message {
			if !strings.Contains(c.Message, m) {
				return false, state
			}
		}
		got = *c
		return true, state
	})
	wantReason := fleetv1alpha1.PlacementReasonClusterSetsBound
	if bound == metav1.ConditionFalse {
		wantReason = fleetv1alpha1.PlacementReasonClusterSetUnbound
	}
	if got.Reason != string(wantReason) {
		t.Errorf("ClusterSetsBound reason %s, want %s (%s)", got.Reason, wantReason, got.Message)
	}
	// kstatus (helm --wait, Flux, Argo CD): a settled placement is Current, one
	// whose sets are not bound Failed (Stalled, with ClusterSetsBound's reason).
	wantKstatus := kstatus.CurrentStatus
	if bound == metav1.ConditionFalse {
		wantKstatus = kstatus.FailedStatus
	}
	if k := placementKstatus(t, &pl); k != wantKstatus {
		t.Errorf("kstatus %s, want %s; conditions %+v", k, wantKstatus, pl.Status.Conditions)
	}
	if c := meta.FindStatusCondition(pl.Status.Conditions, string(fleetv1alpha1.PlacementStalled)); c == nil || c.Reason != string(wantReason) {
		t.Errorf("Stalled %+v, want reason %s", c, wantReason)
	}
}

// waitForEvent waits for an event on placement "p" in ns with the reason.
func waitForEvent(t *testing.T, ns string, reason fleetv1alpha1.PlacementReason, contains string) {
	t.Helper()
	eventually(t, csTimeout, "event "+string(reason)+" on placement "+ns+"/p", func() (bool, string) {
		var evs eventsv1.EventList
		if err := hubEnv.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name == placementName && e.Reason == string(reason) && strings.Contains(e.Note, contains) {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return false, fmt.Sprintf("events %q", seen)
	})
}

func waitForBinding(t *testing.T, ns, name string, status metav1.ConditionStatus, reason fleetv1alpha1.MemberClusterSetBindingReason) {
	t.Helper()
	eventually(t, csTimeout, fmt.Sprintf("binding %s/%s Bound=%s (%s)", ns, name, status, reason), func() (bool, string) {
		var b fleetv1alpha1.MemberClusterSetBinding
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(b.Status.Conditions, string(fleetv1alpha1.MemberClusterSetBindingBound))
		if c == nil {
			return false, "no Bound condition"
		}
		return c.Status == status && c.Reason == string(reason) && b.Status.ObservedGeneration == b.Generation, fmt.Sprintf("%+v", *c)
	})
}

func waitForSetCount(t *testing.T, name string, count int32) {
	t.Helper()
	eventually(t, csTimeout, fmt.Sprintf("MemberClusterSet %s counting %d clusters", name, count), func() (bool, string) {
		var s fleetv1alpha1.MemberClusterSet
		if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, &s); err != nil {
			return false, err.Error()
		}
		return s.Status.MemberClusterCount == count && s.Status.ObservedGeneration == s.Generation &&
				meta.IsStatusConditionTrue(s.Status.Conditions, string(fleetv1alpha1.MemberClusterSetSelectorValid)),
			fmt.Sprintf("%+v", s.Status)
	})
}

// A namespace with no binding gets no cluster, however many exist; binding a
// set of a subset gives it exactly that subset.
func TestClusterSets_UnboundNamespaceSelectsNothingUntilASetIsBound(t *testing.T) {
	ns := newUnboundNamespace(t, "cs-unbound")
	tiers := csMembers(t, ns, map[string]string{"1": "gold", "2": "gold", "3": "silver", "4": "silver"})
	runClusterSetControllers(t)
	csPlacement(t, ns)
	waitForPlacement(t, ns, nil, metav1.ConditionFalse, "no MemberClusterSet is bound to namespace "+ns, "selecting nothing")
	waitForEvent(t, ns, fleetv1alpha1.PlacementReasonClusterSetUnbound, "no MemberClusterSet is bound")

	gold := ns + "-gold"
	csSet(t, gold, ns, "gold")
	csBind(t, ns, gold)
	waitForPlacement(t, ns, tiers["gold"], metav1.ConditionTrue, "MemberClusterSet "+gold)
	waitForEvent(t, ns, fleetv1alpha1.PlacementReasonClusterSetsBound, "selecting from MemberClusterSet "+gold)
	waitForBinding(t, ns, gold, metav1.ConditionTrue, fleetv1alpha1.MemberClusterSetBindingReasonBound)
	waitForSetCount(t, gold, 2)

	// A member that joins the set by label joins the placement.
	var mc fleetv1alpha1.MemberCluster
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Name: tiers["silver"][0]}, &mc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Labels["tier"] = "gold"
	if err := hubEnv.Client.Patch(context.Background(), &mc, patch); err != nil {
		t.Fatal(err)
	}
	waitForPlacement(t, ns, append(slices.Clone(tiers["gold"]), mc.Name), metav1.ConditionTrue)
	waitForSetCount(t, gold, 3)
}

// A binding to a set that does not exist is Bound=False (ClusterSetNotFound)
// and gives the placement nothing, which its condition explains; once the set
// is created, both follow.
func TestClusterSets_BindingToAnUnknownSet(t *testing.T) {
	ns := newUnboundNamespace(t, "cs-unknown")
	tiers := csMembers(t, ns, map[string]string{"1": "gold", "2": "silver"})
	runClusterSetControllers(t)
	missing := ns + "-later"
	csBind(t, ns, missing)
	csPlacement(t, ns)
	waitForBinding(t, ns, missing, metav1.ConditionFalse, fleetv1alpha1.MemberClusterSetBindingReasonSetNotFound)
	waitForPlacement(t, ns, nil, metav1.ConditionFalse, "binds MemberClusterSet "+missing+", which does not exist", "selecting nothing")

	csSet(t, missing, ns, "silver")
	waitForBinding(t, ns, missing, metav1.ConditionTrue, fleetv1alpha1.MemberClusterSetBindingReasonBound)
	waitForPlacement(t, ns, tiers["silver"], metav1.ConditionTrue)
}

// spec.clusterSets naming a set not bound to the namespace selects nothing from
// it, even though the set exists and another set is bound; the condition
// names the set.
func TestClusterSets_PlacementNamingAnUnboundSet(t *testing.T) {
	ns := newUnboundNamespace(t, "cs-named")
	tiers := csMembers(t, ns, map[string]string{"1": "gold", "2": "silver"})
	runClusterSetControllers(t)
	gold, silver := ns+"-gold", ns+"-silver"
	csSet(t, gold, ns, "gold")
	csSet(t, silver, ns, "silver")
	csBind(t, ns, gold)
	csPlacement(t, ns, silver)
	waitForPlacement(t, ns, nil, metav1.ConditionFalse,
		"spec.clusterSets names MemberClusterSet "+silver+" not bound to namespace "+ns, "selecting nothing")

	// Naming the bound set instead selects its clusters only.
	var pl fleetv1alpha1.Placement
	if err := hubEnv.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: placementName}, &pl); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(pl.DeepCopy())
	pl.Spec.ClusterSets = []string{gold}
	if err := hubEnv.Client.Patch(context.Background(), &pl, patch); err != nil {
		t.Fatal(err)
	}
	waitForPlacement(t, ns, tiers["gold"], metav1.ConditionTrue)
}

// The CRD refuses a binding not named after its set, naming the field.
func TestClusterSets_BindingMustBeNamedAfterItsSet(t *testing.T) {
	ns := newUnboundNamespace(t, "cs-cel")
	b := &fleetv1alpha1.MemberClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gold"},
		Spec:       fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: "silver"},
	}
	err := hubEnv.Client.Create(context.Background(), b)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterSet") {
		t.Fatalf("err = %v, want Invalid naming spec.clusterSet", err)
	}
	b.Spec.ClusterSet = "gold"
	if err := hubEnv.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("a binding named after its set was refused: %v", err)
	}
}
