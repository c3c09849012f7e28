package round

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
)

// maxWipeRounds bounds a rollout of the wipe tests: one that has not ended
// by then is stuck.
const maxWipeRounds = 400

// Over random fleets (two to four Deployment or StatefulSet members),
// budgets and partitions, with the division changed along with the template
// (new weights, maybe a member leaving the placement), and members that
// report late, act between the hub's read and its write, or cannot be read
// in the first rounds, the workload's status is replaced by an empty one at
// random rounds, as a status update or a restore without status does. The
// hub's rounds (Plan, as the controller runs them) keep the global
// invariants after every member's every action: at least replicas −
// maxUnavailable available, at most replicas + maxSurge units, at most
// replicas − partition units on the new revision (plus those above a
// member's replicas and the members' replicas above the global ones while
// shares move: surge); and the rollout completes, every unit on its new
// share and exactly replicas − partition updated (less what no Deployment's
// whole share fits), the leaver's object deleted.
func TestPlan_AWipedStatusKeepsTheBudgetAndTheRolloutCompletes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom([]member.Kind{member.Deployment, member.StatefulSet}).Draw(t, "kind")
		n := rapid.IntRange(2, 4).Draw(t, "members")
		var names []string
		before, after := map[string]int32{}, map[string]int32{}
		for i := range n {
			c := fmt.Sprintf("m%d", i)
			names = append(names, c)
			before[c] = int32(rapid.IntRange(1, 3).Draw(t, "weight before"))
			after[c] = int32(rapid.IntRange(0, 3).Draw(t, "weight after"))
		}
		leaver := ""
		if rapid.Bool().Draw(t, "a member leaves") {
			leaver = names[n-1]
			delete(after, leaver)
		}
		if !slices.ContainsFunc(names, func(c string) bool { return after[c] > 0 }) {
			after[names[0]] = 1
		}
		replicas, mu, ms, partition := drawLimits(t, kind)

		h := newSimHub(simWorkload(kind, "web:1", replicas, mu, ms, before), names)
		if err := h.rest(); err != nil {
			t.Fatalf("bringing the fleet to rest: %v", err)
		}
		to := simWorkload(kind, "web:2", replicas, mu, ms, after)
		to.Spec.RolloutStrategy.Partition = partition
		to.Generation = 2
		to.Status = h.fw.Status
		h.fw = to
		if leaver != "" {
			h.leave(leaver)
		}
		tmpl, err := member.ParseTemplate(to.Spec.Template.Raw)
		if err != nil {
			t.Fatal(err)
		}
		check := func(when string) {
			if breach := h.budgetBreach(tmpl.Revision); breach != "" {
				t.Fatalf("%s: %s", when, breach)
			}
		}
		check("at rest")
		faulty := rapid.IntRange(0, 6).Draw(t, "faulty rounds")
		wipes := 0
		for r := range maxWipeRounds {
			if rapid.IntRange(0, 2).Draw(t, "wipe") == 0 {
				h.fw.Status = fleetv1alpha1.FederatedWorkloadStatus{}
				wipes++
			}
			clear(h.unread)
			var early []string
			lagging := map[string]bool{}
			if r < faulty {
				for _, c := range names {
					h.unread[c] = rapid.IntRange(0, 4).Draw(t, "unread") == 0
					if rapid.IntRange(0, 2).Draw(t, "acts early") == 0 {
						early = append(early, c)
					}
					lagging[c] = rapid.IntRange(0, 2).Draw(t, "reports late") == 0
				}
			}
			in := h.observe()
			// Members whose controllers act after the hub's read, before its
			// writes arrive, on what they held.
			for _, c := range early {
				if err := h.members[c].Act(); err != nil {
					t.Fatal(err)
				}
				check(fmt.Sprintf("round %d, %s acted before the writes", r, c))
			}
			out := Plan(in)
			t.Logf("round %d (status wiped %d times): %v", r, wipes, out.LogValues())
			if err := h.deliver(out); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			finished := out.Plan.Done && r >= faulty &&
				!slices.ContainsFunc(out.Status.Clusters, func(c fleetv1alpha1.FederatedClusterStatus) bool { return c.Name == leaver })
			if finished || (out.Plan.Done && r >= faulty && out.Plan.SharesHeld > 0) {
				endOf(t, h, tmpl.Revision, out.Plan, replicas, partition, leaver)
				return
			}
			if err := h.step(r, lagging, check); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("no end after %d rounds:%s", maxWipeRounds, h.layout(tmpl.Revision))
	})
}

