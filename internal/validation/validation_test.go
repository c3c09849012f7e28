package validation

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

// pod returns a fresh pod template; tests change templates in place.
func pod() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "img:v1"}}}}
}

// disagg is a PodCliqueSet with a standalone frontend and prefill/decode groups.
func disagg() *v1alpha1.PodCliqueSet {
	return &v1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "disagg"},
		Spec: v1alpha1.PodCliqueSetSpec{
			Replicas: ptr.To(int32(2)),
			Template: v1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []v1alpha1.PodCliqueTemplateSpec{
					{Name: "frontend", Replicas: 3, Template: pod()},
					{Name: "prefill-leader", Replicas: 1, Template: pod()},
					{Name: "prefill-worker", Replicas: 2, Template: pod()},
					{Name: "decode-leader", Replicas: 1, Template: pod()},
					{Name: "decode-worker", Replicas: 2, Template: pod()},
				},
				PodCliqueScalingGroups: []v1alpha1.PodCliqueScalingGroupConfig{
					{Name: "prefill", CliqueNames: []string{"prefill-leader", "prefill-worker"}, Replicas: 2},
					{Name: "decode", CliqueNames: []string{"decode-leader", "decode-worker"}, Replicas: 3},
				},
			},
		},
	}
}

func ios(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

func steps(pairs ...string) *v1alpha1.RoleUpgrade {
	ru := &v1alpha1.RoleUpgrade{}
	for i := 0; i+1 < len(pairs); i += 2 {
		ru.Steps = append(ru.Steps, v1alpha1.RoleUpgradeStep{Role: pairs[i], UpdateTo: *ios(pairs[i+1])})
	}
	return ru
}

func withType(t v1alpha1.UpdateStrategyType) func(*v1alpha1.PodCliqueSet) {
	return func(p *v1alpha1.PodCliqueSet) { p.Spec.UpdateStrategy.Type = t }
}

func frontendStrategy(mu, ms string) func(*v1alpha1.PodCliqueSet) {
	return func(p *v1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{}
		if mu != "" {
			p.Spec.Template.Cliques[0].UpdateStrategy.MaxUnavailable = ios(mu)
		}
		if ms != "" {
			p.Spec.Template.Cliques[0].UpdateStrategy.MaxSurge = ios(ms)
		}
	}
}

func pcsLimits(mu, ms string) func(*v1alpha1.PodCliqueSet) {
	return func(p *v1alpha1.PodCliqueSet) {
		p.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{}
		if mu != "" {
			p.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ios(mu)
		}
		if ms != "" {
			p.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ios(ms)
		}
	}
}

func roleSteps(pairs ...string) func(*v1alpha1.PodCliqueSet) {
	return func(p *v1alpha1.PodCliqueSet) { p.Spec.UpdateStrategy.RoleUpgrade = steps(pairs...) }
}

// TestValidatePodCliqueSet covers every rule. Each case names the field and the
// words of the message a user would read; "" means the object must be valid.
func TestValidatePodCliqueSet(t *testing.T) {
	cases := []struct {
		name      string
		mutate    []func(*v1alpha1.PodCliqueSet)
		wantField string
		wantMsg   string
	}{
		{name: "the disaggregated example is valid"},
		{name: "negative replicas", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Replicas = ptr.To(int32(-1)) }),
			wantField: "spec.replicas", wantMsg: "greater than or equal to 0"},
		{name: "negative minReadySeconds", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.MinReadySeconds = -1 }),
			wantField: "spec.minReadySeconds", wantMsg: "greater than or equal to 0"},
		{name: "progress deadline not above minReadySeconds", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.MinReadySeconds = 30
			p.Spec.ProgressDeadlineSeconds = ptr.To(int32(30))
		}), wantField: "spec.progressDeadlineSeconds", wantMsg: "greater than minReadySeconds"},
		{name: "negative revisionHistoryLimit", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.RevisionHistoryLimit = ptr.To(int32(-1)) }),
			wantField: "spec.revisionHistoryLimit", wantMsg: "greater than or equal to 0"},
		{name: "unknown strategy type", mutate: fn(withType("Canary")),
			wantField: "spec.updateStrategy.type", wantMsg: `Unsupported value: "Canary"`},
		{name: "RollingRecreate synonym is valid", mutate: fn(withType(v1alpha1.RollingRecreateStrategyType))},
		{name: "surge at the replaced index under TerminationStarted is valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.SurgePlacement, p.Spec.PodReplacementPolicy = v1alpha1.ReplacedIndex, v1alpha1.TerminationStarted
		})},
		{name: "surge at the replaced index under TerminationComplete", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.SurgePlacement, p.Spec.PodReplacementPolicy = v1alpha1.ReplacedIndex, v1alpha1.TerminationComplete
		}), wantField: "spec.surgePlacement", wantMsg: "needs podReplacementPolicy TerminationStarted"},

		{name: "replicaReplacementPolicy PostTermination is valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.ReplicaReplacementPolicy = v1alpha1.PostTermination
		})},
		{name: "peerDNS None is valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].PeerDNS = v1alpha1.PeerDNSNone
		})},
		{name: "unknown peerDNS", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].PeerDNS = "Cluster"
		}), wantField: "spec.template.cliques[1].peerDNS", wantMsg: `Unsupported value: "Cluster": supported values: "Replica", "None"`},
		{name: "unknown replicaReplacementPolicy", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.ReplicaReplacementPolicy = "WhenIdle"
		}), wantField: "spec.replicaReplacementPolicy", wantMsg: `Unsupported value: "WhenIdle": supported values: "Immediate", "PostTermination"`},

		// maxUnavailable / maxSurge ranges (the admission rules of docs/api.md).
		{name: "negative clique maxUnavailable", mutate: fn(frontendStrategy("-1", "1")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "greater than or equal to 0"},
		{name: "negative clique maxSurge", mutate: fn(frontendStrategy("1", "-1")),
			wantField: "spec.template.cliques[0].updateStrategy.maxSurge", wantMsg: "greater than or equal to 0"},
		{name: "both zero", mutate: fn(frontendStrategy("0", "0")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "cannot both be 0"},
		{name: "both zero percent", mutate: fn(frontendStrategy("0%", "0%")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "cannot both be 0"},
		{name: "zero and zero percent", mutate: fn(frontendStrategy("0", "0%")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "cannot both be 0"},
		{name: "maxUnavailable 0 with surge is valid", mutate: fn(frontendStrategy("0", "1"))},
		{name: "maxUnavailable equal to replicas is valid", mutate: fn(frontendStrategy("3", "0"))},
		{name: "maxUnavailable above replicas", mutate: fn(frontendStrategy("4", "0")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "must not exceed replicas (3)"},
		{name: "maxUnavailable 100% is valid", mutate: fn(frontendStrategy("100%", "0"))},
		{name: "maxUnavailable 101%", mutate: fn(frontendStrategy("101%", "0")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "not be more than 100%"},
		{name: "maxUnavailable 150%", mutate: fn(frontendStrategy("150%", "0")),
			wantField: "spec.template.cliques[0].updateStrategy.maxUnavailable", wantMsg: "not be more than 100%"},
		{name: "maxSurge 150% is valid like a Deployment's", mutate: fn(frontendStrategy("0", "150%"))},
		{name: "maxSurge abc", mutate: fn(frontendStrategy("1", "abc")),
			wantField: "spec.template.cliques[0].updateStrategy.maxSurge", wantMsg: "an integer or a percentage"},
		{name: "maxSurge with a negative percentage", mutate: fn(frontendStrategy("1", "-5%")),
			wantField: "spec.template.cliques[0].updateStrategy.maxSurge", wantMsg: "an integer or a percentage"},
		{name: "group maxUnavailable above replicas", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: ios("3"), MaxSurge: ios("0")}
		}), wantField: "spec.template.podCliqueScalingGroups[0].updateStrategy.maxUnavailable", wantMsg: "must not exceed replicas (2)"},

		// Strategy type rules.
		{name: "ReplicaRecreate with clique strategy", mutate: fn(withType(v1alpha1.ReplicaRecreateStrategyType), frontendStrategy("1", "0")),
			wantField: "spec.template.cliques[0].updateStrategy", wantMsg: "not allowed with spec.updateStrategy.type ReplicaRecreate"},
		{name: "ReplicaRecreate with group strategy", mutate: fn(withType(v1alpha1.ReplicaRecreateStrategyType), func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[1].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxSurge: ios("1")}
		}), wantField: "spec.template.podCliqueScalingGroups[1].updateStrategy", wantMsg: "not allowed with spec.updateStrategy.type ReplicaRecreate"},
		{name: "ReplicaRecreate with limits is valid", mutate: fn(withType(v1alpha1.ReplicaRecreateStrategyType), pcsLimits("0", "1"))},
		{name: "ReplicaRecreate both zero", mutate: fn(withType(v1alpha1.ReplicaRecreateStrategyType), pcsLimits("0", "0%")),
			wantField: "spec.updateStrategy.rollingUpdate.maxUnavailable", wantMsg: "cannot both be 0"},
		{name: "ReplicaRecreate maxUnavailable above replicas", mutate: fn(withType(v1alpha1.ReplicaRecreateStrategyType), pcsLimits("3", "0")),
			wantField: "spec.updateStrategy.rollingUpdate.maxUnavailable", wantMsg: "must not exceed replicas (2)"},
		{name: "RollingUpdate with PCS maxSurge", mutate: fn(pcsLimits("", "1")),
			wantField: "spec.updateStrategy.rollingUpdate.maxSurge", wantMsg: "only allowed with type ReplicaRecreate"},
		{name: "RollingUpdate with PCS maxUnavailable", mutate: fn(pcsLimits("1", "")),
			wantField: "spec.updateStrategy.rollingUpdate.maxUnavailable", wantMsg: "only allowed with type ReplicaRecreate"},
		{name: "RollingUpdate with partition is valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: ptr.To(int32(1))}
		})},
		{name: "negative partition", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: ptr.To(int32(-1))}
		}), wantField: "spec.updateStrategy.rollingUpdate.partition", wantMsg: "greater than or equal to 0"},
		{name: "OnDelete with rollingUpdate", mutate: fn(withType(v1alpha1.OnDeleteStrategyType), func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: ptr.To(int32(1))}
		}), wantField: "spec.updateStrategy.rollingUpdate", wantMsg: "not allowed with type OnDelete"},
		{name: "OnDelete with clique strategy", mutate: fn(withType(v1alpha1.OnDeleteStrategyType), frontendStrategy("1", "0")),
			wantField: "spec.template.cliques[0].updateStrategy", wantMsg: "not allowed with spec.updateStrategy.type OnDelete"},
		{name: "OnDelete with roleUpgrade", mutate: fn(withType(v1alpha1.OnDeleteStrategyType), roleSteps("decode", "1")),
			wantField: "spec.updateStrategy.roleUpgrade", wantMsg: "only allowed with type RollingUpdate"},
		{name: "ReplicaRecreate with roleUpgrade", mutate: fn(withType(v1alpha1.ReplicaRecreateStrategyType), roleSteps("decode", "1")),
			wantField: "spec.updateStrategy.roleUpgrade", wantMsg: "only allowed with type RollingUpdate"},

		// Gates.
		{name: "an approval gate after each replica is valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true, SoakSeconds: 600}
		})},
		{name: "OnDelete with a gate", mutate: fn(withType(v1alpha1.OnDeleteStrategyType), func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true}
		}), wantField: "spec.updateStrategy.gate", wantMsg: "not allowed with type OnDelete"},
		{name: "a soak over a week", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{SoakSeconds: 7*24*3600 + 1}
		}), wantField: "spec.updateStrategy.gate.soakSeconds", wantMsg: "must be between 0 and 604800"},
		{name: "an analysis gate that rolls back is valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{OnFailure: v1alpha1.GateFailureRollback, Analysis: &v1alpha1.GateAnalysis{
				Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://prometheus.monitoring:9090", Query: "sum(rate(errors[1m]))", SuccessCondition: "result < 0.01"}}}
		})},
		{name: "an analysis address that is a file", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{
				Prometheus: &v1alpha1.PrometheusAnalysis{Address: "file:///etc/passwd", Query: "up", SuccessCondition: "result > 0"}}}
		}), wantField: "spec.updateStrategy.gate.analysis.prometheus.address", wantMsg: "the scheme must be http or https"},
		{name: "a success condition that is code", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{
				Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://p:9090", Query: "up", SuccessCondition: "len(result) > 0"}}}
		}), wantField: "spec.updateStrategy.gate.analysis.prometheus.successCondition", wantMsg: "is not a comparison"},
		{name: "a webhook analysis and required conditions are valid", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{RequiredConditions: []v1alpha1.RequiredCondition{{Type: "Available", Status: "True"}},
				Analysis: &v1alpha1.GateAnalysis{Webhook: &v1alpha1.WebhookAnalysis{URL: "https://gates.example/lockstep"}}}
		})},
		{name: "an analysis with both prometheus and webhook", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{Webhook: &v1alpha1.WebhookAnalysis{URL: "https://gates.example/x"},
				Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://p:9090", Query: "up", SuccessCondition: "result > 0"}}}
		}), wantField: "spec.updateStrategy.gate.analysis", wantMsg: "exactly one of prometheus and webhook"},
		{name: "a webhook URL with credentials", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{Webhook: &v1alpha1.WebhookAnalysis{URL: "https://u:p@gates.example/x"}}}
		}), wantField: "spec.updateStrategy.gate.analysis.webhook.url", wantMsg: "no credentials"},
		{name: "a required condition named twice", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{RequiredConditions: []v1alpha1.RequiredCondition{{Type: "A", Status: "True"}, {Type: "A", Status: "False"}}}
		}), wantField: "spec.updateStrategy.gate.requiredConditions[1].type", wantMsg: "Duplicate value"},
		{name: "an unknown failure policy", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.Gate = &v1alpha1.Gate{Approval: true, OnFailure: "Retry"}
		}), wantField: "spec.updateStrategy.gate.onFailure", wantMsg: "Unsupported value"},
		{name: "a role step's negative soak", mutate: fn(roleSteps("decode", "1"), func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.RoleUpgrade.Steps[0].Gate = &v1alpha1.Gate{SoakSeconds: -1}
		}), wantField: "spec.updateStrategy.roleUpgrade.steps[0].gate.soakSeconds", wantMsg: "must be between 0 and 604800"},

		// Role steps.
		{name: "decode-first canary steps are valid", mutate: fn(roleSteps("decode", "1", "prefill", "1", "prefill", "100%", "decode", "100%"))},
		{name: "steps may name a standalone clique", mutate: fn(roleSteps("frontend", "1", "decode", "100%"))},
		{name: "empty steps", mutate: fn(roleSteps()),
			wantField: "spec.updateStrategy.roleUpgrade.steps", wantMsg: "at least one step"},
		{name: "unknown role", mutate: fn(roleSteps("encode", "1")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].role", wantMsg: "known roles: decode, frontend, prefill"},
		{name: "role is a grouped clique", mutate: fn(roleSteps("decode-worker", "1")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].role", wantMsg: `in scaling group "decode"`},
		{name: "updateTo 0", mutate: fn(roleSteps("decode", "0")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].updateTo", wantMsg: "at least 1"},
		{name: "updateTo 0%", mutate: fn(roleSteps("decode", "0%")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].updateTo", wantMsg: "(0%, 100%]"},
		{name: "updateTo 101%", mutate: fn(roleSteps("decode", "101%")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].updateTo", wantMsg: "(0%, 100%]"},
		{name: "updateTo above the role's replicas", mutate: fn(roleSteps("decode", "4")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].updateTo", wantMsg: "must not exceed the role's replicas (3)"},
		{name: "updateTo equal to the role's replicas", mutate: fn(roleSteps("decode", "3"))},
		{name: "updateTo not a number", mutate: fn(roleSteps("decode", "half")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[0].updateTo", wantMsg: "an integer or a percentage"},
		{name: "updateTo decreasing", mutate: fn(roleSteps("decode", "2", "prefill", "1", "decode", "1")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[2].updateTo", wantMsg: `must not decrease for role "decode"`},
		{name: "updateTo repeated is valid", mutate: fn(roleSteps("decode", "2", "decode", "2"))},
		// Percentages round up: 67% of 3 is 2.01, so 3 units; a later 2 goes backwards.
		{name: "updateTo percent rounds up at the boundary", mutate: fn(roleSteps("decode", "67%", "decode", "2")),
			wantField: "spec.updateStrategy.roleUpgrade.steps[1].updateTo", wantMsg: "already updates 3 of its units"},
		// 66% of 3 is 1.98, so 2 units; a later 2 is not a decrease.
		{name: "updateTo percent just below the boundary", mutate: fn(roleSteps("decode", "66%", "decode", "2"))},
		{name: "1% of a role still means one unit", mutate: fn(roleSteps("prefill", "1%", "prefill", "1"))},

		// Structure.
		{name: "no cliques", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = nil
			p.Spec.Template.PodCliqueScalingGroups = nil
		}), wantField: "spec.template.cliques", wantMsg: "at least one clique"},
		{name: "duplicate clique names", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Name = "frontend" }),
			wantField: "spec.template.cliques[1].name", wantMsg: "must be unique"},
		{name: "group named like a clique", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.PodCliqueScalingGroups[0].Name = "frontend" }),
			wantField: "spec.template.podCliqueScalingGroups[0].name", wantMsg: "must be unique"},
		{name: "clique name not a DNS label", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Name = "Front_End" }),
			wantField: "spec.template.cliques[0].name", wantMsg: "RFC 1123"},
		{name: "group names a missing clique", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[1].CliqueNames[1] = "decode-helper"
		}), wantField: "spec.template.podCliqueScalingGroups[1].cliqueNames[1]", wantMsg: `no clique named "decode-helper"`},
		{name: "clique in two groups", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[1].CliqueNames[0] = "prefill-leader"
		}), wantField: "spec.template.podCliqueScalingGroups[1].cliqueNames[0]", wantMsg: `already in scaling group "prefill"`},
		{name: "clique twice in one group", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[1].CliqueNames[1] = "decode-leader"
		}), wantField: "spec.template.podCliqueScalingGroups[1].cliqueNames[1]", wantMsg: "Duplicate value"},
		{name: "group without cliques", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.PodCliqueScalingGroups[1].CliqueNames = nil }),
			wantField: "spec.template.podCliqueScalingGroups[1].cliqueNames", wantMsg: "at least one clique"},
		{name: "clique minAvailable above replicas", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].MinAvailable = ptr.To(int32(4)) }),
			wantField: "spec.template.cliques[0].minAvailable", wantMsg: "must not exceed replicas (3)"},
		{name: "clique minAvailable 0", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].MinAvailable = ptr.To(int32(0)) }),
			wantField: "spec.template.cliques[0].minAvailable", wantMsg: "at least 1"},
		{name: "group minAvailable above replicas", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[0].MinAvailable = ptr.To(int32(3))
		}), wantField: "spec.template.podCliqueScalingGroups[0].minAvailable", wantMsg: "must not exceed replicas (2)"},
		{name: "negative clique replicas", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Replicas = -2 }),
			wantField: "spec.template.cliques[0].replicas", wantMsg: "greater than or equal to 0"},
		{name: "strategy on a grouped clique", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxSurge: ios("1")}
		}), wantField: "spec.template.cliques[2].updateStrategy", wantMsg: "set updateStrategy on the scaling group instead"},
		{name: "container without image", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x"}}}}
		}), wantField: "spec.template.cliques[0].template.spec.containers[0].image", wantMsg: "needs an image"},
		{name: "template without containers", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Template = corev1.PodTemplateSpec{} }),
			wantField: "spec.template.cliques[0].template.spec.containers", wantMsg: "at least one container"},

		// Names.
		{name: "name is not a DNS-1035 label", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Name = "1st-set" }),
			wantField: "metadata.name", wantMsg: "Service name"},
		{name: "name leaves no room for revision hashes", mutate: fn(func(p *v1alpha1.PodCliqueSet) { p.Name = strings.Repeat("a", 53) }),
			wantField: "metadata.name", wantMsg: "may not be more than 52"},
		{name: "longest name that fits", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			// name-999-prefill-999-prefill-worker-999 must fit in 63.
			p.Name = strings.Repeat("a", 63-len("-999-prefill-999-prefill-worker-999"))
		})},
		{name: "hostname one character too long", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Name = strings.Repeat("a", 64-len("-999-prefill-999-prefill-worker-999"))
		}), wantField: "spec.template.cliques[2].name", wantMsg: "pod hostnames would be up to 64 characters"},
		{name: "hostnames leave room for the digits replicas need", mutate: fn(func(p *v1alpha1.PodCliqueSet) {
			p.Name = strings.Repeat("a", 63-len("-999-frontend-999"))
			p.Spec.Template.Cliques[0].Replicas = 1001 // index 1000 needs four digits
			p.Spec.Template.PodCliqueScalingGroups = nil
			p.Spec.Template.Cliques = p.Spec.Template.Cliques[:1]
		}), wantField: "spec.template.cliques[0].name", wantMsg: "pod hostnames would be up to 64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := disagg()
			for _, m := range tc.mutate {
				m(pcs)
			}
			errs, _ := ValidatePodCliqueSet(pcs)
			if tc.wantField == "" {
				if len(errs) != 0 {
					t.Fatalf("want valid, got %v", errs.ToAggregate())
				}
				return
			}
			for _, e := range errs {
				if e.Field == tc.wantField && strings.Contains(e.Error(), tc.wantMsg) {
					return
				}
			}
			t.Fatalf("want an error on %s containing %q, got %v", tc.wantField, tc.wantMsg, errs.ToAggregate())
		})
	}
}

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }

