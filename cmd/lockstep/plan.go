package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/gate"
	"github.com/lockstep-dev/lockstep/internal/planview"
	"github.com/lockstep-dev/lockstep/internal/revision"
	"github.com/lockstep-dev/lockstep/internal/simulate"
	"github.com/lockstep-dev/lockstep/internal/validation"
)

// Exit codes of `lockstep plan`.
const (
	exitOK       = 0 // Complete, nothing to roll, or a stall an injected fault explains
	exitFailed   = 1 // Violation, or Stuck with nothing to explain it
	exitBadInput = 2 // invalid flags or manifests
)

// planOptions are the flags of `lockstep plan`.
type planOptions struct {
	files   []string
	startup time.Duration
	jitter  string
	seed    uint64
	fails   []string
	approve []string
	// analyses are scripted results of gates' analyses, GATE=pass|fail@TIME
	analyses []string
	grace    time.Duration
	output   string
	svg      string
	// clusters are the members of a FederatedWorkload plan; late and lose
	// the members whose status reaches the hub late and those it loses.
	clusters, late, lose []string
}

const planLong = `Simulate the rollout from one PodCliqueSet (or FederatedWorkload) manifest to the
next, offline.

plan runs the same planner as the operator against a model cluster in simulated
time: pods become ready --startup after they are created (varied by --jitter,
drawn from --seed), deleted pods go away after --grace, and --fail makes chosen
new units never become ready; --approve GATE@TIME approves a gate (a rollout
waiting at a gate nobody approves ends Stuck, held by design). It prints the
timeline of every create and delete with the progress of each role, the result
and summary figures.

Both manifests are defaulted and validated as the cluster would (the second as an
update of the first); invalid input is refused with every error.

Given two FederatedWorkloads and the member clusters (--cluster), plan chooses
the clusters as the hub would (the workload's Placement, MemberClusterSets and
MemberClusterSetBindings may sit in the same files; without sets, one holding
every --cluster is assumed bound to the workload's namespace), divides the
replicas and plays the fleet rollout wave by wave: the
hub's planner hands out grants under the one global budget, each member's own
controller acts on its grant, and new units become available --startup later.
It prints every wave (the fleet against its floor and ceiling, each cluster's
updated units and grant) and the result. The members start at rest on the
current manifest's shares; a change of replicas or division.weights moves
units between them within the same budget. --late CLUSTER=N makes the hub's
round read that cluster's status as it was N rounds before; --lose
CLUSTER@WAVE makes it unreachable from that wave on: its MemberCluster turns
not Ready as the hub's probe would leave it, the hub reads nothing from it
and writes nothing to it, charges it until memberLostTimeoutSeconds pass,
then writes it off and moves its share to the others.

Exit status: 0 when the rollout completes (or there is nothing to roll, or it
stalls only because of an injected fault or at a gate awaiting approval), 1 on an invariant violation or an
unexplained stall, 2 on invalid flags or manifests.`

const planExample = `  lockstep plan -f current.yaml -f new.yaml
  lockstep plan -f current.yaml -f new.yaml --startup 45s --jitter 20% --seed 7
  lockstep plan -f current.yaml -f new.yaml --fail role=decode,after=2
  lockstep plan -f current.yaml -f gated.yaml --approve replicas-1@10m
  kubectl get pcs disagg -o yaml | lockstep plan -f - -f new.yaml --output json --svg plan.svg
  lockstep plan -f web.yaml -f web-v2.yaml --cluster eu-1:region=eu --cluster us-1:region=us --startup 20s
  lockstep plan -f web.yaml -f web-weights.yaml --cluster eu-1:region=eu --cluster us-1:region=us --lose us-1@2 --late eu-1=1`

func newPlanCommand() *cobra.Command {
	return buildPlanCommand(os.Stdin, os.Exit)
}

// runPlan runs `lockstep plan` with args and returns its exit status; it is the
// command without the process around it.
func runPlan(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	code := exitOK
	exited := false
	cmd := buildPlanCommand(stdin, func(c int) {
		if !exited {
			code, exited = c, true
		}
	})
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.Execute(); err != nil && !exited {
		return exitBadInput
	}
	return code
}

