package stages

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func groups() []Group {
	return []Group{{Name: "canary", Index: 0, Clusters: []string{"c1"}}, {Name: "", Index: 1, Clusters: []string{"a", "b", "d", "e"}}}
}

func TestCut(t *testing.T) {
	two := intstr.FromInt32(2)
	for _, tc := range []struct {
		spec Spec
		want []string
	}{
		{Spec{}, []string{"all:[c1 a b d e]"}},
		{Spec{Type: ProgressivePerGroup}, []string{"canary-0:[c1]", "group-1:[a b d e]"}},
		{Spec{Type: ProgressivePerGroup, Mandatory: []string{"#1"}}, []string{"group-1:[a b d e]", "canary-0:[c1]"}},
		{Spec{Type: Progressive, Mandatory: []string{"canary"}, MaxConcurrency: &two}, []string{"canary-0:[c1]", "wave-1:[a b]", "wave-2:[d e]"}},
	} {
		got, err := Cut(tc.spec, groups())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range got {
			names = append(names, fmt.Sprintf("%s:%v", s.Name, s.Clusters))
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.spec, names, tc.want)
		}
	}
	if _, err := Cut(Spec{Type: Progressive, Mandatory: []string{"nope"}}, groups()); err == nil {
		t.Error("an unknown mandatory group was accepted")
	}
}

func TestWalk_CanaryFirstThenTheRestAfterItsSoak(t *testing.T) {
	spec := Spec{Type: ProgressivePerGroup, MinSuccessTime: time.Minute}
	in := Input{Spec: spec, Groups: groups(), Clusters: map[string]Cluster{}, Now: t0}
	p, err := Walk(in)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Active["c1"] || p.Active["a"] || p.Stages[0].Phase != Progressing || p.Stages[1].Phase != Pending {
		t.Fatalf("start: %+v", p)
	}
	in.Previous, in.Now = p.Stages, t0.Add(10*time.Minute)
	in.Clusters["c1"] = Cluster{Complete: true}
	p, _ = Walk(in)
	if p.Stages[0].Phase != Soaking || p.Active["a"] || p.RecheckIn != time.Minute {
		t.Fatalf("soaking: %+v", p)
	}
	// falling back restarts the soak
	in.Previous, in.Now, in.Clusters["c1"] = p.Stages, t0.Add(10*time.Minute+30*time.Second), Cluster{}
	p, _ = Walk(in)
	if p.Stages[0].Phase != Progressing || !p.Stages[0].CompleteSince.IsZero() {
		t.Fatalf("fallen back: %+v", p.Stages[0])
	}
	in.Previous, in.Now, in.Clusters["c1"] = p.Stages, t0.Add(10*time.Minute+40*time.Second), Cluster{Complete: true}
	p, _ = Walk(in)
	in.Previous, in.Now = p.Stages, t0.Add(11*time.Minute)
	if p, _ = Walk(in); p.Stages[0].Phase != Soaking {
		t.Fatalf("the soak did not restart: %+v", p.Stages[0])
	}
	in.Previous, in.Now = p.Stages, t0.Add(11*time.Minute+40*time.Second)
	p, _ = Walk(in)
	if p.Stages[0].Phase != Succeeded || p.Stages[1].Phase != Progressing || !p.Active["a"] || !p.Stages[1].StartedAt.Equal(in.Now) {
		t.Fatalf("after the soak: %+v", p)
	}
	// the canary falling back later does not undo its stage
	in.Previous, in.Clusters["c1"] = p.Stages, Cluster{}
	if p, _ = Walk(in); p.Stages[0].Phase != Succeeded || !p.Active["a"] {
		t.Fatalf("a succeeded stage went back: %+v", p)
	}
}

func TestWalk_DeadlineFailuresHaltPastMaxFailures(t *testing.T) {
	one := intstr.FromInt32(1)
	spec := Spec{Type: ProgressivePerGroup, ProgressDeadline: 5 * time.Minute, MaxFailures: &one}
	in := Input{Spec: spec, Groups: []Group{{Name: "canary", Index: 0, Clusters: []string{"c1", "c2"}}, {Index: 1, Clusters: []string{"a", "b", "d"}}},
		Clusters: map[string]Cluster{"c1": {Complete: true}}, Now: t0}
	p, _ := Walk(in)
	in.Previous, in.Now = p.Stages, t0.Add(5*time.Minute)
	p, _ = Walk(in)
	// c2 failed: one failure is allowed, so the next stage starts
	if p.Halted || p.Failures != 1 || p.Stages[0].Phase != Succeeded || !slices.Equal(p.Stages[0].Failed, []string{"c2"}) || !p.Active["a"] {
		t.Fatalf("one failure: %+v", p)
	}
	in.Previous = p.Stages
	in.Clusters["a"] = Cluster{Complete: true}
	in.Now = in.Now.Add(5 * time.Minute)
	p, _ = Walk(in)
	if !p.Halted || p.Failures != 3 || p.Stages[1].Phase != Failed {
		t.Fatalf("past maxFailures: %+v", p)
	}
}