func fn(fs ...func(*v1alpha1.PodCliqueSet)) []func(*v1alpha1.PodCliqueSet) { return fs }

func TestValidatePodCliqueSet_ReturnsEveryErrorAtOnce(t *testing.T) {
	pcs := disagg()
	pcs.Spec.Replicas = ptr.To(int32(-1))
	pcs.Spec.Template.Cliques[0].MinAvailable = ptr.To(int32(9))
	pcs.Spec.UpdateStrategy.RoleUpgrade = steps("encode", "1", "decode", "0")
	errs, _ := ValidatePodCliqueSet(pcs)
	if len(errs) != 4 {
		t.Fatalf("want 4 errors, got %d: %v", len(errs), errs.ToAggregate())
	}
}

func TestValidatePodCliqueSetUpdate_CompositionIsImmutable(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*v1alpha1.PodCliqueSet)
		wantErr string
	}{
		{name: "image change is allowed", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Template.Spec.Containers[0].Image = "img:v2"
		}},
		{name: "replicas and group size changes are allowed", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Replicas = ptr.To(int32(5))
			p.Spec.Template.PodCliqueScalingGroups[0].Replicas = 4
		}},
		{name: "reordering cliques is allowed", mutate: func(p *v1alpha1.PodCliqueSet) {
			c := p.Spec.Template.Cliques
			c[0], c[1] = c[1], c[0]
		}},
		{name: "renaming a clique", mutate: func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Name = "router" },
			wantErr: "added: [router], removed: [frontend]"},
		{name: "removing a group", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups = p.Spec.Template.PodCliqueScalingGroups[:1]
		}, wantErr: "create a new PodCliqueSet"},
		{name: "moving a clique out of a group", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroups[1].CliqueNames = []string{"decode-leader"}
		}, wantErr: "removed: [decode[decode-leader,decode-worker]]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldPCS, newPCS := disagg(), disagg()
			tc.mutate(newPCS)
			errs, _ := ValidatePodCliqueSetUpdate(oldPCS, newPCS)
			var composition []string
			for _, e := range errs {
				if strings.Contains(e.Error(), "composition") {
					composition = append(composition, e.Error())
				}
			}
			switch {
			case tc.wantErr == "" && len(composition) > 0:
				t.Fatalf("want allowed, got %v", composition)
			case tc.wantErr != "" && !strings.Contains(strings.Join(composition, "\n"), tc.wantErr):
				t.Fatalf("want a composition error containing %q, got %v", tc.wantErr, errs.ToAggregate())
			}
		})
	}
}