// buildPlanCommand builds the command; exit ends the process with a status
// (os.Exit, or a recorder in tests). It is called only for non-zero statuses.
func buildPlanCommand(stdin io.Reader, exit func(int)) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:     "plan -f CURRENT.yaml -f NEW.yaml [flags]",
		Short:   "Simulate a PodCliqueSet or FederatedWorkload rollout offline and show its timeline",
		Long:    planLong,
		Example: planExample,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			err := fmt.Errorf("unexpected arguments %q: give the manifests with -f", args)
			fmt.Fprintf(c.ErrOrStderr(), "lockstep plan: %v\n", err)
			exit(exitBadInput)
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := o.run(stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != exitOK {
				exit(code)
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintf(c.ErrOrStderr(), "lockstep plan: %v\nRun 'lockstep plan --help' for usage.\n", err)
		exit(exitBadInput)
		return err
	})
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil,
		"A PodCliqueSet (or FederatedWorkload) manifest; give it twice: the current one, then the new one ('-' reads standard input).")
	f.DurationVar(&o.startup, "startup", 30*time.Second, "How long a created pod takes to become ready.")
	f.StringVar(&o.jitter, "jitter", "0", "Vary each start-up uniformly by up to ± this fraction of --startup: 20% or 0.2.")
	f.Uint64Var(&o.seed, "seed", 1, "Seed of the jitter; the same seed gives the same timeline.")
	f.StringArrayVar(&o.fails, "fail", nil,
		"Inject a fault: role=ROLE,after=N makes the N-th unit created for ROLE (a clique or scaling group) never become ready; for FederatedWorkloads, CLUSTER@WAVE: the cluster's new units never start from that wave on. Repeatable.")
	f.StringArrayVar(&o.approve, "approve", nil,
		"Approve a gate at a simulated time, GATE@TIME (replicas-1@10m, replica-0-step-1@90s, a fleet's stage-canary-0@5m), as `kubectl lockstep approve` would. Repeatable.")
	f.StringArrayVar(&o.analyses, "analysis", nil,
		"The result of a gate's analysis, GATE=pass@TIME or GATE=fail@TIME (replicas-1=fail@5m, stage-canary-0=pass@10m): what it measures once it measures at or after that simulated time. A failed one applies the gate's onFailure. Repeatable.")
	f.DurationVar(&o.grace, "grace", 0, "How long a deleted pod takes to go away.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text or json.")
	f.StringVar(&o.svg, "svg", "", "Also write an SVG chart of available and updated units per role (per cluster for a FederatedWorkload) over time to this file.")
	f.StringArrayVar(&o.clusters, "cluster", nil,
		"FederatedWorkloads: a member cluster the workload is placed on, NAME[:LABEL=VALUE,...] (the labels its division.weights select on). Repeatable.")
	f.StringArrayVar(&o.late, "late", nil,
		"FederatedWorkloads: CLUSTER=N, the cluster's status reaches the hub N rounds (waves) late. Repeatable.")
	f.StringArrayVar(&o.lose, "lose", nil,
		"FederatedWorkloads: CLUSTER@WAVE, the hub cannot reach the cluster from that wave (from 1) on: it reads nothing from it, writes nothing to it, and takes it as lost after memberLostTimeoutSeconds. Repeatable.")
	return cmd
}

// run does the work and returns the exit status.
func (o *planOptions) run(stdin io.Reader, stdout, stderr io.Writer) int {
	stdin, fleet, err := o.isFleet(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return exitBadInput
	}
	if fleet {
		return o.runFleet(stdin, stdout, stderr)
	}
	if len(o.late) > 0 || len(o.lose) > 0 {
		fmt.Fprintln(stderr, "lockstep plan: --late and --lose apply to FederatedWorkloads (the members of a fleet); a PodCliqueSet plan injects faults with --fail")
		return exitBadInput
	}
	in, errs := o.input(stdin, stderr)
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(stderr, "%v\n", err)
		}
		return exitBadInput
	}
	if in.FromRevision.Name == in.ToRevision.Name {
		return o.nothingToRoll(in, stdout, stderr)
	}
	p := planview.Simulate(in)

	if o.output == "json" {
		err = planview.WriteJSON(stdout, p)
	} else {
		err = planview.WriteText(stdout, p)
	}
	if err == nil && o.svg != "" {
		err = writeFile(o.svg, func(w io.Writer) error { return planview.WriteSVG(w, p) })
		if err == nil && o.output != "json" {
			fmt.Fprintf(stdout, "\nSVG chart written to %s\n", o.svg)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockstep plan: %v\n", err)
		return exitFailed
	}
	return p.ExitCode()
}