// The gate after a stage holds the next one from the stage's completion
// until it opens; the stage shows what the gate waits for; there is no gate
// after the last stage.
func TestWalk_GateHoldsTheNextStage(t *testing.T) {
	approved := false
	var reached []time.Time
	in := Input{Spec: Spec{Type: ProgressivePerGroup, MinSuccessTime: time.Minute}, Groups: groups(), Now: t0,
		Clusters: map[string]Cluster{"c1": {Complete: true}},
		Gate: func(name string, clusters []string, at time.Time) gate.Verdict {
			if name == "stage-canary-0" && !slices.Equal(clusters, []string{"c1"}) {
				t.Errorf("the canary's gate judged with clusters %v", clusters)
			}
			if name != "stage-canary-0" {
				t.Errorf("a gate after the last stage was asked: %s", name)
			}
			reached = append(reached, at)
			if approved {
				return gate.Verdict{Open: true}
			}
			return gate.Verdict{Reason: v1alpha1.ReasonAwaitingApproval, Message: "awaits approval"}
		}}
	p, _ := Walk(in)
	if p.Stages[0].Phase != Soaking || p.Gate != nil || !p.Stages[0].CompleteSince.Equal(t0) {
		t.Fatalf("soaking: %+v", p)
	}
	in.Previous, in.Now = p.Stages, t0.Add(2*time.Minute)
	p, _ = Walk(in)
	if p.Stages[0].Phase != AwaitingApproval || p.Stages[1].Phase != Pending || p.Active["a"] ||
		p.Gate == nil || p.Gate.Name != "stage-canary-0" || !p.Gate.ReachedAt.Equal(in.Now) {
		t.Fatalf("at the gate: %+v %+v", p, p.Gate)
	}
	// later rounds keep the time the gate was reached, even if the canary falls back
	in.Previous, in.Now, in.Clusters["c1"] = p.Stages, t0.Add(5*time.Minute), Cluster{}
	if p, _ = Walk(in); p.Stages[0].Phase != AwaitingApproval || !reached[len(reached)-1].Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("the gate moved: %+v %v", p.Stages[0], reached)
	}
	approved = true
	in.Previous = p.Stages
	p, _ = Walk(in)
	if p.Stages[0].Phase != Succeeded || p.Stages[1].Phase != Progressing || !p.Active["a"] || p.Gate != nil {
		t.Fatalf("approved: %+v", p)
	}
	in.Previous = p.Stages
	for _, c := range []string{"a", "b", "d", "e"} {
		in.Clusters[c] = Cluster{Complete: true}
	}
	p, _ = Walk(in)
	in.Previous, in.Now = p.Stages, in.Now.Add(time.Minute)
	if p, _ = Walk(in); p.Stages[1].Phase != Succeeded {
		t.Fatalf("the last stage: %+v", p.Stages[1])
	}
}

