package round

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
)

func TestLostFor_CountsFromTheReadyTransition(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	mc := func(status metav1.ConditionStatus, ago time.Duration) *fleetv1alpha1.MemberCluster {
		return &fleetv1alpha1.MemberCluster{Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
			Type: string(fleetv1alpha1.MemberClusterReady), Status: status, LastTransitionTime: metav1.NewTime(now.Add(-ago)),
		}}}}
	}
	cases := []struct {
		name string
		mc   *fleetv1alpha1.MemberCluster
		lost bool // with the default timeout of 300 s
	}{
		{"ready", mc(metav1.ConditionTrue, time.Hour), false},
		{"not ready for a minute", mc(metav1.ConditionFalse, time.Minute), false},
		{"not ready for six minutes", mc(metav1.ConditionFalse, 6*time.Minute), true},
		{"never probed", &fleetv1alpha1.MemberCluster{}, false},
		{"deleted", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := lostFor(c.mc, now) >= fleetv1alpha1.DefaultMemberLostTimeoutSeconds*time.Second; got != c.lost {
				t.Errorf("lost %v, want %v", got, c.lost)
			}
		})
	}
}

func TestOthersGrown_OnlyWhenEveryStayingMemberIsCurrentAndFull(t *testing.T) {
	full := MemberView{Name: "a", Desired: 6, Target: 6, Status: align.Status{Replicas: 6, Available: 6}}
	cases := []struct {
		name  string
		views []MemberView
		want  bool
	}{
		{"all grown", []MemberView{full}, true},
		{"one short", []MemberView{full, {Name: "b", Desired: 4, Target: 4, Status: align.Status{Replicas: 4, Available: 3}}}, false},
		{"one not yet at its share", []MemberView{full, {Name: "b", Desired: 3, Target: 4, Status: align.Status{Replicas: 3, Available: 3}}}, false},
		{"one stale", []MemberView{full, {Name: "b", Desired: 4, Target: 4, Status: align.Status{Replicas: 4, Available: 4}, Reach: align.Stale}}, false},
		{"nobody stays", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := othersGrown(c.views); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestChangedGrants_NamesNewAndChangedMembers(t *testing.T) {
	before := []fleetv1alpha1.FederatedClusterStatus{{Name: "a", Grant: fleetv1alpha1.MemberGrant{Started: true, MaxUnavailable: 2}}, {Name: "b"}}
	after := []fleetv1alpha1.FederatedClusterStatus{{Name: "a", Grant: fleetv1alpha1.MemberGrant{Started: true, MaxUnavailable: 2}}, {Name: "b", Grant: fleetv1alpha1.MemberGrant{Started: true, MaxSurge: 1}}, {Name: "c"}}
	got := changedGrants(before, after)
	if len(got) != 2 || got[0][:2] != "b:" || got[1][:2] != "c:" {
		t.Errorf("got %q", got)
	}
	if len(changedGrants(after, after)) != 0 {
		t.Error("unchanged grants reported")
	}
}

// A cluster the placement dropped stays in the division while it may hold a
// share (it is in the status), is still eligible (in a set bound to the namespace and matching the
// placement's selector) and has not been lost; a cluster that no longer
// matches, left the bound sets, is being deleted, is gone or is lost does not.
func TestDividedClusters_KeepUnansweringMembersUntilLost(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	mc := func(name string, ready metav1.ConditionStatus, ago time.Duration, lbls map[string]string) *fleetv1alpha1.MemberCluster {
		return &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
			Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
				Type: string(fleetv1alpha1.MemberClusterReady), Status: ready, LastTransitionTime: metav1.NewTime(now.Add(-ago)),
			}}},
		}
	}
	fleetLabel := map[string]string{"fleet": "web"}
	deleting := mc("deleting", metav1.ConditionFalse, time.Second, fleetLabel)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	mcs := map[string]*fleetv1alpha1.MemberCluster{
		"placed":        mc("placed", metav1.ConditionTrue, time.Hour, fleetLabel),
		"blinking":      mc("blinking", metav1.ConditionFalse, time.Minute, fleetLabel),
		"back":          mc("back", metav1.ConditionTrue, time.Second, fleetLabel),
		"lost":          mc("lost", metav1.ConditionFalse, 6*time.Minute, fleetLabel),
		"relabelled":    mc("relabelled", metav1.ConditionFalse, time.Minute, map[string]string{"fleet": "other"}),
		"deleting":      deleting,
		"not-in-status": mc("not-in-status", metav1.ConditionFalse, time.Minute, fleetLabel),
		"other-tenant":  mc("other-tenant", metav1.ConditionFalse, time.Minute, map[string]string{"fleet": "web", "tenant": "b"}),
	}
	holding := map[string]bool{}
	for _, n := range []string{"placed", "blinking", "back", "lost", "relabelled", "deleting", "gone", "other-tenant"} {
		holding[n] = true
	}
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Spec: fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: fleetLabel}}}
	set := fleetv1alpha1.MemberClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: fleetv1alpha1.MemberClusterSetSpec{ClusterSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"b"}}}}}}
	binding := fleetv1alpha1.MemberClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
		Spec: fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: "a"}}
	var members []fleetv1alpha1.MemberCluster
	for _, m := range mcs {
		members = append(members, *m)
	}
	sel, err := fleet.Select(fleet.SelectionInput{Placement: pl, Sets: []fleetv1alpha1.MemberClusterSet{set},
		Bindings: []fleetv1alpha1.MemberClusterSetBinding{binding}, Members: members})
	if err != nil {
		t.Fatal(err)
	}
	got := dividedClusters(&fleetv1alpha1.FederatedWorkload{}, []string{"placed"}, sel.Eligible, holding, mcs, now)
	if want := []string{"back", "blinking", "placed"}; !slices.Equal(got, want) {
		t.Errorf("divided over %v, want %v", got, want)
	}
}