// nothingToRoll answers when both manifests have the same revision.
func (o *planOptions) nothingToRoll(in planview.Input, stdout, stderr io.Writer) int {
	const msg = "no new revision: nothing to roll"
	if o.output == "json" {
		doc := planview.NewDocument(planview.New(in, simulate.Result{}))
		doc.Result = planview.ResultDoc{Kind: "NoChange", Reason: msg}
		if err := planview.WriteDocument(stdout, doc); err != nil {
			fmt.Fprintf(stderr, "lockstep plan: %v\n", err)
			return exitFailed
		}
	} else {
		fmt.Fprintf(stdout, "%s: %s (%s)\n", in.Name, msg, in.ToRevision.Name)
		if in.From.DesiredReplicas() != in.To.DesiredReplicas() {
			fmt.Fprintf(stdout, "replicas %d → %d: a replicas change scales in place and starts no rollout\n",
				in.From.DesiredReplicas(), in.To.DesiredReplicas())
		}
	}
	if o.svg != "" {
		fmt.Fprintf(stderr, "lockstep plan: nothing to roll, %s not written\n", o.svg)
	}
	return exitOK
}

// input checks the flags, reads both manifests and validates them.
func (o *planOptions) input(stdin io.Reader, stderr io.Writer) (planview.Input, []error) {
	var errs []error
	in := planview.Input{Startup: o.startup, Seed: o.seed, Grace: o.grace}
	if len(o.files) != 2 {
		errs = append(errs, fmt.Errorf("lockstep plan: give exactly two manifests, -f CURRENT -f NEW (got %d)", len(o.files)))
	}
	if len(o.files) == 2 && o.files[0] == "-" && o.files[1] == "-" {
		errs = append(errs, errors.New("lockstep plan: only one of the manifests can be read from standard input"))
	}
	if o.startup < 0 {
		errs = append(errs, fmt.Errorf("lockstep plan: --startup %s: must not be negative", o.startup))
	}
	if o.grace < 0 {
		errs = append(errs, fmt.Errorf("lockstep plan: --grace %s: must not be negative", o.grace))
	}
	if o.output != "text" && o.output != "json" {
		errs = append(errs, fmt.Errorf("lockstep plan: --output %q: must be text or json", o.output))
	}
	jitter, err := parseJitter(o.jitter)
	if err != nil {
		errs = append(errs, err)
	}
	in.Jitter = jitter
	for _, f := range o.fails {
		fault, err := parseFault(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in.Faults = append(in.Faults, fault)
	}
	for _, a := range o.approve {
		approval, err := parseApproval(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in.Approvals = append(in.Approvals, approval)
	}
	for _, a := range o.analyses {
		result, err := parseAnalysis(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in.Analyses = append(in.Analyses, result)
	}
	if len(errs) > 0 {
		return in, errs
	}

	oldPCS, err := readManifest(o.files[0], stdin)
	if err != nil {
		return in, []error{err}
	}
	newPCS, err := readManifest(o.files[1], stdin)
	if err != nil {
		return in, []error{err}
	}
	oldPCS.Default()
	newPCS.Default()
	if errs := validate(o.files, oldPCS, newPCS, stderr); len(errs) > 0 {
		return in, errs
	}
	for _, f := range in.Faults {
		if newPCS.Spec.Template.Clique(f.Role) == nil && !isGroup(&newPCS.Spec.Template, f.Role) {
			errs = append(errs, fmt.Errorf("lockstep plan: --fail role=%s: %s has no clique or scaling group %q (roles: %s)",
				f.Role, newPCS.Name, f.Role, strings.Join(roleNames(&newPCS.Spec.Template), ", ")))
		}
	}
	if len(errs) > 0 {
		return in, errs
	}
	in.Name = newPCS.Name
	in.From, in.To = &oldPCS.Spec, &newPCS.Spec
	if in.FromRevision, err = revision.ForSpec(oldPCS.Name, &oldPCS.Spec); err != nil {
		return in, []error{fmt.Errorf("%s: %w", o.files[0], err)}
	}
	if in.ToRevision, err = revision.ForSpec(newPCS.Name, &newPCS.Spec); err != nil {
		return in, []error{fmt.Errorf("%s: %w", o.files[1], err)}
	}
	return in, nil
}

// validate runs the admission checks: the current manifest as a create, the new
// one as an update of it. Both must name the same PodCliqueSet.
func validate(files []string, oldPCS, newPCS *v1alpha1.PodCliqueSet, stderr io.Writer) []error {
	var errs []error
	report := func(file string, pcs *v1alpha1.PodCliqueSet, list field.ErrorList) {
		if len(list) == 0 {
			return
		}
		lines := []string{fmt.Sprintf("%s: PodCliqueSet %q is invalid (%d %s):", file, pcs.Name, len(list), plural(len(list), "error"))}
		for _, e := range list {
			lines = append(lines, "  "+e.Error())
		}
		errs = append(errs, errors.New(strings.Join(lines, "\n")))
	}
	oldErrs, _ := validation.ValidatePodCliqueSet(oldPCS)
	report(files[0], oldPCS, oldErrs)
	newErrs, warnings := validation.ValidatePodCliqueSetUpdate(oldPCS, newPCS)
	meta := field.NewPath("metadata")
	switch {
	case newPCS.Name == "":
		newErrs = append(newErrs, field.Required(meta.Child("name"), "plan needs the PodCliqueSet's name to name its revisions"))
	case newPCS.Name != oldPCS.Name:
		newErrs = append(newErrs, field.Invalid(meta.Child("name"), newPCS.Name,
			fmt.Sprintf("must be the PodCliqueSet of the current manifest (%q): plan simulates an update of one PodCliqueSet", oldPCS.Name)))
	}
	if newPCS.Namespace != oldPCS.Namespace && newPCS.Namespace != "" && oldPCS.Namespace != "" {
		newErrs = append(newErrs, field.Invalid(meta.Child("namespace"), newPCS.Namespace,
			fmt.Sprintf("must be the namespace of the current manifest (%q)", oldPCS.Namespace)))
	}
	report(files[1], newPCS, newErrs)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "Warning: %s: %s\n", files[1], w)
	}
	return errs
}

func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

func isGroup(t *v1alpha1.PodCliqueSetTemplateSpec, name string) bool {
	for _, g := range t.PodCliqueScalingGroups {
		if g.Name == name {
			return true
		}
	}
	return false
}

func roleNames(t *v1alpha1.PodCliqueSetTemplateSpec) []string {
	var names []string
	for _, c := range t.Cliques {
		names = append(names, c.Name)
	}
	for _, g := range t.PodCliqueScalingGroups {
		names = append(names, g.Name)
	}
	return names
}

// readManifest reads one PodCliqueSet from a file ("-": stdin). It applies the
// defaults of the CRD schema that Default cannot tell apart from an explicit 0
// (the replicas of cliques and scaling groups), and rejects unknown fields as
// kubectl's strict field validation would.
func readManifest(name string, stdin io.Reader) (*v1alpha1.PodCliqueSet, error) {
	obj, err := readObject(name, stdin)
	if err != nil {
		return nil, err
	}
	if api, kind := obj["apiVersion"], obj["kind"]; api != v1alpha1.GroupVersion.String() || kind != "PodCliqueSet" {
		return nil, fmt.Errorf("%s: want apiVersion %s, kind PodCliqueSet; found apiVersion %v, kind %v",
			name, v1alpha1.GroupVersion.String(), api, kind)
	}
	schemaDefaults(obj)
	pcs := &v1alpha1.PodCliqueSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, pcs, true); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pcs, nil
}