// drawLimits draws replicas, the global limits and a partition for a
// workload of kind: a partitioned member updates a unit by taking it down
// (validation asks for maxUnavailable ≥ 1); not both limits 0.
func drawLimits(t *rapid.T, kind member.Kind) (replicas, mu, ms, partition int32) {
	replicas = int32(rapid.IntRange(1, 12).Draw(t, "replicas"))
	leastUnavailable := 0
	if kind == member.StatefulSet {
		leastUnavailable = 1
	}
	mu = int32(rapid.IntRange(leastUnavailable, 3).Draw(t, "maxUnavailable"))
	ms = int32(rapid.IntRange(0, 2).Draw(t, "maxSurge"))
	if mu == 0 && ms == 0 {
		mu = 1
	}
	partition = int32(rapid.IntRange(0, int(replicas)).Draw(t, "partition"))
	return replicas, mu, ms, partition
}

// endOf checks a finished rollout: every unit on its new share and
// available, replicas − partition of them updated (less what no Deployment
// member's whole share fits), the leaver's object gone.
func endOf(t *rapid.T, h *simHub, rev string, p align.Plan, replicas, partition int32, leaver string) {
	if p.SharesHeld > 0 {
		return // no path to the new shares keeps the invariants: held, and said so
	}
	available, units, updated, _ := h.fleetCounts(rev)
	if available != replicas || units != replicas || updated+p.WholeShareShortfall != replicas-partition {
		t.Fatalf("done with %d available, %d units, %d updated and %d short; want %d, %d and %d in all:%s",
			available, units, updated, p.WholeShareShortfall, replicas, replicas, replicas-partition, h.layout(rev))
	}
	if leaver != "" && h.members[leaver].Get() != nil {
		t.Fatalf("done with the leaver's object still there:%s", h.layout(rev))
	}
}

// A round after the status was wiped makes exactly the writes, and plans
// exactly the grants, it would have with it, at every round of a rollout that re-divides the replicas and
// moves a member out of the placement while one member reports late (it is
// stale every other round, with grants it may still act on): the next round
// decides from the member objects alone. (All members answer: one that does
// not is taken at its widest without the status, see
// TestPlan_AWipedStatusTakesAnUnreadMemberAtItsWidest.)
func TestPlan_AWipedStatusChangesNoWrite(t *testing.T) {
	for _, tc := range []struct {
		kind      member.Kind
		partition int32
	}{{member.Deployment, 0}, {member.StatefulSet, 2}} {
		kind, partition := tc.kind, tc.partition
		t.Run(string(kind), func(t *testing.T) {
			names := []string{"a", "b", "c"}
			h := newSimHub(simWorkload(kind, "web:1", 9, 1, 1, map[string]int32{"a": 1, "b": 1, "c": 1}), names)
			if err := h.rest(); err != nil {
				t.Fatal(err)
			}
			to := simWorkload(kind, "web:2", 9, 1, 1, map[string]int32{"a": 1, "b": 2})
			to.Spec.RolloutStrategy.Partition = partition
			to.Generation = 2
			to.Status = h.fw.Status
			h.fw = to
			h.leave("c")
			var moving, acting, compared int
			for r := 0; ; r++ {
				if r == maxWipeRounds {
					t.Fatalf("no end after %d rounds", maxWipeRounds)
				}
				in := h.observe()
				out := Plan(in)
				kept := h.fw
				h.fw = kept.DeepCopy()
				h.fw.Status = fleetv1alpha1.FederatedWorkloadStatus{}
				after := Plan(h.observe())
				h.fw = kept
				if !equality.Semantic.DeepEqual(out.Writes, after.Writes) {
					t.Fatalf("round %d: the writes differ once the status is wiped:\nwith it:    %s\nwithout it: %s",
						r, describeWrites(out.Writes), describeWrites(after.Writes))
				}
				if !equality.Semantic.DeepEqual(out.Plan, after.Plan) {
					t.Fatalf("round %d: the plan differs once the status is wiped:\nwith it:    %+v\nwithout it: %+v", r, out.Plan, after.Plan)
				}
				compared += len(out.Writes)
				for _, m := range out.Members {
					if m.Desired != m.Target {
						moving++
					}
					if m.Reach == align.Stale && m.Observed != nil {
						acting++
					}
				}
				if err := h.deliver(out); err != nil {
					t.Fatal(err)
				}
				if out.Plan.Done && !slices.ContainsFunc(out.Status.Clusters, func(c fleetv1alpha1.FederatedClusterStatus) bool { return c.Name == "c" }) {
					break
				}
				for _, c := range names {
					m := h.members[c]
					if err := m.Act(); err != nil {
						t.Fatal(err)
					}
					m.Settle()
					if c != "a" || r%2 == 1 {
						m.Report()
					}
				}
			}
			// The scenario must show what the status used to be needed for.
			if moving == 0 || acting == 0 || compared == 0 {
				t.Errorf("%d members moving shares, %d stale members acting on older grants, %d writes compared: the scenario exercises too little",
					moving, acting, compared)
			}
		})
	}
}

