package gate

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestEvaluate(t *testing.T) {
	soak := &v1alpha1.Gate{SoakSeconds: 60}
	approval := &v1alpha1.Gate{Approval: true}
	both := &v1alpha1.Gate{SoakSeconds: 60, Approval: true}
	for _, tc := range []struct {
		name      string
		gate      *v1alpha1.Gate
		after     time.Duration
		approved  string
		open      bool
		reason    v1alpha1.ConditionReason
		recheckIn time.Duration
	}{
		{name: "no gate", open: true},
		{name: "a gate that checks nothing", gate: &v1alpha1.Gate{}, open: true},
		{name: "soak just begun", gate: soak, reason: v1alpha1.ReasonSoaking, recheckIn: 60 * time.Second},
		{name: "soak half way", gate: soak, after: 45 * time.Second, reason: v1alpha1.ReasonSoaking, recheckIn: 15 * time.Second},
		{name: "soak over", gate: soak, after: 60 * time.Second, open: true},
		{name: "no approval", gate: approval, reason: v1alpha1.ReasonAwaitingApproval},
		{name: "approved", gate: approval, approved: "v2@replicas-1", open: true},
		{name: "approval of another gate", gate: approval, approved: "v2@replicas-2", reason: v1alpha1.ReasonAwaitingApproval},
		{name: "approval of an earlier rollout", gate: approval, approved: "v1@replicas-1", reason: v1alpha1.ReasonAwaitingApproval},
		{name: "approved early: the soak still runs", gate: both, after: 10 * time.Second, approved: "v2@replicas-1",
			reason: v1alpha1.ReasonSoaking, recheckIn: 50 * time.Second},
		{name: "soaked, not approved", gate: both, after: time.Hour, reason: v1alpha1.ReasonAwaitingApproval},
		{name: "soaked and approved", gate: both, after: time.Hour, approved: "v2@replicas-1", open: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(Input{Gate: tc.gate, Name: "replicas-1", Revision: "v2", ReachedAt: t0, Now: t0.Add(tc.after), Approved: tc.approved})
			if v.Open != tc.open || v.Reason != tc.reason || v.RecheckIn != tc.recheckIn {
				t.Fatalf("got %+v, want open %v reason %q recheck in %s", v, tc.open, tc.reason, tc.recheckIn)
			}
			if !v.Open && v.Message == "" {
				t.Fatal("a closed gate must say what it waits for")
			}
		})
	}
}
