package fleet

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	lockstepvalidation "github.com/lockstep-dev/lockstep/internal/validation"
)

// ValidateFederatedWorkload checks a defaulted FederatedWorkload.
func ValidateFederatedWorkload(fw *fleetv1alpha1.FederatedWorkload) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if fw.Spec.PlacementRef.Name == "" {
		errs = append(errs, field.Required(sp.Child("placementRef", "name"), "the Placement whose clusters run the workload"))
	}
	if fw.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(sp.Child("replicas"), fw.Spec.Replicas, "must not be negative"))
	}
	// The workload's name is the member objects' name.
	for _, msg := range validation.IsDNS1123Subdomain(fw.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), fw.Name, msg))
	}
	tp := sp.Child("template")
	tmpl, err := member.ParseTemplate(fw.Spec.Template.Raw)
	if err != nil {
		errs = append(errs, field.Invalid(tp, "", err.Error()))
	} else {
		errs = append(errs, validateTemplate(tmpl, tp)...)
	}
	for i, w := range fw.Spec.Division.Weights {
		errs = append(errs, validateSelector(&w.ClusterSelector, sp.Child("division", "weights").Index(i).Child("clusterSelector"))...)
		if w.Weight < 0 {
			errs = append(errs, field.Invalid(sp.Child("division", "weights").Index(i).Child("weight"), w.Weight, "must not be negative"))
		}
	}
	rp := sp.Child("rolloutStrategy")
	rs := fw.Spec.RolloutStrategy
	errs = append(errs, limit.Validate(rp, rs.MaxUnavailable, rs.MaxSurge, fw.Spec.Replicas)...)
	if mu, _ := limit.Defaulted(rs.MaxUnavailable, rs.MaxSurge); tmpl != nil && tmpl.Kind != member.Deployment && limit.IsZero(mu) {
		errs = append(errs, field.Invalid(rp.Child("maxUnavailable"), mu.String(),
			"must be at least 1 for a "+string(tmpl.Kind)+" template: "+noSurge[tmpl.Kind]+", so with 0 no unit could ever update"))
	}
	if rs.Partition < 0 {
		errs = append(errs, field.Invalid(rp.Child("partition"), rs.Partition, "must not be negative"))
	}
	if st := rs.Stages; st != nil {
		errs = append(errs, validateStages(rp.Child("stages"), st)...)
	}
	if t := fw.Spec.MemberLostTimeoutSeconds; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(sp.Child("memberLostTimeoutSeconds"), *t, "must not be negative"))
	}
	return errs
}

// validateStages checks the rollout's stages; the CRD's rules check the
// same where they can, this also for a hub whose CRD is older.
func validateStages(p *field.Path, st *fleetv1alpha1.RolloutStages) field.ErrorList {
	var errs field.ErrorList
	switch st.Type {
	case "", fleetv1alpha1.StagesAll, fleetv1alpha1.StagesProgressive, fleetv1alpha1.StagesProgressivePerGroup:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), st.Type, []string{string(fleetv1alpha1.StagesAll),
			string(fleetv1alpha1.StagesProgressive), string(fleetv1alpha1.StagesProgressivePerGroup)}))
	}
	if st.MaxConcurrency != nil {
		if st.Type != fleetv1alpha1.StagesProgressive {
			errs = append(errs, field.Forbidden(p.Child("maxConcurrency"), "applies to type Progressive only"))
		}
		if _, err := limit.Resolve(*st.MaxConcurrency, 100, limit.Up); err != nil {
			errs = append(errs, field.Invalid(p.Child("maxConcurrency"), st.MaxConcurrency.String(), err.Error()))
		}
	}
	if st.MaxFailures != nil {
		if _, err := limit.Resolve(*st.MaxFailures, 100, limit.Down); err != nil {
			errs = append(errs, field.Invalid(p.Child("maxFailures"), st.MaxFailures.String(), err.Error()))
		}
	}
	if st.MinSuccessTime.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("minSuccessTime"), st.MinSuccessTime.String(), "must not be negative"))
	}
	if st.ProgressDeadline.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("progressDeadline"), st.ProgressDeadline.String(), "must not be negative"))
	}
	for i, g := range st.MandatoryDecisionGroups {
		if (g.GroupName == "") == (g.GroupIndex == nil) {
			errs = append(errs, field.Invalid(p.Child("mandatoryDecisionGroups").Index(i), "", "set exactly one of groupName and groupIndex"))
		}
	}
	if g := st.Gate; g != nil {
		gp := p.Child("gate")
		gateErrs, _ := lockstepvalidation.ValidateGate(gp, g)
		errs = append(errs, gateErrs...)
		if g.OnFailure == v1alpha1.GateFailureRollback {
			errs = append(errs, field.NotSupported(gp.Child("onFailure"), g.OnFailure, []string{string(v1alpha1.GateFailurePause)}))
		}
	}
	return errs
}

