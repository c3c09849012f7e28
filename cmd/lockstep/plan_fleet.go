package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/fleetplan"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	fleetwebhook "github.com/lockstep-dev/lockstep/internal/webhook/fleet"
)

// isFleet tells whether the manifests are FederatedWorkloads, by the kind of
// the first one. Standard input is read here once; the reader returned reads
// it again from the start.
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
	obj, err := readObject(o.files[0], peek)
	if err != nil {
		return stdin, false, nil // the PodCliqueSet path reports it in its own words
	}
	return stdin, obj["apiVersion"] == fleetv1alpha1.GroupVersion.String() && obj["kind"] == "FederatedWorkload", nil
}

// runFleet simulates a FederatedWorkload rollout over the --cluster clusters.
func (o *planOptions) runFleet(stdin io.Reader, stdout, stderr io.Writer) int {
	in, errs := o.fleetInput(stdin)
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(stderr, "%v\n", err)
		}
		return exitBadInput
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
	if len(res.Breaches) > 0 || !res.Done && !res.Strategy.Paused {
		return exitFailed
	}
	return exitOK
}

// fleetInput checks the flags that apply to fleets, reads both manifests and
// validates them as the hub's admission would.
func (o *planOptions) fleetInput(stdin io.Reader) (fleetplan.Input, []error) {
	in := fleetplan.Input{Startup: o.startup}
	var errs []error
	if len(o.files) != 2 {
		errs = append(errs, fmt.Errorf("lockstep plan: give exactly two manifests, -f CURRENT -f NEW (got %d)", len(o.files)))
	}
	if o.output != "text" {
		errs = append(errs, fmt.Errorf("lockstep plan: --output %q: FederatedWorkloads are shown as text (and --svg)", o.output))
	}
	if len(o.fails) > 0 || o.jitter != "0" || o.grace != 0 {
		errs = append(errs, errors.New("lockstep plan: --fail, --jitter and --grace apply to PodCliqueSets; a FederatedWorkload plan takes --cluster and --startup"))
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
	if len(errs) > 0 {
		return in, errs
	}
	slices.SortFunc(in.Clusters, func(a, b fleetplan.Cluster) int { return strings.Compare(a.Name, b.Name) })
	oldFW, err := readFederatedWorkload(o.files[0], stdin)
	if err != nil {
		return in, []error{err}
	}
	newFW, err := readFederatedWorkload(o.files[1], stdin)
	if err != nil {
		return in, []error{err}
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
		return in, errs
	}
	tmpl, err := member.ParseTemplate(newFW.Spec.Template.Raw)
	if err != nil {
		return in, []error{fmt.Errorf("%s: spec.template: %w", o.files[1], err)}
	}
	oldTmpl, err := member.ParseTemplate(oldFW.Spec.Template.Raw)
	if err != nil {
		return in, []error{fmt.Errorf("%s: spec.template: %w", o.files[0], err)}
	}
	if oldTmpl.Revision == tmpl.Revision && equality.Semantic.DeepEqual(oldFW.Spec.RolloutStrategy, newFW.Spec.RolloutStrategy) {
		return in, []error{fmt.Errorf("lockstep plan: %s: the pod template is unchanged: nothing to roll", o.files[1])}
	}
	in.Workload, in.Kind = newFW, tmpl.Kind
	return in, nil
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

// readFederatedWorkload reads one FederatedWorkload, rejecting unknown fields.
func readFederatedWorkload(name string, stdin io.Reader) (*fleetv1alpha1.FederatedWorkload, error) {
	obj, err := readObject(name, stdin)
	if err != nil {
		return nil, err
	}
	if api, kind := obj["apiVersion"], obj["kind"]; api != fleetv1alpha1.GroupVersion.String() || kind != "FederatedWorkload" {
		return nil, fmt.Errorf("%s: want apiVersion %s, kind FederatedWorkload (both manifests must be of one kind); found apiVersion %v, kind %v",
			name, fleetv1alpha1.GroupVersion.String(), api, kind)
	}
	fw := &fleetv1alpha1.FederatedWorkload{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, fw, true); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return fw, nil
}
