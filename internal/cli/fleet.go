package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// noFleetHistory is why history and undo refuse a FederatedWorkload.
const noFleetHistory = "the hub keeps no revision history of a FederatedWorkload " +
	"(no ControllerRevisions: it knows only the revision spec.template makes, status.updateRevision), " +
	"so there is nothing to list or roll back to; to roll back, apply the previous spec.template again " +
	"(from your manifests or version control) and follow it with `status fw/%s`"

// pcsOnly reads the name for verbs that serve PodCliqueSets alone: history
// and undo, which need the ControllerRevisions the operator keeps.
func pcsOnly(verb, arg string) (string, error) {
	k, name, err := target(verb, arg, kindPodCliqueSet, kindFederatedWorkload)
	if err != nil {
		return "", err
	}
	if k == kindFederatedWorkload {
		return "", usage("%s fw/%s: "+noFleetHistory, verb, name, name)
	}
	return name, nil
}

// promoteFW lowers spec.rolloutStrategy.partition: by one unit, to partition
// when set, or to 0 with full.
func (s *session) promoteFW(ctx context.Context, name string, set bool, partition int32, full bool) error {
	var to int32
	fw, err := s.patchFW(ctx, name, func(fw *fleetv1alpha1.FederatedWorkload) error {
		var err error
		if to, err = nextPartition(kindFederatedWorkload, name, fw.Spec.RolloutStrategy.Partition, set, partition, full); err != nil {
			return err
		}
		fw.Spec.RolloutStrategy.Partition = to
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "federatedworkload/%s promoted: partition %d (%d units fleet-wide stay on the old revision)\n", name, to, to)
	if fw.Spec.RolloutStrategy.Paused {
		fmt.Fprintf(s.out, "note: it is paused; nothing moves until `resume fw/%s`\n", name)
	}
	return nil
}

// restartFW stamps the member template's pod templates (role's, for a
// PodCliqueSet template) with the restart annotation.
func (s *session) restartFW(ctx context.Context, name, role string) error {
	stamp := time.Now().UTC().Format(time.RFC3339)
	var touched string
	if _, err := s.patchFW(ctx, name, func(fw *fleetv1alpha1.FederatedWorkload) error {
		raw, what, err := stampTemplate(fw.Spec.Template.Raw, role, stamp)
		if err != nil {
			return err
		}
		fw.Spec.Template.Raw, fw.Spec.Template.Object, touched = raw, nil, what
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "federatedworkload/%s restarting %s: a new revision rolled out over the fleet (follow it with `status fw/%s`)\n", name, touched, name)
	return nil
}

// stampTemplate sets the restart annotation on the pod templates of a
// FederatedWorkload's member template: spec.template of a Deployment or
// StatefulSet, or each clique's template (those of role, when given) of a
// PodCliqueSet. It returns the template and what it stamped. Every other
// field is left as written: the template is edited as JSON, not through a
// typed object that would add or drop fields.
func stampTemplate(raw []byte, role, stamp string) ([]byte, string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers come back as written
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, "", fmt.Errorf("reading spec.template: %w", err)
	}
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	if tmpl == nil {
		return nil, "", usage("spec.template has no spec.template (pod template) to restart")
	}
	kind, _ := obj["kind"].(string)
	what := "the pod template"
	if kind != "PodCliqueSet" {
		if role != "" {
			return nil, "", usage("--role is for PodCliqueSet templates: a %s template has one pod template", kind)
		}
		annotate(tmpl, stamp)
	} else {
		var typed v1alpha1.PodCliqueSetTemplateSpec
		b, err := json.Marshal(tmpl)
		if err != nil {
			return nil, "", err
		}
		if err := json.Unmarshal(b, &typed); err != nil {
			return nil, "", fmt.Errorf("reading the PodCliqueSet template: %w", err)
		}
		names, err := cliquesOfRole(&typed, role)
		if err != nil {
			return nil, "", err
		}
		cliques, _ := tmpl["cliques"].([]any)
		for _, c := range cliques {
			cm, _ := c.(map[string]any)
			if n, _ := cm["name"].(string); cm != nil && slices.Contains(names, n) {
				pt, _ := cm["template"].(map[string]any)
				if pt == nil {
					pt = map[string]any{}
					cm["template"] = pt
				}
				annotate(pt, stamp)
			}
		}
		what = strings.Join(names, ", ")
	}
	out, err := json.Marshal(obj)
	return out, what, err
}

// annotate sets the restart annotation in a pod template's metadata.
func annotate(podTemplate map[string]any, stamp string) {
	md, _ := podTemplate["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		podTemplate["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[AnnotationRestartedAt] = stamp
}
