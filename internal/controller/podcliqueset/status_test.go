package podcliqueset

import (
	"testing"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestBlockers_NameTheOldestWaitingPodsOfTheUpdateRevision(t *testing.T) {
	waiting := []waitingPod{
		{name: "old-0", setRevision: "v1", why: "not scheduled yet"},
		{name: "pcs-0-frontend-3", setRevision: "v2", surge: true, why: "not scheduled: 0/4 nodes are available"},
		{name: "pcs-0-frontend-0", setRevision: "v2", why: "scheduled on n, not ready yet"},
		{name: "pcs-0-frontend-1", setRevision: "v2", why: "not scheduled yet"},
	}
	got := blockers(v1alpha1.ReasonProgressDeadlineExceeded, "v2", waiting)
	want := "; waiting for surge pod pcs-0-frontend-3 (not scheduled: 0/4 nodes are available), pod pcs-0-frontend-0 (scheduled on n, not ready yet) and 1 more"
	if got != want {
		t.Fatalf("blockers:\n got %q\nwant %q", got, want)
	}
	if got := blockers(v1alpha1.ReasonRolloutComplete, "v2", waiting); got != "" {
		t.Fatalf("a complete rollout names blockers: %q", got)
	}
	if got := blockers(v1alpha1.ReasonRollingUpdateInProgress, "v3", waiting); got != "" {
		t.Fatalf("pods of other revisions named: %q", got)
	}
}
