package fleet

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/v1alpha1"
)

const podTemplate = `"template":{"metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"w:1"}]}}`

func deploymentSpec(extra string) string {
	return `{"apiVersion":"apps/v1","kind":"Deployment","spec":{` + extra + `"selector":{"matchLabels":{"app":"w"}},` + podTemplate + `}}`
}

func statefulSetSpec(extra string) string {
	return `{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{` + extra + `"serviceName":"w","selector":{"matchLabels":{"app":"w"}},` + podTemplate + `}}`
}

func podCliqueSetSpec(extra string) string {
	return `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{` + extra + `"template":{"cliques":[{"name":"a"}]}}}`
}

func federatedWorkload(template string) *fleetv1alpha1.FederatedWorkload {
	mu, ms := intstr.FromInt32(2), intstr.FromInt32(1)
	return &fleetv1alpha1.FederatedWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: fleetv1alpha1.FederatedWorkloadSpec{
			PlacementRef:    fleetv1alpha1.PlacementReference{Name: "gpu-fleet"},
			Replicas:        10,
			Template:        runtime.RawExtension{Raw: []byte(template)},
			RolloutStrategy: fleetv1alpha1.FederatedRolloutStrategy{MaxUnavailable: &mu, MaxSurge: &ms},
		},
	}
}

func limits(mu, ms string) func(*fleetv1alpha1.FederatedWorkload) {
	return func(fw *fleetv1alpha1.FederatedWorkload) {
		u, s := intstr.Parse(mu), intstr.Parse(ms)
		fw.Spec.RolloutStrategy.MaxUnavailable, fw.Spec.RolloutStrategy.MaxSurge = &u, &s
	}
}

func stages(change func(*fleetv1alpha1.RolloutStages)) func(*fleetv1alpha1.FederatedWorkload) {
	return func(fw *fleetv1alpha1.FederatedWorkload) {
		st := &fleetv1alpha1.RolloutStages{Type: fleetv1alpha1.StagesAll}
		change(st)
		fw.Spec.RolloutStrategy.Stages = st
	}
}

