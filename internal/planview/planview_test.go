package planview

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/simulate"
)

// small is a PodCliqueSet of two replicas, each with a 2-pod "frontend" clique
// and a "decode" scaling group of 2 replicas (a leader and a worker each).
func small(image string) *v1alpha1.PodCliqueSet {
	pod := func(img string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: img}}}}
	}
	one := int32(1)
	pcs := &v1alpha1.PodCliqueSet{Spec: v1alpha1.PodCliqueSetSpec{Replicas: new(int32(2)),
		Template: v1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []v1alpha1.PodCliqueTemplateSpec{
				{Name: "frontend", Replicas: 2, Template: pod("frontend:v1")},
				{Name: "decode-leader", Replicas: 1, Template: pod(image)},
				{Name: "decode-worker", Replicas: 1, Template: pod(image)},
			},
			PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
				{Name: "decode", CliqueNames: []string{"decode-leader", "decode-worker"}, Replicas: 2, MinAvailable: &one},
			},
		}}}
	pcs.Name = "demo"
	pcs.Default()
	return pcs
}

func input(t *testing.T, from, to *v1alpha1.PodCliqueSet) Input {
	t.Helper()
	fromRev, err := revision.ForSpec(from.Name, &from.Spec)
	if err != nil {
		t.Fatal(err)
	}
	toRev, err := revision.ForSpec(to.Name, &to.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return Input{Name: to.Name, From: &from.Spec, FromRevision: fromRev, To: &to.Spec, ToRevision: toRev,
		Startup: 10 * time.Second, Seed: 1}
}

func smallPlan(t *testing.T, faults ...simulate.Fault) *Plan {
	t.Helper()
	in := input(t, small("engine:v1"), small("engine:v2"))
	in.Faults = faults
	return Simulate(in)
}

func text(t *testing.T, p *Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteText_FollowsTheRollout(t *testing.T) {
	p := smallPlan(t)
	if p.Result.Outcome.Kind != simulate.Complete {
		t.Fatalf("outcome %+v", p.Result.Outcome)
	}
	out := text(t, p)
	// With no jitter every pod is ready 10s after it was created: each replica
	// replaces its two decode group replicas one after the other.
	for _, want := range []string{
		"lockstep plan: PodCliqueSet demo",
		"  frontend  2 pods             1 / 0                 unchanged",
		"  decode    2 × 2-pod group    1 / 0                 changed: decode-leader, decode-worker",
		"  start  ↳ frontend 4/4 updated, 4/4 available · decode 0/4 updated, 4/4 available",
		"         ── replica 0",
		"  00:00  replica 0  decode-0  replace  old → new  2 pods",
		"         ↳ decode 1/4 updated, 3/4 available",
		"  00:10  replica 0  decode-1  replace  old → new  2 pods",
		"         ── replica 1",
		"  00:20  replica 1  decode-0  replace  old → new  2 pods",
		"  00:30  replica 1  decode-1  replace  old → new  2 pods",
		"  00:40  ↳ decode 4/4 updated, 4/4 available",
		"Result: Complete. Every unit runs " + p.ToRevision.Name + ".",
		"  duration         30s until the last action (at 00:30); the last unit became ready at 00:40",
		"  peak pods        12 at once (12 before the update, 12 after)",
		"  min available    frontend 4/4, decode 3/4",
		"  mixed revisions  replica 0: ",
	} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("text lacks %q\n%s", want, out)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n >= 100 {
			t.Errorf("line %d has %d characters: %q", i+1, n, line)
		}
	}
}

func TestWriteText_ExplainsAStallByTheFault(t *testing.T) {
	p := smallPlan(t, simulate.Fault{Role: "decode", After: 2})
	if p.Result.Outcome.Kind != simulate.Stuck || p.ExitCode() != 0 {
		t.Fatalf("outcome %+v, exit %d; want an explained stall", p.Result.Outcome, p.ExitCode())
	}
	out := text(t, p)
	for _, want := range []string{
		"faults           the 2nd unit created for decode never becomes ready",
		"  00:10  replica 0  decode-1  replace  old → new  2 pods, ✗ never ready (fault: decode #2)",
		"Result: Stuck.",
		"The stall is explained by the injected fault: decode-1 in replica 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q\n%s", want, out)
		}
	}
}

