package federatedworkload

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
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
	full := memberView{Name: "a", Desired: 6, Status: align.Status{Replicas: 6, Available: 6}}
	cases := []struct {
		name  string
		views []memberView
		want  bool
	}{
		{"all grown", []memberView{full}, true},
		{"one short", []memberView{full, {Name: "b", Desired: 4, Status: align.Status{Replicas: 4, Available: 3}}}, false},
		{"one stale", []memberView{full, {Name: "b", Desired: 4, Status: align.Status{Replicas: 4, Available: 4}, Reach: align.Stale}}, false},
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
