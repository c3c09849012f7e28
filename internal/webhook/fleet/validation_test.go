package fleet

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
)

func memberCluster() *fleetv1alpha1.MemberCluster {
	return &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m1"},
		Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
			Namespace: "lockstep-fleet", Name: "m1", Key: "kubeconfig",
		}},
	}
}

func selector(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

// placement is a valid Placement with two predefined groups.
func placement() *fleetv1alpha1.Placement {
	pct := intstr.FromString("25%")
	return &fleetv1alpha1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-fleet", Namespace: "default"},
		Spec: fleetv1alpha1.PlacementSpec{
			ClusterSelector: selector("gpu", "true"),
			DecisionStrategy: fleetv1alpha1.DecisionStrategy{
				GroupStrategy: fleetv1alpha1.GroupStrategy{
					ClustersPerDecisionGroup: &pct,
					DecisionGroups: []fleetv1alpha1.DecisionGroup{
						{GroupName: "canary", GroupClusterSelector: selector("canary", "true")},
						{GroupName: "eu", GroupClusterSelector: selector("region", "eu")},
					},
				},
				UpdateStrategy: fleetv1alpha1.DecisionUpdateStrategy{Type: fleetv1alpha1.RollingUpdateDecisionUpdate},
			},
		},
	}
}

func perGroup(s string) func(*fleetv1alpha1.Placement) {
	return func(p *fleetv1alpha1.Placement) {
		v := intstr.Parse(s)
		p.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = &v
	}
}

// wantErr is one expected error: its field path, its type and a part of its text.
type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string
}

func check(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs.ToAggregate())
	}
	for i, w := range want {
		e := errs[i]
		if e.Field != w.field || e.Type != w.typ || !strings.Contains(e.Error(), w.detail) {
			t.Errorf("error %d = %q (%s), want field %s, type %s, text containing %q", i, e.Error(), e.Type, w.field, w.typ, w.detail)
		}
	}
}

func TestValidatePlacement(t *testing.T) {
	const cpdg = "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"
	cases := []struct {
		name   string
		change func(*fleetv1alpha1.Placement)
		want   []wantErr
	}{
		{"valid", func(*fleetv1alpha1.Placement) {}, nil},
		{"defaults left unset are valid", func(p *fleetv1alpha1.Placement) {
			p.Spec = fleetv1alpha1.PlacementSpec{}
		}, nil},
		{"100% is the largest percentage", perGroup("100%"), nil},
		{"1% is the smallest percentage", perGroup("1%"), nil},
		{"an integer of 1", perGroup("1"), nil},
		{"0% is rejected", perGroup("0%"), []wantErr{{cpdg, field.ErrorTypeInvalid, "(0%, 100%]"}}},
		{"101% is rejected", perGroup("101%"), []wantErr{{cpdg, field.ErrorTypeInvalid, "(0%, 100%]"}}},
		{"0 is rejected", perGroup("0"), []wantErr{{cpdg, field.ErrorTypeInvalid, "at least 1"}}},
		{"a negative integer is rejected", perGroup("-3"), []wantErr{{cpdg, field.ErrorTypeInvalid, "at least 1"}}},
		{"a string that is no percentage is rejected", perGroup("half"), []wantErr{{cpdg, field.ErrorTypeInvalid, "percentage"}}},
		{"a padded percentage is rejected", perGroup("050%"), []wantErr{{cpdg, field.ErrorTypeInvalid, "percentage"}}},
		{"a group without a selector", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[1].GroupClusterSelector = nil
		}, []wantErr{{"spec.decisionStrategy.groupStrategy.decisionGroups[1].groupClusterSelector", field.ErrorTypeRequired, "needs a selector"}}},
		{"an empty selector takes the rest and is valid", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[1].GroupClusterSelector = &metav1.LabelSelector{}
		}, nil},
		{"duplicate group names", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[1].GroupName = "canary"
		}, []wantErr{{"spec.decisionStrategy.groupStrategy.decisionGroups[1].groupName", field.ErrorTypeDuplicate, "canary"}}},
		{"a group without a name", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[0].GroupName = ""
		}, []wantErr{{"spec.decisionStrategy.groupStrategy.decisionGroups[0].groupName", field.ErrorTypeRequired, "name the group"}}},
		{"a group name that is no label value", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[0].GroupName = "canary clusters"
		}, []wantErr{{"spec.decisionStrategy.groupStrategy.decisionGroups[0].groupName", field.ErrorTypeInvalid, fleetv1alpha1.LabelDecisionGroupName}}},
		{"a bad group selector", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[0].GroupClusterSelector = &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}},
			}
		}, []wantErr{{"spec.decisionStrategy.groupStrategy.decisionGroups[0].groupClusterSelector.matchExpressions[0].operator", field.ErrorTypeInvalid, "Near"}}},
		{"a bad cluster selector", func(p *fleetv1alpha1.Placement) {
			p.Spec.ClusterSelector = selector("gpu", "not a value!")
		}, []wantErr{{"spec.clusterSelector.matchLabels", field.ErrorTypeInvalid, "not a value!"}}},
		{"a bad update strategy type", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.UpdateStrategy.Type = "Sometimes"
		}, []wantErr{{"spec.decisionStrategy.updateStrategy.type", field.ErrorTypeNotSupported, `"RollingUpdate", "All"`}}},
		{"All is supported", func(p *fleetv1alpha1.Placement) {
			p.Spec.DecisionStrategy.UpdateStrategy.Type = fleetv1alpha1.AllDecisionUpdate
		}, nil},
		{"every error at once", func(p *fleetv1alpha1.Placement) {
			perGroup("0%")(p)
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[1].GroupName = "canary"
			p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups[1].GroupClusterSelector = nil
			p.Spec.DecisionStrategy.UpdateStrategy.Type = "Sometimes"
		}, []wantErr{
			{cpdg, field.ErrorTypeInvalid, "(0%, 100%]"},
			{"spec.decisionStrategy.groupStrategy.decisionGroups[1].groupName", field.ErrorTypeDuplicate, "canary"},
			{"spec.decisionStrategy.groupStrategy.decisionGroups[1].groupClusterSelector", field.ErrorTypeRequired, "selector"},
			{"spec.decisionStrategy.updateStrategy.type", field.ErrorTypeNotSupported, "Sometimes"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := placement()
			tc.change(p)
			check(t, ValidatePlacement(p), tc.want)
		})
	}
}