func describeWrites(ws []Write) string {
	var parts []string
	for _, w := range ws {
		if w.Op == Delete {
			parts = append(parts, fmt.Sprintf("%s %s", w.Op, w.Cluster))
			continue
		}
		v := w.Object.Object["spec"].(map[string]any)
		parts = append(parts, fmt.Sprintf("%s %s replicas=%v %s", w.Op, w.Cluster, v["replicas"], w.Object.GetAnnotations()[fleetv1alpha1.AnnotationGrant]))
	}
	return strings.Join(parts, "; ")
}

// midRollout is a fleet of two Deployment members a and b of 5 pods each
// (maxUnavailable 2, maxSurge 1), one round into a rollout to web:2: a holds
// the new template and the budget, and has acted on it once.
func midRollout(t *testing.T) *simHub {
	t.Helper()
	h := newSimHub(simWorkload(member.Deployment, "web:1", 10, 2, 1, map[string]int32{"a": 1, "b": 1}), []string{"a", "b"})
	if err := h.rest(); err != nil {
		t.Fatal(err)
	}
	to := simWorkload(member.Deployment, "web:2", 10, 2, 1, map[string]int32{"a": 1, "b": 1})
	to.Generation = 2
	to.Status = h.fw.Status
	h.fw = to
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"a", "b"} {
		m := h.members[c]
		if err := m.Act(); err != nil {
			t.Fatal(err)
		}
		m.Settle()
		m.Report()
	}
	return h
}

func writeTo(out Output, cluster string) *Write {
	for i := range out.Writes {
		if out.Writes[i].Cluster == cluster {
			return &out.Writes[i]
		}
	}
	return nil
}

func clusterEntry(st fleetv1alpha1.FederatedWorkloadStatus, name string) *fleetv1alpha1.FederatedClusterStatus {
	for i := range st.Clusters {
		if st.Clusters[i].Name == name {
			return &st.Clusters[i]
		}
	}
	return nil
}

// Without the status a member the round cannot read is unknown: it is taken
// to hold as much as the fleet may (replicas + maxSurge less what b holds:
// 6, at least its share) under the widest grant it could have (every pod of
// it down, all the surge), so b gets nothing while a may be spending the
// budget; and the status says why. Read again, a is planned from its own
// object.
func TestPlan_AWipedStatusTakesAnUnreadMemberAtItsWidest(t *testing.T) {
	h := midRollout(t)
	h.fw.Status = fleetv1alpha1.FederatedWorkloadStatus{}
	h.unread["a"] = true
	in := h.observe()
	if _, read := in.Members["a"]; read {
		t.Fatal("a was read")
	}
	out := Plan(in)
	a := clusterEntry(out.Status, "a")
	if a == nil || a.DesiredReplicas != 6 || a.Grant != (fleetv1alpha1.MemberGrant{Started: true, MaxUnavailable: 6, MaxSurge: 1}) ||
		!strings.Contains(a.Waiting, "status was lost") {
		t.Fatalf("a: %+v; want share 6 under {started, maxUnavailable 6, maxSurge 1}, waiting on the lost status", a)
	}
	// What b holds after the round: what is written to it, or (nothing to
	// change) what it held.
	bHolds := h.members["b"].Get()
	if b := writeTo(out, "b"); b != nil {
		bHolds = b.Object
	}
	if g := member.HeldGrant(member.Deployment, bHolds, h.members["b"].Get().GetAnnotations()[fleetv1alpha1.AnnotationTemplateRevision]); g.Started && !g.Paused {
		t.Errorf("b got budget while a's grant is unknown: %+v", g)
	}
	if writeTo(out, "a") != nil {
		t.Error("a was written without being read")
	}
	// The next round, status kept, a answers again: its record says what it
	// holds, not the status's guess.
	if err := h.deliver(out); err != nil {
		t.Fatal(err)
	}
	clear(h.unread)
	next := Plan(h.observe())
	if a := clusterEntry(next.Status, "a"); a == nil || a.DesiredReplicas != 5 || !a.Grant.Started || a.Grant.MaxUnavailable > 2 {
		t.Errorf("a read again: %+v; want its share of 5 and a grant within the budget", a)
	}
}