// readObject reads the one YAML or JSON object of a file ("-": stdin).
func readObject(name string, stdin io.Reader) (map[string]any, error) {
	objs, err := readObjects(name, stdin)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s: want exactly one PodCliqueSet or FederatedWorkload, found %d YAML documents", name, len(objs))
	}
	return objs[0], nil
}

// readObjects reads every YAML or JSON object of a file ("-": stdin), skipping
// documents of only comments.
func readObjects(name string, stdin io.Reader) ([]map[string]any, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("lockstep plan: %w", err)
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
	objs := make([]map[string]any, 0, len(docs))
	for i, doc := range docs {
		where := name
		if len(docs) > 1 {
			where = fmt.Sprintf("%s: document %d", name, i+1)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%s: not a YAML or JSON object", where)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// stripComments drops comment lines, so that a document of only comments counts
// as empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// schemaDefaults sets replicas: 1 on every clique and scaling group that omits
// it, as the apiserver does from the CRD schema before anything else sees the
// object.
func schemaDefaults(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	for _, key := range []string{"cliques", "podCliqueScalingGroups"} {
		items, _ := tpl[key].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if _, set := m["replicas"]; !set {
					m["replicas"] = int64(1)
				}
			}
		}
	}
}

// parseJitter reads "20%" or "0.2".
func parseJitter(s string) (float64, error) {
	v, isPercent := strings.CutSuffix(strings.TrimSpace(s), "%")
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && isPercent {
		f /= 100
	}
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("lockstep plan: --jitter %q: want a fraction from 0 to 1 (0.2) or a percentage from 0%% to 100%% (20%%)", s)
	}
	return f, nil
}