// Properties over random groups, specs and progress: a stage starts only
// when every stage before it succeeded; its clusters are active exactly then;
// a halt means more failures than allowed, and nothing after the failing
// stage starts.
func TestWalk_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var gs []Group
		n := 0
		for i := range rapid.IntRange(1, 4).Draw(t, "groups") {
			g := Group{Name: rapid.SampledFrom([]string{"", "canary", "eu"}).Draw(t, "name"), Index: int32(i)}
			for range rapid.IntRange(0, 3).Draw(t, "clusters") {
				g.Clusters = append(g.Clusters, fmt.Sprintf("m%d", n))
				n++
			}
			if slices.ContainsFunc(gs, func(o Group) bool { return o.Name == g.Name && g.Name != "" }) {
				g.Name = ""
			}
			gs = append(gs, g)
		}
		mf := intstr.FromInt32(int32(rapid.IntRange(0, 2).Draw(t, "maxFailures")))
		mc := intstr.FromInt32(int32(rapid.IntRange(1, 3).Draw(t, "maxConcurrency")))
		spec := Spec{Type: rapid.SampledFrom([]Type{All, Progressive, ProgressivePerGroup}).Draw(t, "type"), MaxFailures: &mf, MaxConcurrency: &mc,
			MinSuccessTime:   time.Duration(rapid.IntRange(0, 3).Draw(t, "soak m")) * time.Minute,
			ProgressDeadline: time.Duration(rapid.IntRange(0, 10).Draw(t, "deadline m")) * time.Minute}
		in := Input{Spec: spec, Groups: gs, Clusters: map[string]Cluster{}, Now: t0}
		opened := map[string]bool{}
		if rapid.Bool().Draw(t, "gated") {
			in.Gate = func(name string, _ []string, _ time.Time) gate.Verdict {
				return gate.Verdict{Open: opened[name], Reason: v1alpha1.ReasonAwaitingApproval}
			}
		}
		failures := int32(0)
		for step := range 12 {
			in.Paused = rapid.IntRange(0, 3).Draw(t, "paused") == 0
			p, err := Walk(in)
			if err != nil {
				t.Fatal(err)
			}
			if in.Paused && p.Failures > failures {
				t.Fatalf("step %d: %d failures while paused, %d before", step, p.Failures, failures)
			}
			failures = p.Failures
			before := true
			failedAt := -1
			for i, s := range p.Stages {
				started := s.Phase != Pending
				if started && !before {
					t.Fatalf("step %d: stage %s started before the ones before it succeeded: %+v", step, s.Name, p.Stages)
				}
				for _, c := range s.Clusters {
					if p.Active[c] != started {
						t.Fatalf("step %d: cluster %s active %v in a stage %s", step, c, p.Active[c], s.Phase)
					}
				}
				if s.Phase == Failed && failedAt < 0 {
					failedAt = i
				}
				if in.Gate != nil && s.Phase == Succeeded && i < len(p.Stages)-1 && !opened[GateName(s.Name)] {
					t.Fatalf("step %d: stage %s succeeded behind its closed gate", step, s.Name)
				}
				before = s.Phase == Succeeded
			}
			if p.Halted != (p.Failures > p.MaxFailures) || p.Halted != (failedAt >= 0) {
				t.Fatalf("step %d: halted %v with %d failures of %d allowed, failed stage %d", step, p.Halted, p.Failures, p.MaxFailures, failedAt)
			}
			// the world moves: some active clusters complete, time passes,
			// a gate opens
			in.Previous = p.Stages
			if p.Gate != nil && rapid.Bool().Draw(t, "approve") {
				opened[p.Gate.Name] = true
			}
			in.Now = in.Now.Add(time.Duration(rapid.IntRange(0, 4).Draw(t, "minutes")) * time.Minute)
			for c := range p.Active {
				if rapid.Bool().Draw(t, "complete "+c) {
					in.Clusters[c] = Cluster{Complete: rapid.IntRange(0, 3).Draw(t, "state "+c) > 0}
				}
			}
		}
	})
}

// A pause stops a stage's progress deadline: no cluster fails while the
// rollout is paused, and the resume starts the clock again, as a
// Deployment's progress deadline does.
func TestWalk_APauseStopsTheDeadline(t *testing.T) {
	spec := Spec{Type: ProgressivePerGroup, ProgressDeadline: 5 * time.Minute}
	in := Input{Spec: spec, Groups: groups(), Clusters: map[string]Cluster{}, Now: t0}
	p, _ := Walk(in)
	// paused 4 minutes in, for an hour
	in.Previous, in.Now, in.Paused = p.Stages, t0.Add(4*time.Minute), true
	p, _ = Walk(in)
	in.Previous, in.Now = p.Stages, t0.Add(64*time.Minute)
	if p, _ = Walk(in); len(p.Stages[0].Failed) > 0 || p.Halted {
		t.Fatalf("a cluster failed while paused: %+v", p.Stages[0])
	}
	if !p.Stages[0].StartedAt.Equal(t0) {
		t.Fatalf("the pause moved the stage's start: %+v", p.Stages[0])
	}
	// resumed: the deadline counts from the resume
	in.Previous, in.Paused = p.Stages, false
	p, _ = Walk(in)
	in.Previous, in.Now = p.Stages, t0.Add(68*time.Minute)
	if p, _ = Walk(in); len(p.Stages[0].Failed) > 0 || p.RecheckIn != time.Minute {
		t.Fatalf("4 minutes after the resume: %+v, recheck in %s", p.Stages[0], p.RecheckIn)
	}
	in.Previous, in.Now = p.Stages, t0.Add(69*time.Minute)
	if p, _ = Walk(in); !slices.Equal(p.Stages[0].Failed, []string{"c1"}) || !p.Halted {
		t.Fatalf("5 minutes after the resume: %+v", p.Stages[0])
	}
}