// An edit of the status (a share, a grant, what a member may still act on)
// changes nothing the hub does: what it decides from is on the member
// objects. A member object without a record (an older hub's) falls back to
// the status, as before records.
func TestPlan_TheRecordOutranksTheStatus(t *testing.T) {
	h := midRollout(t)
	in := h.observe()
	want := Plan(in)

	edited := h.fw.DeepCopy()
	for i := range edited.Status.Clusters {
		c := &edited.Status.Clusters[i]
		c.DesiredReplicas += 3
		c.Grant = fleetv1alpha1.MemberGrant{}
		c.StillActing = &fleetv1alpha1.MemberGrant{Started: true, MaxSurge: 9}
	}
	in.Workload = edited
	if got := Plan(in); !equality.Semantic.DeepEqual(got.Writes, want.Writes) {
		t.Fatalf("an edited status changed the writes:\n%s\n%s", describeWrites(got.Writes), describeWrites(want.Writes))
	}

	// Objects an older hub wrote: no record. The (edited) status gives the
	// share then.
	for name, obs := range in.Members {
		ann := obs.Object.GetAnnotations()
		delete(ann, fleetv1alpha1.AnnotationGrant)
		obs.Object.SetAnnotations(ann)
		in.Members[name] = obs
	}
	old := Plan(in)
	if w := writeTo(old, "b"); w == nil || w.Object.Object["spec"].(map[string]any)["replicas"].(int64) <= 5 {
		t.Errorf("without records b's share comes from the status (5 + 3, moving back toward 5): %s", describeWrites(old.Writes))
	}
	// Without records and without the status, a stale member's object is
	// all there is: its replicas are its share, and what it may still act
	// on is taken at its widest.
	in.Workload = h.fw.DeepCopy()
	in.Workload.Status = fleetv1alpha1.FederatedWorkloadStatus{}
	a := in.Members["a"]
	a.Object.SetGeneration(a.Object.GetGeneration() + 1)
	in.Members["a"] = a
	bare := Plan(in)
	var view MemberView
	for _, m := range bare.Members {
		if m.Name == "a" {
			view = m
		}
	}
	if view.Desired != 5 || view.Reach != align.Stale || view.Observed == nil || view.Observed.MaxUnavailable != 5 || view.Observed.MaxSurge != 1 {
		t.Errorf("a, stale, with neither record nor status: %+v", view)
	}
}

// A status that lists no member is a new workload's only when no object of
// the workload's is found: then every Ready member is read, so a cluster
// that left the placement with the workload's object is found and emptied.
func TestReadsOf_AnEmptyStatusReadsEveryReadyMember(t *testing.T) {
	h := midRollout(t)
	h.base.MemberClusters = append(h.base.MemberClusters, readyCluster("elsewhere", "True", t0.Add(-time.Hour)))
	if r := ReadsOf(h.observe()); !slices.Equal(r.Clusters, []string{"a", "b"}) {
		t.Errorf("with the status: reads %v, want the members it lists", r.Clusters)
	}
	h.fw.Status = fleetv1alpha1.FederatedWorkloadStatus{}
	if r := ReadsOf(h.observe()); !slices.Equal(r.Clusters, []string{"a", "b", "elsewhere"}) {
		t.Errorf("without the status: reads %v, want every Ready member", r.Clusters)
	}
}

// With the status lost, only clusters bound to the workload's namespace are
// read or taken to hold something: a Ready cluster of another tenant's set
// can hold none of this workload's objects, so it is neither read nor charged
// (were it, every tenant's wiped workload would wait on every cluster the hub
// cannot read).
func TestPlan_AWipedStatusLooksOnlyAtClustersBoundToTheNamespace(t *testing.T) {
	h := midRollout(t)
	h.fw.Status = fleetv1alpha1.FederatedWorkloadStatus{}
	other := readyCluster("other", metav1.ConditionTrue, t0.Add(-time.Hour))
	other.Labels = map[string]string{"tenant": "someone-else"}
	h.base.MemberClusters = append(h.base.MemberClusters, other)
	h.base.Sets = []fleetv1alpha1.MemberClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "all"},
		Spec: fleetv1alpha1.MemberClusterSetSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{simFleetLabel: "web"}}}}}
	in := h.observe()
	if slices.Contains(ReadsOf(in).Clusters, "other") {
		t.Fatalf("reads %v include a cluster not bound to the namespace", ReadsOf(in).Clusters)
	}
	out := Plan(in)
	if e := clusterEntry(out.Status, "other"); e != nil {
		t.Fatalf("a cluster not bound to the namespace is in the status: %+v", e)
	}
	// The same cluster, bound, unread: it may hold units and is charged so.
	h.base.Sets[0].Spec.ClusterSelector = nil
	if e := clusterEntry(Plan(h.observe()).Status, "other"); e == nil || !strings.Contains(e.Waiting, "status was lost") {
		t.Fatalf("a bound cluster not read after the wipe: %+v, want it taken to hold units", e)
	}
}
