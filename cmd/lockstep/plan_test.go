package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/planview"
)

const disaggregated = "../../examples/disaggregated.yaml"

// writeVariant writes examples/disaggregated.yaml with every old replaced by
// new, and returns its path.
func writeVariant(t *testing.T, name string, replacements ...string) string {
	t.Helper()
	data, err := os.ReadFile(disaggregated)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(replacements); i += 2 {
		if !strings.Contains(text, replacements[i]) {
			t.Fatalf("the example has no %q", replacements[i])
		}
		text = strings.ReplaceAll(text, replacements[i], replacements[i+1])
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newImage is the disaggregated example with a new engine image: prefill and
// decode change, the frontend does not.
func newImage(t *testing.T) string {
	return writeVariant(t, "new.yaml", "lockstep-examples/llm-engine:v1", "lockstep-examples/llm-engine:v2")
}

func plan(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runPlan(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlan_DisaggregatedImageChange(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plan.svg")
	code, out, errOut := plan(t, "", "-f", disaggregated, "-f", newImage(t), "--startup", "30s", "--jitter", "20%",
		"--seed", "1", "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"lockstep plan: PodCliqueSet disagg",
		"changed: prefill-leader, prefill-worker",
		"changed: decode-leader, decode-worker",
		"── replica 0",
		"── replica 1",
		"replica 0  prefill-0",
		"replica 0  decode-0",
		"replica 1  prefill-1",
		"replica 1  decode-1",
		"↳ frontend 6/6 updated, 6/6 available",
		"Result: Complete.",
		"min available    frontend 6/6, prefill 3/4, decode 3/4",
		"SVG chart written to " + svg,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) >= 100 {
			t.Errorf("line longer than 99 characters: %q", line)
		}
	}
	checkSVG(t, svg, []string{"frontend", "prefill", "decode"})
}

// checkSVG parses the file as XML and counts one series per role.
func checkSVG(t *testing.T, path string, roles []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no SVG: %v", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var got []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not valid XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = el.Name.Local
		}
		for _, a := range el.Attr {
			if el.Name.Local == "g" && a.Name.Local == "class" && a.Value == "series" {
				for _, b := range el.Attr {
					if b.Name.Local == "data-role" {
						got = append(got, b.Value)
					}
				}
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	if strings.Join(got, ",") != strings.Join(roles, ",") {
		t.Fatalf("series %v, want one per role %v", got, roles)
	}
}

func TestPlan_JSON(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plan.svg")
	code, out, errOut := plan(t, "", "-f", disaggregated, "-f", newImage(t), "-o", "json", "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var doc planview.Document
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatal("stdout holds more than one JSON document")
	}
	if doc.Spec.Name != "disagg" || doc.Spec.FromRevision == doc.Spec.ToRevision || doc.Result.Kind != "Complete" {
		t.Fatalf("spec %+v result %+v", doc.Spec, doc.Result)
	}
	replicas := map[int32]bool{}
	roles := map[string]bool{}
	for _, a := range doc.Actions {
		replicas[a.Replica] = true
		roles[a.Role] = true
	}
	if !replicas[0] || !replicas[1] || !roles["prefill"] || !roles["decode"] || roles["frontend"] {
		t.Fatalf("actions touch replicas %v and roles %v", replicas, roles)
	}
	checkSVG(t, svg, []string{"frontend", "prefill", "decode"})
}

func TestPlan_AFaultExplainsTheStall(t *testing.T) {
	code, out, errOut := plan(t, "", "-f", disaggregated, "-f", newImage(t), "--fail", "role=decode,after=2")
	if code != 0 {
		t.Fatalf("exit %d, want 0 for a stall the fault explains\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"Result: Stuck.", "explained by the injected fault", "✗ never ready (fault: decode #2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
}

func TestPlan_GatesHoldUntilTheScriptedApprovals(t *testing.T) {
	gate := "  replicas: 2\n  updateStrategy: {gate: {soakSeconds: 60, approval: true}}\n  template:"
	from := writeVariant(t, "from.yaml", "  replicas: 2\n  template:", gate)
	to := writeVariant(t, "to.yaml", "  replicas: 2\n  template:", gate, "lockstep-examples/llm-engine:v1", "lockstep-examples/llm-engine:v2")
	code, out, errOut := plan(t, "", "-f", from, "-f", to)
	if code != 0 || !strings.Contains(out, "Result: Stuck. AwaitingApproval") || !strings.Contains(out, "no approval given (--approve)") {
		t.Fatalf("without an approval: exit %d, want 0 held at the gate\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = plan(t, "", "-f", from, "-f", to, "--approve", "replicas-1@20m")
	if code != 0 || !strings.Contains(out, "Result: Complete.") || !strings.Contains(out, "approved: replicas-1 at 20m0s") {
		t.Fatalf("approved at 20m: exit %d\n%s\n%s", code, out, errOut)
	}
	// replica 1 starts at the approval, not before
	if !strings.Contains(out, "── replica 1") || !strings.Contains(out, "\n  20:00  replica 1") {
		t.Errorf("replica 1 does not start at 20:00\n%s", out)
	}
	for _, bad := range []string{"replicas-1", "@10m", "replicas-1@soon", "replicas-1@-1m"} {
		if code, _, errOut := plan(t, "", "-f", from, "-f", to, "--approve", bad); code != 2 || !strings.Contains(errOut, "want GATE@TIME") {
			t.Errorf("--approve %q: exit %d, %s", bad, code, errOut)
		}
	}
}

// --analysis scripts what a gate's analysis measures: a pass opens it, a
// failure holds the rollout (onFailure Pause, exit 1) or rolls it back
// (Rollback: complete on the revision it came from).
func TestPlan_GatesTakeTheScriptedAnalyses(t *testing.T) {
	analysis := func(onFailure string) string {
		return "  replicas: 2\n  updateStrategy: {gate: {onFailure: " + onFailure +
			", analysis: {prometheus: {address: 'http://prometheus:9090', query: up, successCondition: 'result > 0'}}}}\n  template:"
	}
	for _, tc := range []struct {
		onFailure, result string
		code              int
		want              string
	}{
		{"Pause", "replicas-1=pass@5m", 0, "Result: Complete. Every unit runs"},
		{"Pause", "replicas-1=fail@5m", 1, "Result: Stuck. AnalysisFailed"},
		{"Rollback", "replicas-1=fail@5m", 0, "Result: Complete. Rolled back: a gate's analysis failed"},
	} {
		from := writeVariant(t, "from.yaml", "  replicas: 2\n  template:", analysis(tc.onFailure))
		to := writeVariant(t, "to.yaml", "  replicas: 2\n  template:", analysis(tc.onFailure), "lockstep-examples/llm-engine:v1", "lockstep-examples/llm-engine:v2")
		code, out, errOut := plan(t, "", "-f", from, "-f", to, "--analysis", tc.result)
		if code != tc.code || !strings.Contains(out, tc.want) || !strings.Contains(out, "analyses: "+strings.Replace(strings.Replace(tc.result, "=pass@", " Passed at ", 1), "=fail@", " Failed at ", 1)+"0s") {
			t.Errorf("%s, %s: exit %d, want %d and %q\n%s\n%s", tc.onFailure, tc.result, code, tc.code, tc.want, out, errOut)
		}
	}
	for _, bad := range []string{"replicas-1", "replicas-1=maybe@1m", "replicas-1=pass", "=pass@1m"} {
		if code, _, errOut := plan(t, "", "-f", disaggregated, "-f", newImage(t), "--analysis", bad); code != 2 || !strings.Contains(errOut, "want GATE=pass@TIME") {
			t.Errorf("--analysis %q: exit %d, %s", bad, code, errOut)
		}
	}
}

func TestPlan_AnUnexplainedStallFails(t *testing.T) {
	// OnDelete never deletes for an update, so the rollout waits for someone.
	from := writeVariant(t, "from.yaml", "  replicas: 2\n  template:", "  replicas: 2\n  updateStrategy: {type: OnDelete}\n  template:")
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "to.yaml")
	if err := os.WriteFile(to, bytes.ReplaceAll(data, []byte("llm-engine:v1"), []byte("llm-engine:v2")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := plan(t, "", "-f", from, "-f", to)
	if code != 1 || !strings.Contains(out, "Result: Stuck.") || !strings.Contains(out, "OnDelete never deletes") {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
}

func TestPlan_CompositionChangeIsRefused(t *testing.T) {
	renamed := writeVariant(t, "renamed.yaml",
		"- name: decode-worker", "- name: decode-helper",
		"[decode-leader, decode-worker]", "[decode-leader, decode-helper]")
	code, out, errOut := plan(t, "", "-f", disaggregated, "-f", renamed)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
	for _, want := range []string{
		`renamed.yaml: PodCliqueSet "disagg" is invalid (2 errors):`,
		"spec.template.cliques: Forbidden: the composition of a PodCliqueSet",
		"(added: [decode-helper], removed: [decode-worker])",
		"spec.template.podCliqueScalingGroups: Forbidden:",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q\n%s", want, errOut)
		}
	}
}

func TestPlan_RefusesInvalidInput(t *testing.T) {
	img := newImage(t)
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"another PodCliqueSet": {[]string{"-f", disaggregated, "-f", writeVariant(t, "other.yaml", "name: disagg\n", "name: other\n")},
			[]string{`metadata.name: Invalid value: "other": must be the PodCliqueSet of the current manifest ("disagg")`}},
		"invalid new spec": {[]string{"-f", disaggregated, "-f", writeVariant(t, "bad.yaml", "  replicas: 2\n  template:",
			"  replicas: 2\n  updateStrategy: {rollingUpdate: {maxSurge: 1}}\n  template:")},
			[]string{"spec.updateStrategy.rollingUpdate"}},
		"unknown field": {[]string{"-f", disaggregated, "-f", writeVariant(t, "unknown.yaml", "spec:\n  replicas: 2\n", "spec:\n  replicas: 2\n  replicaz: 3\n")},
			[]string{`unknown field "spec.replicaz"`}},
		"one manifest":  {[]string{"-f", disaggregated}, []string{"give exactly two manifests"}},
		"bad jitter":    {[]string{"-f", disaggregated, "-f", img, "--jitter", "120%"}, []string{`--jitter "120%"`}},
		"bad fault":     {[]string{"-f", disaggregated, "-f", img, "--fail", "role=decode"}, []string{"after is missing"}},
		"unknown role":  {[]string{"-f", disaggregated, "-f", img, "--fail", "role=nope,after=1"}, []string{`no clique or scaling group "nope"`}},
		"bad output":    {[]string{"-f", disaggregated, "-f", img, "-o", "yaml"}, []string{"must be text or json"}},
		"unknown flag":  {[]string{"-f", disaggregated, "-f", img, "--bogus"}, []string{"unknown flag: --bogus"}},
		"an argument":   {[]string{"-f", disaggregated, img}, []string{"unexpected arguments"}},
		"missing file":  {[]string{"-f", disaggregated, "-f", "nope.yaml"}, []string{"nope.yaml"}},
		"not a PCS":     {[]string{"-f", disaggregated, "-f", writeVariant(t, "kind.yaml", "kind: PodCliqueSet", "kind: Deployment")}, []string{"kind Deployment"}},
		"stdin twice":   {[]string{"-f", "-", "-f", "-"}, []string{"only one of the manifests"}},
		"two documents": {[]string{"-f", disaggregated, "-f", writeVariant(t, "two.yaml", "apiVersion:", "---\nfoo: bar\n---\napiVersion:")}, []string{"found 2 YAML documents"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := plan(t, "", tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
			}
			for _, want := range tc.want {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q\n%s", want, errOut)
				}
			}
		})
	}
}

func TestPlan_PrintsEveryValidationError(t *testing.T) {
	bad := writeVariant(t, "bad.yaml",
		"  replicas: 2\n  template:", "  replicas: 2\n  minReadySeconds: -1\n  template:",
		"      replicas: 3\n", "      replicas: 3\n      minAvailable: 5\n")
	code, _, errOut := plan(t, "", "-f", disaggregated, "-f", bad)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, errOut)
	}
	for _, want := range []string{"spec.minReadySeconds: Invalid value: -1", "spec.template.cliques[0].minAvailable"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q\n%s", want, errOut)
		}
	}
}

func TestPlan_NothingToRoll(t *testing.T) {
	scaled := writeVariant(t, "scaled.yaml", "spec:\n  replicas: 2", "spec:\n  replicas: 3")
	code, out, _ := plan(t, "", "-f", disaggregated, "-f", scaled)
	if code != 0 || !strings.Contains(out, "no new revision: nothing to roll") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	code, out, _ = plan(t, "", "-f", disaggregated, "-f", disaggregated, "-o", "json")
	var doc planview.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || doc.Result.Kind != "NoChange" {
		t.Fatalf("exit %d, err %v, result %+v", code, err, doc.Result)
	}
}

func TestPlan_ReadsOneManifestFromStdin(t *testing.T) {
	data, err := os.ReadFile(disaggregated)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := plan(t, string(data), "-f", "-", "-f", newImage(t))
	if code != 0 || !strings.Contains(out, "Result: Complete.") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestParseJitter(t *testing.T) {
	for in, want := range map[string]float64{"0": 0, "20%": 0.2, "0.2": 0.2, "100%": 1, "1": 1, "5%": 0.05} {
		if got, err := parseJitter(in); err != nil || got != want {
			t.Errorf("parseJitter(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-0.1", "1.5", "101%", "abc", "%"} {
		if _, err := parseJitter(in); err == nil {
			t.Errorf("parseJitter(%q) accepted", in)
		}
	}
}

func TestParseFault(t *testing.T) {
	f, err := parseFault("role=decode,after=2")
	if err != nil || f.Role != "decode" || f.After != 2 {
		t.Fatalf("got %+v, %v", f, err)
	}
	f, err = parseFault("after=1, role=frontend")
	if err != nil || f.Role != "frontend" || f.After != 1 {
		t.Fatalf("got %+v, %v", f, err)
	}
	for _, in := range []string{"", "decode", "role=decode", "after=2", "role=decode,after=0", "role=decode,after=x", "role=decode,after=1,when=now"} {
		if _, err := parseFault(in); err == nil {
			t.Errorf("parseFault(%q) accepted", in)
		}
	}
}

// fleetExample is the FederatedWorkload example: a Deployment of 10 split 2:3
// over region=eu and region=us clusters, maxUnavailable 2, maxSurge 1.
var fleetExample = filepath.Join("..", "..", "examples", "fleet", "web.yaml")

func fleetVariant(t *testing.T, from, to string) string {
	t.Helper()
	data, err := os.ReadFile(fleetExample)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web-new.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A FederatedWorkload plan divides the replicas as the hub does (4 and 6),
// plays the rollout wave by wave within the fleet's floor (8 available) and
// ceiling (11 units), ends complete, and draws one panel per cluster.
func TestPlan_FederatedWorkloadRollsUnderOneBudget(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "fleet.svg")
	code, out, errOut := plan(t, "", "-f", fleetExample, "-f", fleetVariant(t, "web:v1", "web:v2"),
		"--cluster", "us-1:region=us", "--cluster", "eu-1:region=eu", "--startup", "20s", "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "shares: eu-1 4 us-1 6") || !strings.Contains(out, "Result: Complete after") {
		t.Fatalf("output lacks the shares or the result:\n%s", out)
	}
	if want := `No MemberClusterSet given: assuming set "default", selecting every --cluster, bound to namespace default.`; !strings.Contains(out, want) {
		t.Errorf("output lacks the line %q:\n%s", want, out)
	}
	waves := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] == "WAVE" || !strings.Contains(f[2], "/") {
			continue
		}
		var avail, floor, units, ceiling int
		if _, err := fmt.Sscanf(f[2]+" "+f[3], "%d/%d %d/%d", &avail, &floor, &units, &ceiling); err != nil {
			continue
		}
		waves++
		if floor != 8 || ceiling != 11 || avail < floor || units > ceiling {
			t.Errorf("wave line %q: outside the fleet's floor 8 and ceiling 11", line)
		}
	}
	if waves < 4 {
		t.Fatalf("%d wave lines, want at least 4 (10 units, 3 at a time):\n%s", waves, out)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`id="series-fleet"`, `id="series-eu-1"`, `id="series-us-1"`} {
		if !strings.Contains(string(data), id) {
			t.Errorf("the SVG has no %s", id)
		}
	}
}

// Bad fleet input is refused with the field or flag named, and nothing is
// simulated.
func TestPlan_FederatedWorkloadBadInput(t *testing.T) {
	next := fleetVariant(t, "web:v1", "web:v2")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no clusters", []string{"-f", fleetExample, "-f", next}, "--cluster NAME"},
		{"a label without a value", []string{"-f", fleetExample, "-f", next, "--cluster", "eu-1:region"}, `label "region" is not LABEL=VALUE`},
		{"both limits zero", []string{"-f", fleetExample, "-f", fleetVariant(t, "maxSurge: 1", "maxSurge: 0\n    maxUnavailable: 0"),
			"--cluster", "eu-1"}, "spec.rolloutStrategy"},
		{"json output", []string{"-f", fleetExample, "-f", next, "--cluster", "eu-1", "-o", "json"}, `--output "json"`},
		{"nothing to roll", []string{"-f", fleetExample, "-f", fleetExample, "--cluster", "eu-1"}, "nothing to roll"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := plan(t, "", tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) || strings.Contains(out, "WAVE") {
				t.Fatalf("exit %d, stderr %q; want 2 and %q, nothing simulated\n%s", code, errOut, tt.want, out)
			}
		})
	}
}

// fleetWithSets is the example followed by fleet objects: the plan chooses the
// clusters as the hub would.
func fleetWithSets(t *testing.T, image, objects string) string {
	t.Helper()
	data, err := os.ReadFile(fleetExample)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web-"+strings.ReplaceAll(image, ":", "-")+".yaml")
	content := strings.Replace(string(data), "web:v1", image, 1) + "---\n" + objects
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const euSet = `apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSet
metadata: {name: europe}
spec:
  clusterSelector: {matchLabels: {region: eu}}
`

// With a set of the eu clusters bound to the workload's namespace, only they
// get replicas; the copy of the objects in the second file counts once.
func TestPlan_FederatedWorkloadOnTheClustersOfItsBoundSets(t *testing.T) {
	objects := euSet + `---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSetBinding
metadata: {name: europe, namespace: default}
spec: {clusterSet: europe}
`
	code, out, errOut := plan(t, "", "-f", fleetWithSets(t, "web:v1", objects), "-f", fleetWithSets(t, "web:v2", objects),
		"--cluster", "eu-1:region=eu", "--cluster", "eu-2:region=eu", "--cluster", "us-1:region=us", "--startup", "20s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"shares: eu-1 5 eu-2 5", "selects 2 of the 3 --cluster clusters: eu-1, eu-2", "Result: Complete after"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "us-1") || strings.Contains(out, "assuming") {
		t.Errorf("us-1 is outside the bound set, and a set was given:\n%s", out)
	}
}

// Sets given but none bound where the workload lives, or a Placement naming a
// set not bound there: nothing is simulated, and the reason is the hub's.
func TestPlan_FederatedWorkloadWithoutABoundSetSelectsNothing(t *testing.T) {
	tests := []struct {
		name, objects, want string
	}{
		{"bound elsewhere", euSet + `---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSetBinding
metadata: {name: europe, namespace: team-b}
spec: {clusterSet: europe}
`, "no MemberClusterSet is bound to namespace default"},
		{"placement naming an unbound set", euSet + `---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSetBinding
metadata: {name: europe}
spec: {clusterSet: europe}
---
apiVersion: fleet.lockstep.dev/v1alpha1
kind: Placement
metadata: {name: gpu-clusters, namespace: default}
spec: {clusterSets: [america]}
`, "spec.clusterSets names MemberClusterSet america not bound to namespace default"},
		{"binding not named after its set", `apiVersion: fleet.lockstep.dev/v1alpha1
kind: MemberClusterSetBinding
metadata: {name: europe}
spec: {clusterSet: america}
`, "spec.clusterSet \"america\" must equal metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := plan(t, "", "-f", fleetExample, "-f", fleetWithSets(t, "web:v2", tt.objects),
				"--cluster", "eu-1:region=eu", "--cluster", "us-1:region=us")
			if code != 2 || !strings.Contains(errOut, tt.want) || strings.Contains(out, "WAVE") {
				t.Fatalf("exit %d, stderr %q; want 2 and %q, nothing simulated\n%s", code, errOut, tt.want, out)
			}
		})
	}
}