func TestWriteText_NamesRoleSteps(t *testing.T) {
	from, to := small("engine:v1"), small("engine:v2")
	to.Spec.UpdateStrategy.RoleUpgrade = &v1alpha1.RoleUpgrade{Steps: []v1alpha1.RoleUpgradeStep{
		{Role: "decode", UpdateTo: intstr.FromInt32(1)},
		{Role: "decode", UpdateTo: intstr.FromString("100%")},
	}}
	out := text(t, Simulate(input(t, from, to)))
	for _, want := range []string{
		"  steps            1. decode → 1   2. decode → 100% (2)",
		"── replica 0, step 1: decode → 1",
		"── replica 0, step 2: decode → 100% (2)",
		"── replica 1, step 1: decode → 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q\n%s", want, out)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		outcome simulate.Outcome
		want    int
	}{
		{simulate.Outcome{Kind: simulate.Complete}, 0},
		{simulate.Outcome{Kind: simulate.Stuck, FaultsFired: 1}, 0},
		{simulate.Outcome{Kind: simulate.Stuck}, 1},
		{simulate.Outcome{Kind: simulate.Violation, Reason: "too many units"}, 1},
		{simulate.Outcome{Kind: simulate.Violation, FaultsFired: 1}, 1},
	} {
		p := &Plan{Result: simulate.Result{Outcome: tc.outcome}}
		if got := p.ExitCode(); got != tc.want {
			t.Errorf("%+v: exit %d, want %d", tc.outcome, got, tc.want)
		}
	}
}

func TestClock(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		times []time.Duration
		at    time.Duration
		want  string
	}{
		{[]time.Duration{0, 31 * s}, 31*s + 400*time.Millisecond, "00:31"},
		{[]time.Duration{0, 95 * s}, 95 * s, "01:35"},
		// two instants inside one second need tenths
		{[]time.Duration{1200 * time.Millisecond, 1400 * time.Millisecond}, 1400 * time.Millisecond, "00:01.4"},
		{[]time.Duration{0, 2 * time.Hour}, time.Hour + 61*s, "1:01:01"},
	} {
		if got := newClock(tc.times).format(tc.at); got != tc.want {
			t.Errorf("times %v: format(%s) = %q, want %q", tc.times, tc.at, got, tc.want)
		}
	}
}

