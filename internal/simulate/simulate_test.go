package simulate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

func TestRun_IsDeterministicForASeed(t *testing.T) {
	spec := disaggregated(3)
	sc := update(spec, spec)
	sc.Jitter, sc.Seed, sc.Grace = 0.5, 7, 2*time.Second
	a, b := Run(sc), Run(sc)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of one scenario differ")
	}
	sc.Seed = 8
	if c := Run(sc); reflect.DeepEqual(a.Timeline, c.Timeline) {
		t.Fatal("another seed should move the start-up times")
	}
	assertOutcome(t, a, Complete)
}

func TestRun_AFaultStopsTheRolloutAndExplainsIt(t *testing.T) {
	spec := disaggregated(2)
	sc := update(spec, spec)
	sc.Faults = []Fault{{Role: "decode", After: 2}}
	res := Run(sc)
	assertOutcome(t, res, Stuck)
	if res.Outcome.FaultsFired != 1 {
		t.Fatalf("faults fired %d, want 1", res.Outcome.FaultsFired)
	}
	// the second decode replica never comes up, so replica 1 is never touched
	for _, a := range res.Timeline {
		if a.Replica == 1 {
			t.Fatalf("replica 1 touched while replica 0 is stuck: %s", a)
		}
	}
	// 4 decode group replicas over both PCS replicas; one is down at a time
	if got := minAvailableOf(res, "decode"); got != 3 {
		t.Fatalf("min available decode %d, want 3", got)
	}
}

func TestRun_ANewRevisionMidRolloutRetargets(t *testing.T) {
	spec := disaggregated(2)
	sc := update(spec, spec)
	v3 := revision("v3", spec, &sc.ToRevision, "prefill", "prefill-leader", "prefill-worker")
	sc.Changes = []Change{{At: 15 * time.Second, Revision: &v3}}
	res := Run(sc)
	assertOutcome(t, res, Complete)
	last := res.Timeline[len(res.Timeline)-1]
	if !strings.HasSuffix(last.To, "@v3") {
		t.Fatalf("last action %s, want a v3 create", last)
	}
}

func TestRun_ReplicasChangedMidRolloutNeitherStartsNorStallsIt(t *testing.T) {
	spec := disaggregated(2)
	sc := update(spec, spec)
	bigger := spec.DeepCopy()
	bigger.Replicas = ptr.To[int32](3)
	sc.Changes = []Change{{At: 5 * time.Second, Spec: bigger}}
	res := Run(sc)
	assertOutcome(t, res, Complete)
	for _, a := range res.Timeline {
		if a.Replica == 2 && a.Op == OpDelete {
			t.Fatalf("the new replica 2 was created on the update revision and needs no update: %s", a)
		}
	}
}

func TestRun_PausedRolloutResumesWhereItStopped(t *testing.T) {
	spec := disaggregated(2)
	sc := update(spec, spec)
	paused := spec.DeepCopy()
	paused.Paused = true
	sc.Changes = []Change{{At: 5 * time.Second, Spec: paused}, {At: 2 * time.Minute, Spec: spec}}
	res := Run(sc)
	assertOutcome(t, res, Complete)
	for _, a := range res.Timeline {
		if a.At > 5*time.Second && a.At < 2*time.Minute {
			t.Fatalf("action while paused: t=%s %s", a.At, a)
		}
	}
}

func TestRun_RollingUpdateCountsMixedRevisionMoments(t *testing.T) {
	spec := disaggregated(2)
	res := Run(update(spec, spec))
	mixed := map[int32]int{}
	for _, m := range res.Summary.MixedRevisionMoments {
		mixed[m.Replica] = m.Value
	}
	if mixed[0] == 0 || mixed[1] == 0 {
		t.Fatalf("mixed moments %v: both replicas ran two revisions while updating", res.Summary.MixedRevisionMoments)
	}
}

func TestRun_ResultEncodesAsJSON(t *testing.T) {
	spec := pcs(1, []v1alpha1.PodCliqueTemplateSpec{clq("worker", 2)})
	res := Run(update(spec, spec))
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"Complete"`, `"op":"delete"`, `"reason":"update"`, `"minAvailable":[{"role":"worker","value":1}]`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("JSON lacks %s: %s", want, out)
		}
	}
}

// A known trap of ordered controllers: with one replica whose new revision never
// becomes ready, a newer revision must still replace it.
func TestRun_ABrokenRevisionOfOneReplicaIsReplacedByTheNextOne(t *testing.T) {
	for name, strategy := range map[string]v1alpha1.PodCliqueSetUpdateStrategy{"RollingUpdate": {}, "ReplicaRecreate": recreate(1, 0)} {
		t.Run(name, func(t *testing.T) {
			spec := withStrategy(pcs(1, []v1alpha1.PodCliqueTemplateSpec{clq("worker", 1)}), strategy)
			sc := update(spec, spec)
			sc.Faults = []Fault{{Role: "worker", After: 1}} // the v2 pod never becomes ready
			v3 := revision("v3", spec, &sc.ToRevision)
			sc.Changes = []Change{{At: time.Minute, Revision: &v3}}
			res := Run(sc)
			assertOutcome(t, res, Complete)
			last := res.Timeline[len(res.Timeline)-1]
			if last.String() != "create replica 0 worker pod 0 @worker@v3" {
				t.Fatalf("last action %s", last)
			}
		})
	}
}
