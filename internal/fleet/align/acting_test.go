package align

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"
)

func drawGrant(t *rapid.T, label string) *Grant {
	if rapid.IntRange(0, 4).Draw(t, label+" nil") == 0 {
		return nil
	}
	return &Grant{
		Started:        rapid.Bool().Draw(t, label+" started"),
		Partition:      int32(rapid.IntRange(0, 6).Draw(t, label+" partition")),
		MaxUnavailable: int32(rapid.IntRange(0, 3).Draw(t, label+" maxUnavailable")),
		MaxSurge:       int32(rapid.IntRange(0, 3).Draw(t, label+" maxSurge")),
		Paused:         rapid.Bool().Draw(t, label+" paused"),
	}
}

// Charged for Widest(a, b), a member is charged at least what either grant
// could cost, whatever its kind and counts: the record of what it may still
// act on never undercharges it.
func TestWidest_ChargesAtLeastEitherGrant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &Member{Kind: rapid.SampledFrom([]Kind{Deployment, Partitioned}).Draw(t, "kind"),
			Desired: int32(rapid.IntRange(0, 6).Draw(t, "desired"))}
		m.Status.Replicas = int32(rapid.IntRange(0, 8).Draw(t, "replicas"))
		m.Status.Terminating = int32(rapid.IntRange(0, 2).Draw(t, "terminating"))
		m.Status.Available = int32(rapid.IntRange(0, int(m.Status.Replicas)).Draw(t, "available"))
		m.Status.Updated = int32(rapid.IntRange(0, int(m.Status.Replicas)).Draw(t, "updated"))
		m.Status.UpdatedAvailable = min(m.Status.Updated, m.Status.Available)
		a, b := drawGrant(t, "a"), drawGrant(t, "b")
		w := Widest(a, b)
		for _, g := range []*Grant{a, b} {
			if g == nil {
				continue
			}
			if chargeUnavailable(m, *w) < chargeUnavailable(m, *g) || chargeSurge(m, *w) < chargeSurge(m, *g) {
				t.Fatalf("Widest(%+v, %+v) = %+v charges %d/%d, less than %+v's %d/%d", a, b, w,
					chargeUnavailable(m, *w), chargeSurge(m, *w), g, chargeUnavailable(m, *g), chargeSurge(m, *g))
			}
		}
	})
}

// A Deployment member that took the surge, replaced a pod and was then paused
// without seeing it: the round that pauses it records the surge it may still
// use, and while it stays stale the other member gets none of it, paused or
// resumed. Without the record, the resumed round would start m2 with the
// surge.
func TestAlign_StaleMemberKeepsTheChargeOfTheGrantItStillActsOn(t *testing.T) {
	s := Strategy{Replicas: 10, MaxUnavailable: intstr.FromInt32(0), MaxSurge: intstr.FromInt32(1)}
	surge := Grant{Started: true, MaxSurge: 1}
	m1 := Member{Name: "m1", Kind: Deployment, Desired: 5, Target: 5, Last: &surge,
		Status: Status{Replicas: 5, Updated: 1, UpdatedAvailable: 1, Available: 5}}
	m2 := Member{Name: "m2", Kind: Deployment, Desired: 5, Target: 5, Last: &Grant{},
		Status: Status{Replicas: 5, Available: 5}}

	s.Paused = true
	plan, err := Align(s, []Member{m1, m2})
	if err != nil {
		t.Fatal(err)
	}
	paused := plan.Members[0].Grant
	if !paused.Paused {
		t.Fatalf("m1 not paused: %+v", paused)
	}
	acting := StillActing(&m1, paused)
	if acting == nil || *acting != surge {
		t.Fatalf("m1 may still act on %+v, recorded %+v", surge, acting)
	}

	// Resumed; m1 has not observed the pause (its object holds it as stored).
	s.Paused = false
	m1.Last, m1.Reach, m1.Observed = &paused, Stale, acting
	plan, err = Align(s, []Member{m1, m2})
	if err != nil {
		t.Fatal(err)
	}
	if g := plan.Members[1].Grant; g.Started && !g.Paused {
		t.Fatalf("m2 got %+v while m1 may still surge", g)
	}
	if g := plan.Members[0].Grant; !g.Paused {
		t.Fatalf("stale m1 unpaused with %+v: its maxUnavailable %d is a placeholder, not budget", g, paused.MaxUnavailable)
	}
	if plan.Surge != 1 {
		t.Fatalf("charged %d surge, want m1's 1", plan.Surge)
	}
}