// parseFault reads role=ROLE,after=N.
// parseApproval reads GATE@TIME.
func parseApproval(s string) (simulate.Approval, error) {
	gate, at, ok := strings.Cut(s, "@")
	d, err := time.ParseDuration(at)
	if !ok || gate == "" || err != nil || d < 0 {
		return simulate.Approval{}, fmt.Errorf("lockstep plan: --approve %q: want GATE@TIME, a gate as status.updateProgress.gate names it and a time from the start (replicas-1@10m)", s)
	}
	return simulate.Approval{At: d, Gate: gate}, nil
}

// parseAnalysis reads GATE=pass|fail@TIME.
func parseAnalysis(s string) (gate.Scripted, error) {
	bad := fmt.Errorf("lockstep plan: --analysis %q: want GATE=pass@TIME or GATE=fail@TIME, a gate's analysis result once it measures at or after that time from the start (replicas-1=fail@5m)", s)
	name, rest, ok := strings.Cut(s, "=")
	result, at, ok2 := strings.Cut(rest, "@")
	d, err := time.ParseDuration(at)
	if !ok || !ok2 || name == "" || err != nil || d < 0 {
		return gate.Scripted{}, bad
	}
	r := gate.Scripted{Gate: name, At: d}
	switch result {
	case "pass":
		r.Phase = v1alpha1.AnalysisPassed
	case "fail":
		r.Phase = v1alpha1.AnalysisFailed
	default:
		return gate.Scripted{}, bad
	}
	return r, nil
}

func parseFault(s string) (simulate.Fault, error) {
	var f simulate.Fault
	bad := func(why string) (simulate.Fault, error) {
		return simulate.Fault{}, fmt.Errorf("lockstep plan: --fail %q: %s; want role=ROLE,after=N (N ≥ 1)", s, why)
	}
	for _, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return bad(fmt.Sprintf("%q is not key=value", part))
		}
		switch key {
		case "role":
			f.Role = val
		case "after":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return bad("after must be a whole number of at least 1")
			}
			f.After = n
		default:
			return bad(fmt.Sprintf("unknown key %q", key))
		}
	}
	switch {
	case f.Role == "":
		return bad("role is missing")
	case f.After == 0:
		return bad("after is missing")
	}
	return f, nil
}

// writeFile writes a file through fn, reporting the first error.
func writeFile(name string, fn func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = fn(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