func TestValidatePodCliqueSet_Warnings(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*v1alpha1.PodCliqueSet)
		want   string
	}{
		{name: "group surge needs whole gangs", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[3].Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpuResource: mustQty("4")}
			p.Spec.Template.PodCliqueScalingGroups[1].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: ios("0"), MaxSurge: ios("1")}
		}, want: `scaling group "decode", each 3 pods requesting 4 nvidia.com/gpu`},
		{name: "clique surge of GPU pods joins the gang", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpuResource: mustQty("2")}
			p.Spec.Template.Cliques[0].UpdateStrategy = &v1alpha1.ComponentUpdateStrategy{MaxUnavailable: ios("0"), MaxSurge: ios("34%")}
		}, want: `adds 2 pod(s) of clique "frontend", 2 nvidia.com/gpu each`}, // 34% of 3 rounds up to 2
		{name: "ReplicaRecreate surge adds whole replicas", mutate: func(p *v1alpha1.PodCliqueSet) {
			withType(v1alpha1.ReplicaRecreateStrategyType)(p)
			pcsLimits("0", "1")(p)
		}, want: "creates 1 whole extra PodCliqueSet replica(s) (18 pods)"},
		{name: "ReplicaRecreate all at once", mutate: func(p *v1alpha1.PodCliqueSet) {
			withType(v1alpha1.ReplicaRecreateStrategyType)(p)
			pcsLimits("100%", "0")(p)
		}, want: "fully unavailable"},
		{name: "single replica goes below minAvailable", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.Replicas = ptr.To(int32(1))
			p.Spec.Template.Cliques[0].MinAvailable = ptr.To(int32(3))
		}, want: `updating clique "frontend" takes it below minAvailable`},
		{name: "partition above replicas", mutate: func(p *v1alpha1.PodCliqueSet) {
			p.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.PodCliqueSetRollingUpdate{Partition: ptr.To(int32(2))}
		}, want: "no replica will be updated until the partition is lowered"},
		{name: "hostname in template", mutate: func(p *v1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Template.Spec.Hostname = "x" },
			want: "hostname and subdomain are set by Lockstep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := disagg()
			tc.mutate(pcs)
			errs, warnings := ValidatePodCliqueSet(pcs)
			if len(errs) != 0 {
				t.Fatalf("want valid, got %v", errs.ToAggregate())
			}
			for _, w := range warnings {
				if strings.Contains(w, tc.want) {
					return
				}
			}
			t.Fatalf("no warning containing %q in %q", tc.want, warnings)
		})
	}
	errs, warnings := ValidatePodCliqueSet(disagg())
	if len(errs) != 0 || len(warnings) != 0 {
		t.Fatalf("the plain example should be valid without warnings: %v %q", errs, warnings)
	}
}