func TestJSON_RoundTripsWithEveryActionField(t *testing.T) {
	p := smallPlan(t, simulate.Fault{Role: "decode", After: 2})
	var b bytes.Buffer
	if err := WriteJSON(&b, p); err != nil {
		t.Fatal(err)
	}
	var doc Document
	dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if want := NewDocument(p); !reflect.DeepEqual(doc, want) {
		t.Fatalf("JSON does not round-trip:\n got %+v\nwant %+v", doc, want)
	}
	if doc.Spec.Name != "demo" || doc.Spec.StartupSeconds != 10 || doc.Spec.Strategy != "RollingUpdate" ||
		len(doc.Spec.Faults) != 1 || doc.Result.Kind != "Stuck" || !doc.Result.Explained || doc.Result.ExitCode != 0 {
		t.Fatalf("spec/result: %+v %+v", doc.Spec, doc.Result)
	}
	if len(doc.Actions) != len(p.Result.Timeline) {
		t.Fatalf("%d actions, want %d", len(doc.Actions), len(p.Result.Timeline))
	}

	var raw struct {
		Actions []map[string]any `json:"actions"`
		Summary map[string]any   `json:"summary"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	broken := 0
	for i, a := range raw.Actions {
		for _, key := range []string{"atSeconds", "level", "replica", "role", "index", "op", "surge"} {
			if _, ok := a[key]; !ok {
				t.Errorf("action %d lacks %q: %v", i, key, a)
			}
		}
		revKey := map[string]string{"create": "to", "delete": "from"}[a["op"].(string)]
		if rev, _ := a[revKey].(string); rev == "" {
			t.Errorf("action %d (%s) lacks %q: %v", i, a["op"], revKey, a)
		}
		if a["level"] == "podclique" && a["role"] != "frontend" {
			if a["group"] != "decode" || a["groupReplica"] == nil {
				t.Errorf("action %d is a pod of a group replica without group and groupReplica: %v", i, a)
			}
		}
		if a["neverReady"] == true {
			broken++
		}
	}
	if broken != 1 {
		t.Errorf("%d actions marked neverReady, want 1", broken)
	}
	// the second decode unit is replaced 10s in; times are seconds
	for _, a := range doc.Actions {
		if a.Op == "create" && a.Role == "decode" && a.Index == 1 && a.AtSeconds != 10 {
			t.Errorf("decode-1 created at %v s, want 10", a.AtSeconds)
		}
	}
	for _, key := range []string{"durationSeconds", "settledSeconds", "steps", "peakPods", "minAvailable", "mixedRevisionMoments"} {
		if _, ok := raw.Summary[key]; !ok {
			t.Errorf("summary lacks %q", key)
		}
	}
}

// svgSeries is what TestSVG reads of one <g class="series">.
type svgSeries struct {
	id, role string
	paths    map[string]string // class -> d
}

func parseSVG(t *testing.T, data []byte) (width, height float64, series []svgSeries) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var cur *svgSeries
	depth, seriesDepth := 0, -1
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not valid XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch {
			case el.Name.Local == "svg":
				width, _ = strconv.ParseFloat(attr["width"], 64)
				height, _ = strconv.ParseFloat(attr["height"], 64)
			case el.Name.Local == "g" && attr["class"] == "series":
				series = append(series, svgSeries{id: attr["id"], role: attr["data-role"], paths: map[string]string{}})
				cur, seriesDepth = &series[len(series)-1], depth
			case el.Name.Local == "path" && cur != nil:
				cur.paths[attr["class"]] = attr["d"]
			}
		case xml.EndElement:
			if depth == seriesDepth {
				cur, seriesDepth = nil, -1
			}
			depth--
		}
	}
	return width, height, series
}

func TestSVG_OneSeriesPerRoleWithSaneSteps(t *testing.T) {
	for name, p := range map[string]*Plan{
		"complete": smallPlan(t),
		"fault":    smallPlan(t, simulate.Fault{Role: "decode-worker", After: 1}),
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSVG(&b, p); err != nil {
				t.Fatal(err)
			}
			width, height, series := parseSVG(t, b.Bytes())
			if width <= 0 || height <= 0 {
				t.Fatalf("size %vx%v", width, height)
			}
			if len(series) != len(p.Roles) {
				t.Fatalf("%d series, want one per role (%d)", len(series), len(p.Roles))
			}
			for i, s := range series {
				if s.role != p.Roles[i].Name || s.id != "series-"+p.Roles[i].Name {
					t.Errorf("series %d is %q (id %q), want role %q", i, s.role, s.id, p.Roles[i].Name)
				}
				if len(s.paths) != 2 || s.paths["available"] == "" || s.paths["updated"] == "" {
					t.Fatalf("series %s paths %v, want available and updated", s.role, s.paths)
				}
				for class, d := range s.paths {
					checkStepPath(t, s.role+"/"+class, d, width, height)
				}
			}
		})
	}
}

// checkStepPath checks that d is "M x y" followed by horizontal and vertical
// moves only, x never goes back, and every point lies inside the drawing.
func checkStepPath(t *testing.T, name, d string, width, height float64) {
	t.Helper()
	fields := strings.Fields(d)
	if len(fields) < 3 || !strings.HasPrefix(fields[0], "M") {
		t.Fatalf("%s: path %q does not start with a move", name, d)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %q is not a number in %q", name, s, d)
		}
		return v
	}
	x, y := num(fields[0][1:]), num(fields[1])
	inside := func() {
		if x < 0 || x > width || y < 0 || y > height {
			t.Fatalf("%s: point (%v, %v) outside %vx%v", name, x, y, width, height)
		}
	}
	inside()
	for _, f := range fields[2:] {
		switch f[0] {
		case 'H':
			nx := num(f[1:])
			if nx < x {
				t.Fatalf("%s: x goes back from %v to %v", name, x, nx)
			}
			x = nx
		case 'V':
			y = num(f[1:])
		default:
			t.Fatalf("%s: %q is not a step (H or V) in %q", name, f, d)
		}
		inside()
	}
}

func TestCountTicks(t *testing.T) {
	for _, tc := range []struct {
		yMax, desired int32
		want          []int32
	}{
		{1, 1, []int32{0, 1}},
		{4, 4, []int32{0, 1, 2, 3, 4}},
		{6, 4, []int32{0, 2, 4, 6}},
		{12, 9, []int32{0, 5, 9, 12}},
		{1000, 1000, []int32{0, 500, 1000}},
	} {
		if got := countTicks(tc.yMax, tc.desired); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("countTicks(%d, %d) = %v, want %v", tc.yMax, tc.desired, got, tc.want)
		}
	}
}

// A rollout held at a partition is complete as far as it may go: the result
// says which replicas moved and which kept the old revision, not that every
// unit runs the new one.
func TestText_ARolloutHeldAtAPartitionSaysSo(t *testing.T) {
	to := small("engine:v2")
	to.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: new(int32(1))}
	p := Simulate(input(t, small("engine:v1"), to))
	out := text(t, p)
	want := fmt.Sprintf("Result: Complete. Held at partition 1: replicas 1 and up run %s, replicas below 1 keep %s;",
		p.ToRevision.Name, p.FromRevision.Name)
	if !strings.Contains(out, want) {
		t.Fatalf("text lacks %q\n%s", want, out)
	}
	if strings.Contains(out, "Every unit runs") {
		t.Fatalf("a partitioned rollout reported as every unit updated:\n%s", out)
	}
}
