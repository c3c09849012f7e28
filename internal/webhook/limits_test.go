package webhook_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/validation"
	fleetwebhook "github.com/lockstep-dev/lockstep/internal/webhook/fleet"
)

// limitsReplicas is the replicas of every level that carries the limits below.
const limitsReplicas = 3

// carrier is one place a maxUnavailable/maxSurge pair is written, and the
// webhook that judges it: errors come back relative to the pair's path.
type carrier struct {
	name     string
	path     string
	validate func(mu, ms *intstr.IntOrString) field.ErrorList
}

func pcsWith(set func(*v1alpha1.PodCliqueSet)) *v1alpha1.PodCliqueSet {
	pcs := &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Spec: v1alpha1.PodCliqueSetSpec{
			Replicas: ptr.To[int32](limitsReplicas),
			Template: v1alpha1.PodCliqueSetTemplateSpec{Cliques: []v1alpha1.PodCliqueTemplateSpec{{
				Name: "frontend", Replicas: limitsReplicas,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:v1"}}}},
			}}},
		},
	}
	set(pcs)
	return pcs
}

func validatePCS(pcs *v1alpha1.PodCliqueSet, defaulted bool) field.ErrorList {
	if defaulted {
		pcs.Default()
	}
	errs, _ := validation.ValidatePodCliqueSet(pcs)
	return errs
}

func carriers() []carrier {
	var out []carrier
	for _, defaulted := range []bool{false, true} {
		suffix := ""
		if defaulted {
			suffix = ", defaulted"
		}
		out = append(out, carrier{
			name: "PodCliqueSet ReplicaRecreate rollingUpdate" + suffix,
			path: "spec.updateStrategy.rollingUpdate",
			validate: func(mu, ms *intstr.IntOrString) field.ErrorList {
				return validatePCS(pcsWith(func(p *v1alpha1.PodCliqueSet) {
					p.Spec.UpdateStrategy.Type = v1alpha1.ReplicaRecreateStrategyType
					p.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{MaxUnavailable: mu, MaxSurge: ms}
				}), defaulted)
			},
		}, carrier{
			name: "PodCliqueSet clique updateStrategy" + suffix,
			path: "spec.template.cliques[0].updateStrategy",
			validate: func(mu, ms *intstr.IntOrString) field.ErrorList {
				return validatePCS(pcsWith(func(p *v1alpha1.PodCliqueSet) {
					p.Spec.Template.Cliques[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: mu, MaxSurge: ms}
				}), defaulted)
			},
		})
	}
	return append(out, carrier{
		name: "FederatedWorkload rolloutStrategy",
		path: "spec.rolloutStrategy",
		validate: func(mu, ms *intstr.IntOrString) field.ErrorList {
			return fleetwebhook.ValidateFederatedWorkload(&fleetv1alpha1.FederatedWorkload{
				ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: "default"},
				Spec: fleetv1alpha1.FederatedWorkloadSpec{
					PlacementRef: fleetv1alpha1.PlacementReference{Name: "fleet"},
					Replicas:     limitsReplicas,
					Template: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{` +
						`"selector":{"matchLabels":{"app":"w"}},"template":{"metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"w:1"}]}}}}`)},
					RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: mu, MaxSurge: ms},
				},
			})
		},
	})
}

// verdict is a webhook's answer on a pair, in terms that do not depend on where
// the pair is written: "accept", or each error's field (maxUnavailable or
// maxSurge), type and rule text.
func verdict(t *testing.T, c carrier, mu, ms *intstr.IntOrString) string {
	t.Helper()
	var rules []string
	for _, e := range c.validate(mu, ms) {
		leaf, ok := strings.CutPrefix(e.Field, c.path+".")
		if !ok {
			t.Fatalf("%s: an error outside the limits, the fixture is broken: %v", c.name, e)
		}
		rules = append(rules, fmt.Sprintf("%s: %s: %s", leaf, e.Type, e.Detail))
	}
	if len(rules) == 0 {
		return "accept"
	}
	return strings.Join(rules, "; ")
}

func limitValue(s string) *intstr.IntOrString {
	if s == "unset" {
		return nil
	}
	v := intstr.Parse(s)
	return &v
}

// TestLimits_BothWebhooksGiveOneVerdict writes the same maxUnavailable and
// maxSurge into a PodCliqueSet (both places it takes them) and a
// FederatedWorkload: every pair gets the same verdict, in the same words.
func TestLimits_BothWebhooksGiveOneVerdict(t *testing.T) {
	// Each value as maxUnavailable beside maxSurge 1, and as maxSurge beside
	// maxUnavailable 1, with the rule a rejection must name.
	cases := []struct {
		value         string
		asUnavailable string
		asSurge       string
	}{
		{value: "unset"},
		{value: "0"},
		{value: "1"},
		{value: "0%"},
		{value: "25%"},
		{value: "100%"},
		{value: "150%", asUnavailable: "must not be more than 100%"},
		{value: "-1", asUnavailable: "must be greater than or equal to 0", asSurge: "must be greater than or equal to 0"},
		{value: "abc", asUnavailable: "must be an integer or a percentage", asSurge: "must be an integer or a percentage"},
		{value: fmt.Sprint(limitsReplicas + 1), asUnavailable: fmt.Sprintf("must not exceed replicas (%d)", limitsReplicas)},
	}
	cs := carriers()
	judge := func(t *testing.T, mu, ms *intstr.IntOrString) string {
		t.Helper()
		first := verdict(t, cs[0], mu, ms)
		for _, c := range cs[1:] {
			if got := verdict(t, c, mu, ms); got != first {
				t.Errorf("%s: %s\n%s: %s", cs[0].name, first, c.name, got)
			}
		}
		return first
	}
	expect := func(t *testing.T, got, leaf, rule string) {
		t.Helper()
		if rule == "" && got != "accept" {
			t.Errorf("rejected: %s; want accepted", got)
		}
		if want := leaf + ": " + field.ErrorTypeInvalid.String() + ": " + rule; rule != "" && (!strings.HasPrefix(got, want) || strings.Contains(got, "; ")) {
			t.Errorf("got %s; want only %s", got, want)
		}
	}
	for _, tc := range cases {
		t.Run("maxUnavailable "+tc.value, func(t *testing.T) {
			expect(t, judge(t, limitValue(tc.value), limitValue("1")), "maxUnavailable", tc.asUnavailable)
		})
		t.Run("maxSurge "+tc.value, func(t *testing.T) {
			expect(t, judge(t, limitValue("1"), limitValue(tc.value)), "maxSurge", tc.asSurge)
		})
	}
	// Every pair of the values, including both 0 and both unset, agrees too.
	for _, mu := range cases {
		for _, ms := range cases {
			t.Run(fmt.Sprintf("maxUnavailable %s, maxSurge %s", mu.value, ms.value), func(t *testing.T) {
				judge(t, limitValue(mu.value), limitValue(ms.value))
			})
		}
	}
	t.Run("both 0 names the rule", func(t *testing.T) {
		expect(t, judge(t, limitValue("0"), limitValue("0%")), "maxUnavailable", "maxUnavailable and maxSurge cannot both be 0")
	})
}
