package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	fleetwebhook "github.com/lockstep-dev/lockstep/internal/webhook/fleet"
)

// isFleet tells whether the manifests are FederatedWorkloads: the first file
// holds one (beside, possibly, the fleet objects a plan reads). Standard input
// is read here once; the reader returned reads it again from the start.
func (o *planOptions) isFleet(stdin io.Reader) (io.Reader, bool, error) {
	if len(o.files) == 0 {
		return stdin, false, nil
	}
	peek := stdin
	if slices.Contains(o.files, "-") {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return stdin, false, fmt.Errorf("lockstep plan: %w", err)
		}
		stdin, peek = bytes.NewReader(data), bytes.NewReader(data)
	}
	objs, err := readObjects(o.files[0], peek)
	if err != nil {
		return stdin, false, nil // the PodCliqueSet path reports it in its own words
	}
	return stdin, slices.ContainsFunc(objs, func(obj map[string]any) bool {
		return obj["apiVersion"] == fleetv1alpha1.GroupVersion.String() && obj["kind"] == "FederatedWorkload"
	}), nil
}

// runFleet simulates a FederatedWorkload rollout over the --cluster clusters.
func (o *planOptions) runFleet(stdin io.Reader, stdout, stderr io.Writer) int {
	in, notes, errs := o.fleetInput(stdin)
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(stderr, "%v\n", err)
		}
		return exitBadInput
	}
	for _, n := range notes {
		fmt.Fprintln(stdout, n)
	}
	res, err := fleetplan.Run(in)
	if err == nil {
		err = fleetplan.WriteText(stdout, in, res)
	}
	if err == nil && o.svg != "" {
		err = writeFile(o.svg, func(w io.Writer) error { return fleetplan.WriteSVG(w, in, res) })
		if err == nil {
			fmt.Fprintf(stdout, "\nSVG chart written to %s\n", o.svg)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockstep plan: %v\n", err)
		return exitFailed
	}
	// paused, or held at a stage gate nobody approves: held by design
	if len(res.Breaches) > 0 || !res.Done && !res.Strategy.Paused && !res.Held {
		return exitFailed
	}
	return exitOK
}

// fleetInput checks the flags that apply to fleets, reads both manifests and
// validates them as the hub's admission would, and chooses the clusters as the
// hub would. Notes are lines to print before the plan.
func (o *planOptions) fleetInput(stdin io.Reader) (fleetplan.Input, []string, []error) {
	in, objs, errs := o.readFleetInput(stdin)
	if len(errs) > 0 {
		return in, nil, errs
	}
	placed, notes, err := planClusters(in.Workload, objs, in.Clusters)
	if err != nil {
		return in, nil, []error{err}
	}
	in.Clusters, in.Placement, in.Sets, in.Bindings = placed.clusters, placed.placement, placed.sets, placed.bindings
	if errs := o.faults(&in); len(errs) > 0 {
		return in, nil, errs
	}
	return in, notes, nil
}

