// Package fleet validates the fleet.lockstep.dev objects a hub serves. The
// functions are pure: they take an object and return every error at once, each
// naming the field and the rule it breaks, so the admission webhooks and the
// tests share them.
package fleet

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
)

// ValidateMemberCluster checks a defaulted MemberCluster. Its kubeconfig
// Secret must be in fleetNamespace: the hub reads Secrets nowhere else, so
// whoever may create MemberClusters cannot point the hub at other Secrets.
func ValidateMemberCluster(mc *fleetv1alpha1.MemberCluster, fleetNamespace string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "kubeconfigSecretRef")
	ref := mc.Spec.KubeconfigSecretRef
	switch {
	case ref.Namespace == "":
		errs = append(errs, field.Required(p.Child("namespace"), fmt.Sprintf("a MemberCluster is cluster-scoped, so the Secret's namespace must be given: the hub's fleet namespace %q", fleetNamespace)))
	case ref.Namespace != fleetNamespace:
		errs = append(errs, field.Invalid(p.Child("namespace"), ref.Namespace,
			fmt.Sprintf("must be the hub's fleet namespace %q: the hub reads kubeconfig Secrets nowhere else", fleetNamespace)))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the name of the Secret holding the member's kubeconfig"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	if ref.Key != "" {
		for _, msg := range validation.IsConfigMapKey(ref.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), ref.Key, msg))
		}
	}
	return errs
}

// ValidatePlacement checks a defaulted Placement.
func ValidatePlacement(pl *fleetv1alpha1.Placement) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if sel := pl.Spec.ClusterSelector; sel != nil {
		errs = append(errs, validateSelector(sel, sp.Child("clusterSelector"))...)
	}
	dp := sp.Child("decisionStrategy")
	gp := dp.Child("groupStrategy")
	gs := &pl.Spec.DecisionStrategy.GroupStrategy
	if v := gs.ClustersPerDecisionGroup; v != nil {
		errs = append(errs, limit.ValidateTarget(gp.Child("clustersPerDecisionGroup"), *v)...)
	}
	names := sets.New[string]()
	for i := range gs.DecisionGroups {
		g := &gs.DecisionGroups[i]
		p := gp.Child("decisionGroups").Index(i)
		switch {
		case g.GroupName == "":
			errs = append(errs, field.Required(p.Child("groupName"), `"" is the group of the clusters no predefined group matches; name the group`))
		case names.Has(g.GroupName):
			errs = append(errs, field.Duplicate(p.Child("groupName"), g.GroupName))
		default:
			for _, msg := range validation.IsValidLabelValue(g.GroupName) {
				errs = append(errs, field.Invalid(p.Child("groupName"), g.GroupName, "must be usable as the value of label "+fleetv1alpha1.LabelDecisionGroupName+": "+msg))
			}
		}
		names.Insert(g.GroupName)
		if g.GroupClusterSelector == nil {
			errs = append(errs, field.Required(p.Child("groupClusterSelector"), "a predefined group needs a selector; use {} to take every cluster no earlier group took"))
		} else {
			errs = append(errs, validateSelector(g.GroupClusterSelector, p.Child("groupClusterSelector"))...)
		}
	}
	switch t := pl.Spec.DecisionStrategy.UpdateStrategy.Type; t {
	case "", fleetv1alpha1.RollingUpdateDecisionUpdate, fleetv1alpha1.AllDecisionUpdate:
	default:
		errs = append(errs, field.NotSupported(dp.Child("updateStrategy", "type"), t,
			[]fleetv1alpha1.DecisionUpdateType{fleetv1alpha1.RollingUpdateDecisionUpdate, fleetv1alpha1.AllDecisionUpdate}))
	}
	return errs
}

func validateSelector(sel *metav1.LabelSelector, p *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)
}