func TestValidateFederatedWorkload(t *testing.T) {
	const (
		rs  = "spec.rolloutStrategy"
		tpl = "spec.template"
	)
	cases := []struct {
		name     string
		template string
		change   func(*fleetv1alpha1.FederatedWorkload)
		want     []wantErr
	}{
		{"a deployment", deploymentSpec(""), nil, nil},
		{"a statefulset", statefulSetSpec(""), nil, nil},
		{"a podcliqueset", podCliqueSetSpec(""), nil, nil},
		{"a deployment may keep its own strategy type", deploymentSpec(`"strategy":{"type":"RollingUpdate"},"minReadySeconds":3,`), nil, nil},
		{"percentages", deploymentSpec(""), limits("25%", "10%"), nil},
		{"surge only is fine for a deployment", deploymentSpec(""), limits("0", "1"), nil},
		{"a daemonset is unsupported", `{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{}}`, nil,
			[]wantErr{{tpl, field.ErrorTypeInvalid, "unsupported kind apps/v1 DaemonSet"}}},
		{"a deployment's own limits conflict", deploymentSpec(`"strategy":{"rollingUpdate":{"maxUnavailable":1,"maxSurge":"50%"}},`), nil, []wantErr{
			{tpl + ".spec.strategy.rollingUpdate.maxUnavailable", field.ErrorTypeForbidden, "spec.rolloutStrategy"},
			{tpl + ".spec.strategy.rollingUpdate.maxSurge", field.ErrorTypeForbidden, "spec.rolloutStrategy"},
		}},
		{"a deployment's own pause conflicts", deploymentSpec(`"paused":true,`), nil,
			[]wantErr{{tpl + ".spec.paused", field.ErrorTypeForbidden, "one budget"}}},
		{"a recreating deployment cannot be budgeted", deploymentSpec(`"strategy":{"type":"Recreate"},`), nil,
			[]wantErr{{tpl + ".spec.strategy.type", field.ErrorTypeNotSupported, "Recreate"}}},
		{"a statefulset's own partition conflicts", statefulSetSpec(`"updateStrategy":{"rollingUpdate":{"partition":2}},`), nil,
			[]wantErr{{tpl + ".spec.updateStrategy.rollingUpdate.partition", field.ErrorTypeForbidden, "spec.rolloutStrategy"}}},
		{"an OnDelete statefulset cannot be budgeted", statefulSetSpec(`"updateStrategy":{"type":"OnDelete"},`), nil,
			[]wantErr{{tpl + ".spec.updateStrategy.type", field.ErrorTypeNotSupported, "OnDelete"}}},
		{"a podcliqueset's own partition and pause conflict", podCliqueSetSpec(`"paused":true,"updateStrategy":{"rollingUpdate":{"partition":1}},`), nil, []wantErr{
			{tpl + ".spec.paused", field.ErrorTypeForbidden, "spec.rolloutStrategy"},
			{tpl + ".spec.updateStrategy.rollingUpdate.partition", field.ErrorTypeForbidden, "spec.rolloutStrategy"},
		}},
		{"a recreating podcliqueset", podCliqueSetSpec(`"updateStrategy":{"type":"ReplicaRecreate"},`), nil, nil},
		{"a rolling podcliqueset", podCliqueSetSpec(`"updateStrategy":{"type":"RollingUpdate"},`), nil, nil},
		{"a recreating podcliqueset's own surge conflicts", podCliqueSetSpec(`"updateStrategy":{"type":"ReplicaRecreate","rollingUpdate":{"maxSurge":1}},`), nil,
			[]wantErr{{tpl + ".spec.updateStrategy.rollingUpdate.maxSurge", field.ErrorTypeForbidden, "the hub sets it from spec.rolloutStrategy"}}},
		{"a recreating podcliqueset's own limits conflict", podCliqueSetSpec(`"updateStrategy":{"type":"ReplicaRecreate","rollingUpdate":{"maxUnavailable":"50%","maxSurge":2}},`), nil, []wantErr{
			{tpl + ".spec.updateStrategy.rollingUpdate.maxUnavailable", field.ErrorTypeForbidden, "a ReplicaRecreate member gets maxUnavailable 1 and maxSurge 0"},
			{tpl + ".spec.updateStrategy.rollingUpdate.maxSurge", field.ErrorTypeForbidden, "spec.rolloutStrategy"},
		}},
		{"a surge of 0 is the hub's to set too", podCliqueSetSpec(`"updateStrategy":{"type":"ReplicaRecreate","rollingUpdate":{"maxSurge":0}},`), nil,
			[]wantErr{{tpl + ".spec.updateStrategy.rollingUpdate.maxSurge", field.ErrorTypeForbidden, "spec.rolloutStrategy"}}},
		{"a rolling podcliqueset takes no limits either", podCliqueSetSpec(`"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}},`), nil,
			[]wantErr{{tpl + ".spec.updateStrategy.rollingUpdate.maxSurge", field.ErrorTypeForbidden, "a RollingUpdate member takes neither"}}},
		{"a recreating podcliqueset with a global surge", podCliqueSetSpec(`"updateStrategy":{"type":"ReplicaRecreate"},`), limits("2", "3"), nil},
		{"an OnDelete podcliqueset cannot be budgeted", podCliqueSetSpec(`"updateStrategy":{"type":"OnDelete"},`), nil,
			[]wantErr{{tpl + ".spec.updateStrategy.type", field.ErrorTypeNotSupported, "OnDelete"}}},
		{"template replicas are the hub's", deploymentSpec(`"replicas":3,`), nil,
			[]wantErr{{tpl + ".spec.replicas", field.ErrorTypeForbidden, "share"}}},
		{"a template without a pod template", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{}}`, nil,
			[]wantErr{{tpl + ".spec.template", field.ErrorTypeRequired, "pod template"}}},
		{"both limits 0", deploymentSpec(""), limits("0", "0%"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "both be 0"}}},
		{"a bad percent", deploymentSpec(""), limits("1", "ten%"),
			[]wantErr{{rs + ".maxSurge", field.ErrorTypeInvalid, "percentage"}}},
		{"a string that is no percent", deploymentSpec(""), limits("half", "1"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "percentage"}}},
		{"above 100%", deploymentSpec(""), limits("150%", "1"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "more than 100%"}}},
		{"maxSurge above 100%, as a Deployment's", deploymentSpec(""), limits("1", "150%"), nil},
		{"maxUnavailable above replicas", deploymentSpec(""), limits("11", "1"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "must not exceed replicas (10)"}}},
		{"negative", deploymentSpec(""), limits("-1", "1"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "greater than or equal to 0"}}},
		{"a statefulset needs maxUnavailable", statefulSetSpec(""), limits("0", "2"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "at least 1 for a StatefulSet"}}},
		{"a podcliqueset needs maxUnavailable", podCliqueSetSpec(""), limits("0%", "1"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "at least 1 for a PodCliqueSet template: its members update one replica at a time by taking it down, and never surge"}}},
		{"a recreating podcliqueset needs maxUnavailable too", podCliqueSetSpec(`"updateStrategy":{"type":"ReplicaRecreate"},`), limits("0", "2"),
			[]wantErr{{rs + ".maxUnavailable", field.ErrorTypeInvalid, "maxUnavailable 1 and maxSurge 0"}}},
		{"no placement", deploymentSpec(""), func(fw *fleetv1alpha1.FederatedWorkload) { fw.Spec.PlacementRef.Name = "" },
			[]wantErr{{"spec.placementRef.name", field.ErrorTypeRequired, "Placement"}}},
		{"a bad weight selector", deploymentSpec(""), func(fw *fleetv1alpha1.FederatedWorkload) {
			fw.Spec.Division.Weights = []fleetv1alpha1.ClusterWeight{{ClusterSelector: *selector("region", "not ok!"), Weight: 1}}
		}, []wantErr{{"spec.division.weights[0].clusterSelector.matchLabels", field.ErrorTypeInvalid, "not ok!"}}},
		{"stages per group with a gate", deploymentSpec(""), stages(func(st *fleetv1alpha1.RolloutStages) {
			st.Type = fleetv1alpha1.StagesProgressivePerGroup
			st.MandatoryDecisionGroups = []fleetv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}
			st.Gate = &v1alpha1.Gate{Approval: true, SoakSeconds: 60}
		}), nil},
		{"maxConcurrency is Progressive's", deploymentSpec(""), stages(func(st *fleetv1alpha1.RolloutStages) {
			two := intstr.FromInt32(2)
			st.Type, st.MaxConcurrency = fleetv1alpha1.StagesProgressivePerGroup, &two
		}), []wantErr{{rs + ".stages.maxConcurrency", field.ErrorTypeForbidden, "type Progressive only"}}},
		{"a bad maxFailures", deploymentSpec(""), stages(func(st *fleetv1alpha1.RolloutStages) {
			bad := intstr.FromString("many")
			st.MaxFailures = &bad
		}), []wantErr{{rs + ".stages.maxFailures", field.ErrorTypeInvalid, "percentage"}}},
		{"a mandatory group by name and index", deploymentSpec(""), stages(func(st *fleetv1alpha1.RolloutStages) {
			zero := int32(0)
			st.Type = fleetv1alpha1.StagesProgressive
			st.MandatoryDecisionGroups = []fleetv1alpha1.MandatoryDecisionGroup{{GroupName: "canary", GroupIndex: &zero}}
		}), []wantErr{{rs + ".stages.mandatoryDecisionGroups[0]", field.ErrorTypeInvalid, "exactly one of groupName and groupIndex"}}},
		{"a stage gate does not roll back", deploymentSpec(""), stages(func(st *fleetv1alpha1.RolloutStages) {
			st.Gate = &v1alpha1.Gate{OnFailure: v1alpha1.GateFailureRollback, Analysis: &v1alpha1.GateAnalysis{
				Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://prometheus:9090", Query: "up", SuccessCondition: "result[0] == 1"}}}
		}), []wantErr{{rs + ".stages.gate.onFailure", field.ErrorTypeNotSupported, "Rollback"}}},
		{"a stage gate's analysis is checked as a PodCliqueSet's", deploymentSpec(""), stages(func(st *fleetv1alpha1.RolloutStages) {
			st.Gate = &v1alpha1.Gate{Analysis: &v1alpha1.GateAnalysis{
				Prometheus: &v1alpha1.PrometheusAnalysis{Address: "http://prometheus:9090", Query: "up", SuccessCondition: "os.exit(1)"}}}
		}), []wantErr{{rs + ".stages.gate.analysis.prometheus.successCondition", field.ErrorTypeInvalid, "os.exit(1)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fw := federatedWorkload(tc.template)
			if tc.change != nil {
				tc.change(fw)
			}
			check(t, ValidateFederatedWorkload(fw), tc.want)
		})
	}
}

func TestValidateFederatedWorkloadUpdate_KindIsFixed(t *testing.T) {
	old, fw := federatedWorkload(deploymentSpec("")), federatedWorkload(statefulSetSpec(""))
	check(t, ValidateFederatedWorkloadUpdate(old, fw), []wantErr{{"spec.template.kind", field.ErrorTypeForbidden, "from Deployment to StatefulSet"}})
	check(t, ValidateFederatedWorkloadUpdate(old, federatedWorkload(deploymentSpec(`"minReadySeconds":1,`))), nil)
}