func TestValidateMemberCluster(t *testing.T) {
	const ref = "spec.kubeconfigSecretRef"
	cases := []struct {
		name   string
		change func(*fleetv1alpha1.MemberCluster)
		want   []wantErr
	}{
		{"valid", func(*fleetv1alpha1.MemberCluster) {}, nil},
		{"key left to its default", func(m *fleetv1alpha1.MemberCluster) { m.Spec.KubeconfigSecretRef.Key = "" }, nil},
		{"no name", func(m *fleetv1alpha1.MemberCluster) { m.Spec.KubeconfigSecretRef.Name = "" },
			[]wantErr{{ref + ".name", field.ErrorTypeRequired, "Secret"}}},
		{"no namespace", func(m *fleetv1alpha1.MemberCluster) { m.Spec.KubeconfigSecretRef.Namespace = "" },
			[]wantErr{{ref + ".namespace", field.ErrorTypeRequired, "cluster-scoped"}}},
		{"a Secret outside the fleet namespace", func(m *fleetv1alpha1.MemberCluster) { m.Spec.KubeconfigSecretRef.Namespace = "kube-system" },
			[]wantErr{{ref + ".namespace", field.ErrorTypeInvalid, `must be the hub's fleet namespace "lockstep-fleet"`}}},
		{"a name that is no object name", func(m *fleetv1alpha1.MemberCluster) { m.Spec.KubeconfigSecretRef.Name = "M1_secret" },
			[]wantErr{{ref + ".name", field.ErrorTypeInvalid, "M1_secret"}}},
		{"a key that is no Secret key", func(m *fleetv1alpha1.MemberCluster) { m.Spec.KubeconfigSecretRef.Key = "kube/config" },
			[]wantErr{{ref + ".key", field.ErrorTypeInvalid, "kube/config"}}},
		{"an empty reference", func(m *fleetv1alpha1.MemberCluster) {
			m.Spec.KubeconfigSecretRef = fleetv1alpha1.KubeconfigSecretReference{}
		}, []wantErr{{ref + ".namespace", field.ErrorTypeRequired, ""}, {ref + ".name", field.ErrorTypeRequired, ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := memberCluster()
			tc.change(m)
			check(t, ValidateMemberCluster(m, "lockstep-fleet"), tc.want)
		})
	}
}