// ValidateFederatedWorkloadUpdate checks an update: the template's kind is fixed.
func ValidateFederatedWorkloadUpdate(old, fw *fleetv1alpha1.FederatedWorkload) field.ErrorList {
	errs := ValidateFederatedWorkload(fw)
	before, err1 := member.ParseTemplate(old.Spec.Template.Raw)
	after, err2 := member.ParseTemplate(fw.Spec.Template.Raw)
	if err1 == nil && err2 == nil && before.Kind != after.Kind {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "kind"),
			"cannot change from "+string(before.Kind)+" to "+string(after.Kind)+": create a new FederatedWorkload"))
	}
	return errs
}

// noSurge says why the members of a partitioned kind update a unit only by
// taking it down.
var noSurge = map[member.Kind]string{
	member.StatefulSet: "its members update one pod at a time by taking it down (a StatefulSet never surges)",
	member.PodCliqueSet: "its members update one replica at a time by taking it down, and never surge " +
		"(the hub holds a ReplicaRecreate member at " + recreateLimits + ")",
}

// recreateLimits are the limits the hub writes to a ReplicaRecreate
// PodCliqueSet member (member.RolloutFields).
var recreateLimits = fmt.Sprintf("maxUnavailable %d and maxSurge 0", align.PartitionedInFlight)

// validateTemplate rejects rollout fields the hub owns, and rollout types
// that cannot be steered.
func validateTemplate(tmpl *member.Template, tp *field.Path) field.ErrorList {
	var errs field.ErrorList
	obj := tmpl.Object.Object
	for _, path := range member.OwnedRolloutFields(tmpl.Kind) {
		if _, found, _ := unstructured.NestedFieldNoCopy(obj, path...); found {
			errs = append(errs, field.Forbidden(tp.Child(path[0], path[1:]...), ownedFieldMessage(tmpl.Kind, path)))
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj, "spec", "replicas"); found {
		errs = append(errs, field.Forbidden(tp.Child("spec", "replicas"), "the hub sets each member's share from spec.replicas and spec.division"))
	}
	for _, f := range []string{"name", "namespace", "generateName"} {
		if _, found, _ := unstructured.NestedFieldNoCopy(obj, "metadata", f); found {
			errs = append(errs, field.Forbidden(tp.Child("metadata", f), "member objects take the FederatedWorkload's name and namespace"))
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj, "spec", "template"); !found {
		errs = append(errs, field.Required(tp.Child("spec", "template"), "the pod template (or PodCliqueSet replica template) the members run"))
	}
	typePath := map[member.Kind][]string{
		member.Deployment:   {"spec", "strategy", "type"},
		member.StatefulSet:  {"spec", "updateStrategy", "type"},
		member.PodCliqueSet: {"spec", "updateStrategy", "type"},
	}[tmpl.Kind]
	allowed := map[member.Kind][]string{
		member.Deployment:   {"RollingUpdate"},
		member.StatefulSet:  {"RollingUpdate"},
		member.PodCliqueSet: {"RollingUpdate", "ReplicaRecreate"},
	}[tmpl.Kind]
	if ty, found, _ := unstructured.NestedString(obj, typePath...); found {
		ok := false
		for _, a := range allowed {
			ok = ok || ty == a
		}
		if !ok {
			errs = append(errs, field.NotSupported(tp.Child(typePath[0], typePath[1:]...), ty, allowed))
		}
	}
	return errs
}

// ownedFieldMessage says why a template may not set the rollout field at path.
func ownedFieldMessage(k member.Kind, path []string) string {
	const budget = "the hub sets it from spec.rolloutStrategy, which is one budget for the whole fleet"
	if k == member.PodCliqueSet && len(path) == 4 && path[2] == "rollingUpdate" && (path[3] == "maxUnavailable" || path[3] == "maxSurge") {
		return budget + ": a ReplicaRecreate member gets " + recreateLimits + " (replicas recreated one at a time, " +
			"none above its share, as the fleet charges it), and a RollingUpdate member takes neither; " +
			"set maxUnavailable and maxSurge in spec.rolloutStrategy"
	}
	return budget + "; set it there"
}