// faults reads --late and --lose into in, each about one of the clusters the
// workload is placed on, each cluster at most once per flag.
func (o *planOptions) faults(in *fleetplan.Input) []error {
	var names []string
	for _, c := range in.Clusters {
		names = append(names, c.Name)
	}
	var errs []error
	read := func(flag string, args []string, parse func(string) (string, int, error)) map[string]int {
		var out map[string]int
		for _, arg := range args {
			name, n, err := parse(arg)
			switch {
			case err != nil:
				errs = append(errs, err)
			case !slices.Contains(names, name):
				errs = append(errs, fmt.Errorf("lockstep plan: --%s %q: cluster %q is not one the workload is placed on (%s)", flag, arg, name, strings.Join(names, ", ")))
			case out[name] != 0:
				errs = append(errs, fmt.Errorf("lockstep plan: --%s %q: cluster %s is given twice", flag, arg, name))
			default:
				if out == nil {
					out = map[string]int{}
				}
				out[name] = n
			}
		}
		return out
	}
	in.Late = read("late", o.late, parseLate)
	in.Lose = read("lose", o.lose, atWave("lose", "unreachable to the hub"))
	in.Fail = read("fail", o.fails, atWave("fail", "runs none of its new units"))
	for _, a := range o.approve {
		approval, err := parseApproval(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if in.Approve == nil {
			in.Approve = map[string]time.Duration{}
		}
		in.Approve[approval.Gate] = approval.At
	}
	for _, a := range o.analyses {
		result, err := parseAnalysis(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		in.Analyses = append(in.Analyses, result)
	}
	return errs
}

// parseLate reads CLUSTER=N, N ≥ 1.
func parseLate(s string) (string, int, error) {
	name, val, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return "", 0, fmt.Errorf("lockstep plan: --late %q: want CLUSTER=N, the cluster's status reaching the hub N rounds late", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(val))
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("lockstep plan: --late %q: N must be a whole number of rounds, at least 1", s)
	}
	return name, n, nil
}

// atWave reads CLUSTER@WAVE, WAVE ≥ 1, for --flag: the cluster is what
// from that wave on.
func atWave(flag, what string) func(string) (string, int, error) {
	return func(s string) (string, int, error) {
		name, val, ok := strings.Cut(s, "@")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return "", 0, fmt.Errorf("lockstep plan: --%s %q: want CLUSTER@WAVE, the cluster %s from that wave on", flag, s, what)
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 1 {
			return "", 0, fmt.Errorf("lockstep plan: --%s %q: WAVE must be a whole number, at least 1 (waves count from 1)", flag, s)
		}
		return name, n, nil
	}
}

// readFleetInput checks the flags and reads and validates both manifests; the
// fleet objects beside the workloads come back as they are.
func (o *planOptions) readFleetInput(stdin io.Reader) (fleetplan.Input, fleetObjects, []error) {
	in := fleetplan.Input{Startup: o.startup}
	var errs []error
	if len(o.files) != 2 {
		errs = append(errs, fmt.Errorf("lockstep plan: give exactly two manifests, -f CURRENT -f NEW (got %d)", len(o.files)))
	}
	if o.output != "text" {
		errs = append(errs, fmt.Errorf("lockstep plan: --output %q: FederatedWorkloads are shown as text (and --svg)", o.output))
	}
	if o.jitter != "0" || o.grace != 0 {
		errs = append(errs, errors.New("lockstep plan: --jitter and --grace apply to PodCliqueSets; a FederatedWorkload plan takes --cluster, --startup, --late, --lose, --fail, --approve and --analysis"))
	}
	if o.startup <= 0 {
		errs = append(errs, fmt.Errorf("lockstep plan: --startup %s: must be positive", o.startup))
	}
	if len(o.clusters) == 0 {
		errs = append(errs, errors.New("lockstep plan: name the member clusters with --cluster NAME[:LABEL=VALUE,...] (repeatable)"))
	}
	for _, c := range o.clusters {
		cl, err := parseCluster(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if slices.ContainsFunc(in.Clusters, func(x fleetplan.Cluster) bool { return x.Name == cl.Name }) {
			errs = append(errs, fmt.Errorf("lockstep plan: --cluster %s given twice", cl.Name))
		}
		in.Clusters = append(in.Clusters, cl)
	}
	var objs fleetObjects
	if len(errs) > 0 {
		return in, objs, errs
	}
	slices.SortFunc(in.Clusters, func(a, b fleetplan.Cluster) int { return strings.Compare(a.Name, b.Name) })
	oldFW, err := readFleetFile(o.files[0], stdin, &objs)
	if err != nil {
		return in, objs, []error{err}
	}
	newFW, err := readFleetFile(o.files[1], stdin, &objs)
	if err != nil {
		return in, objs, []error{err}
	}
	report := func(file string, fw *fleetv1alpha1.FederatedWorkload, list field.ErrorList) {
		if len(list) == 0 {
			return
		}
		lines := []string{fmt.Sprintf("%s: FederatedWorkload %q is invalid (%d %s):", file, fw.Name, len(list), plural(len(list), "error"))}
		for _, e := range list {
			lines = append(lines, "  "+e.Error())
		}
		errs = append(errs, errors.New(strings.Join(lines, "\n")))
	}
	report(o.files[0], oldFW, fleetwebhook.ValidateFederatedWorkload(oldFW))
	report(o.files[1], newFW, fleetwebhook.ValidateFederatedWorkloadUpdate(oldFW, newFW))
	if len(errs) > 0 {
		return in, objs, errs
	}
	tmpl, err := member.ParseTemplate(newFW.Spec.Template.Raw)
	if err != nil {
		return in, objs, []error{fmt.Errorf("%s: spec.template: %w", o.files[1], err)}
	}
	oldTmpl, err := member.ParseTemplate(oldFW.Spec.Template.Raw)
	if err != nil {
		return in, objs, []error{fmt.Errorf("%s: spec.template: %w", o.files[0], err)}
	}
	if oldTmpl.Revision == tmpl.Revision && oldFW.Spec.Replicas == newFW.Spec.Replicas &&
		equality.Semantic.DeepEqual(oldFW.Spec.Division, newFW.Spec.Division) &&
		equality.Semantic.DeepEqual(oldFW.Spec.RolloutStrategy, newFW.Spec.RolloutStrategy) {
		return in, objs, []error{fmt.Errorf("lockstep plan: %s: the pod template, replicas, division and rollout strategy are unchanged: nothing to roll", o.files[1])}
	}
	in.From, in.Workload, in.Kind = oldFW, newFW, tmpl.Kind
	return in, objs, nil
}

// parseCluster reads NAME[:LABEL=VALUE,...].
func parseCluster(s string) (fleetplan.Cluster, error) {
	name, labels, _ := strings.Cut(s, ":")
	c := fleetplan.Cluster{Name: strings.TrimSpace(name), Labels: map[string]string{}}
	if c.Name == "" {
		return c, fmt.Errorf("lockstep plan: --cluster %q: want NAME[:LABEL=VALUE,...]", s)
	}
	if labels == "" {
		return c, nil
	}
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return c, fmt.Errorf("lockstep plan: --cluster %q: label %q is not LABEL=VALUE", s, kv)
		}
		c.Labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return c, nil
}

// fleetObjects are the fleet objects read beside the FederatedWorkloads: what
// decides which clusters the workload's Placement selects.
type fleetObjects struct {
	placements []fleetv1alpha1.Placement
	sets       []fleetv1alpha1.MemberClusterSet
	bindings   []fleetv1alpha1.MemberClusterSetBinding
	// seen maps kind/namespace/name to the object first read, so that one
	// given in both files (a copy of the first file) counts once.
	seen map[string]map[string]any
}

// readFleetFile reads a file holding one FederatedWorkload and, optionally,
// its Placement and MemberClusterSets and MemberClusterSetBindings, rejecting
// unknown fields. The fleet objects are added to objs.
func readFleetFile(name string, stdin io.Reader, objs *fleetObjects) (*fleetv1alpha1.FederatedWorkload, error) {
	docs, err := readObjects(name, stdin)
	if err != nil {
		return nil, err
	}
	if objs.seen == nil {
		objs.seen = map[string]map[string]any{}
	}
	var fw *fleetv1alpha1.FederatedWorkload
	for _, obj := range docs {
		api, kind := obj["apiVersion"], obj["kind"]
		if api != fleetv1alpha1.GroupVersion.String() {
			return nil, fmt.Errorf("%s: want apiVersion %s, kinds FederatedWorkload, Placement, MemberClusterSet or MemberClusterSetBinding (both manifests must be of one kind); found apiVersion %v, kind %v",
				name, fleetv1alpha1.GroupVersion.String(), api, kind)
		}
		var into any
		switch kind {
		case "FederatedWorkload":
			if fw != nil {
				return nil, fmt.Errorf("%s: want exactly one FederatedWorkload, found more", name)
			}
			fw = &fleetv1alpha1.FederatedWorkload{}
			into = fw
		case "Placement", "MemberClusterSet", "MemberClusterSetBinding":
			meta, _ := obj["metadata"].(map[string]any)
			key := fmt.Sprintf("%v/%v/%v", kind, meta["namespace"], meta["name"])
			if first, ok := objs.seen[key]; ok {
				if !equality.Semantic.DeepEqual(first, obj) {
					return nil, fmt.Errorf("%s: %s %v is given twice, differently", name, kind, meta["name"])
				}
				continue
			}
			objs.seen[key] = obj
			switch kind {
			case "Placement":
				objs.placements = append(objs.placements, fleetv1alpha1.Placement{})
				into = &objs.placements[len(objs.placements)-1]
			case "MemberClusterSet":
				objs.sets = append(objs.sets, fleetv1alpha1.MemberClusterSet{})
				into = &objs.sets[len(objs.sets)-1]
			default:
				objs.bindings = append(objs.bindings, fleetv1alpha1.MemberClusterSetBinding{})
				into = &objs.bindings[len(objs.bindings)-1]
			}
		default:
			return nil, fmt.Errorf("%s: kind %v: a FederatedWorkload plan reads FederatedWorkload, Placement, MemberClusterSet and MemberClusterSetBinding objects", name, kind)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, into, true); err != nil {
			return nil, fmt.Errorf("%s: %v %v: %w", name, kind, obj["metadata"], err)
		}
	}
	if fw == nil {
		return nil, fmt.Errorf("%s: want one FederatedWorkload (both manifests must be of one kind), found none", name)
	}
	return fw, nil
}

// placement is what places the workload in a plan: the clusters chosen and
// the objects that chose them, which the simulated hub reads as the hub does.
type placement struct {
	clusters  []fleetplan.Cluster
	placement *fleetv1alpha1.Placement
	sets      []fleetv1alpha1.MemberClusterSet
	bindings  []fleetv1alpha1.MemberClusterSetBinding
}

// planClusters chooses the clusters the workload is placed on among the
// --cluster ones (all taken as Ready), with the hub's own selection
// (fleet.Select): the workload's Placement (as given, or one selecting
// everything), the sets and bindings given. With no set or binding given, a
// set of every cluster bound to the workload's namespace is assumed, and a
// note says so. Choosing no cluster is an error that says why.
func planClusters(fw *fleetv1alpha1.FederatedWorkload, objs fleetObjects, clusters []fleetplan.Cluster) (placement, []string, error) {
	ns := fw.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	var notes []string
	pl := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fw.Spec.PlacementRef.Name}}
	for i := range objs.placements {
		p := &objs.placements[i]
		if p.Namespace == "" {
			p.Namespace = ns
		}
		if p.Namespace != ns || p.Name != pl.Name {
			return placement{}, nil, fmt.Errorf("lockstep plan: Placement %s/%s is not the workload's (spec.placementRef %s/%s)", p.Namespace, p.Name, ns, pl.Name)
		}
		if list := fleetwebhook.ValidatePlacement(p); len(list) > 0 {
			return placement{}, nil, fmt.Errorf("lockstep plan: Placement %s/%s is invalid: %w", p.Namespace, p.Name, list.ToAggregate())
		}
		pl = p
	}
	for i := range objs.bindings {
		b := &objs.bindings[i]
		if b.Namespace == "" {
			b.Namespace = ns // as kubectl would apply it, beside the workload
		}
		if b.Name != b.Spec.ClusterSet {
			return placement{}, nil, fmt.Errorf("lockstep plan: MemberClusterSetBinding %s/%s: spec.clusterSet %q must equal metadata.name", b.Namespace, b.Name, b.Spec.ClusterSet)
		}
	}
	sets, bindings := objs.sets, objs.bindings
	if len(sets) == 0 && len(bindings) == 0 {
		const assumed = "default"
		sets = []fleetv1alpha1.MemberClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: assumed}}}
		bindings = []fleetv1alpha1.MemberClusterSetBinding{{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: assumed},
			Spec:       fleetv1alpha1.MemberClusterSetBindingSpec{ClusterSet: assumed},
		}}
		notes = append(notes, fmt.Sprintf("No MemberClusterSet given: assuming set %q, selecting every --cluster, bound to namespace %s.", assumed, ns))
	}
	members := make([]fleetv1alpha1.MemberCluster, 0, len(clusters))
	for _, c := range clusters {
		members = append(members, fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: c.Labels},
			Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{{
				Type: string(fleetv1alpha1.MemberClusterReady), Status: metav1.ConditionTrue, Reason: string(fleetv1alpha1.MemberClusterReasonReachable),
			}}},
		})
	}
	sel, err := fleet.Select(fleet.SelectionInput{Placement: pl, Sets: sets, Bindings: bindings, Members: members})
	if err != nil {
		return placement{}, nil, fmt.Errorf("lockstep plan: Placement %s/%s: %w", pl.Namespace, pl.Name, err)
	}
	cond := fleet.ClusterSetsCondition(sel, ns, 0)
	if len(sel.Clusters) == 0 {
		return placement{}, nil, fmt.Errorf("lockstep plan: Placement %s/%s selects none of the --cluster clusters: %s", pl.Namespace, pl.Name, cond.Message)
	}
	if cond.Status == metav1.ConditionFalse {
		notes = append(notes, fmt.Sprintf("Placement %s/%s: %s (reason %s).", pl.Namespace, pl.Name, cond.Message, cond.Reason))
	}
	out := make([]fleetplan.Cluster, 0, len(sel.Clusters))
	var names []string
	for _, c := range sel.Clusters {
		out = append(out, fleetplan.Cluster{Name: c.Name, Labels: c.Labels})
		names = append(names, c.Name)
	}
	if len(out) < len(clusters) {
		notes = append(notes, fmt.Sprintf("Placement %s/%s selects %d of the %d --cluster clusters: %s.", pl.Namespace, pl.Name, len(out), len(clusters), strings.Join(names, ", ")))
	}
	return placement{clusters: out, placement: pl, sets: sets, bindings: bindings}, notes, nil
}
