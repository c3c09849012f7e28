package fleet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/fleet/align"
	"github.com/lockstep-dev/lockstep/internal/fleet/member"
	"github.com/lockstep-dev/lockstep/internal/testenv"
)

// The hub's apiserver calls the fleet webhooks: invalid objects are rejected
// with the field named.
func TestAdmission_FleetObjectsAreValidatedWithTheFieldNamed(t *testing.T) {
	ns := newNamespace(t, "admission")
	pct := intstr.FromString("30%")
	cases := []struct {
		name  string
		obj   interface{ GetName() string }
		field string
		// rule, when set, is a part of the message that says the rule broken.
		rule string
	}{{
		name: "duplicate group names",
		obj: &fleetv1alpha1.Placement{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dup"},
			Spec: fleetv1alpha1.PlacementSpec{DecisionStrategy: fleetv1alpha1.DecisionStrategy{GroupStrategy: fleetv1alpha1.GroupStrategy{
				ClustersPerDecisionGroup: &pct,
				DecisionGroups: []fleetv1alpha1.DecisionGroup{
					{GroupName: "canary", GroupClusterSelector: &metav1.LabelSelector{}},
					{GroupName: "canary", GroupClusterSelector: &metav1.LabelSelector{}},
				},
			}}},
		},
		field: "spec.decisionStrategy.groupStrategy.decisionGroups",
	}, {
		name: "a selector that is not one",
		obj: &fleetv1alpha1.Placement{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "badsel"},
			Spec: fleetv1alpha1.PlacementSpec{ClusterSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "gpu", Operator: "Near"}},
			}},
		},
		field: "spec.clusterSelector.matchExpressions[0].operator",
	}, {
		name: "a Secret namespace that is no namespace name",
		obj: &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "admission-bad-secret-ns"},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: "Not_A_Namespace", Name: "m1",
			}},
		},
		field: "spec.kubeconfigSecretRef.namespace",
	}, {
		name: "a Secret outside the fleet namespace",
		obj: &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "admission-secret-elsewhere"},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
				Namespace: "kube-system", Name: "m1",
			}},
		},
		field: "spec.kubeconfigSecretRef.namespace",
		rule:  `must be the hub's fleet namespace "` + testenv.FleetNamespace + `"`,
	}, {
		name: "a Deployment template with its own rollout limits",
		obj: &fleetv1alpha1.FederatedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-limits"},
			Spec: fleetv1alpha1.FederatedWorkloadSpec{
				PlacementRef: fleetv1alpha1.PlacementReference{Name: "p"}, Replicas: 4,
				Template: runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"strategy":{"rollingUpdate":{"maxSurge":2}},"template":{}}}`)},
			},
		},
		field: "spec.template.spec.strategy.rollingUpdate.maxSurge",
	}, {
		name: "a ReplicaRecreate PodCliqueSet template with its own surge",
		obj: &fleetv1alpha1.FederatedWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-surge"},
			Spec: fleetv1alpha1.FederatedWorkloadSpec{
				PlacementRef: fleetv1alpha1.PlacementReference{Name: "p"}, Replicas: 4,
				Template: runtime.RawExtension{Raw: []byte(podCliqueSetTemplate(`{"type":"ReplicaRecreate","rollingUpdate":{"maxSurge":1}}`))},
			},
		},
		field: "spec.template.spec.updateStrategy.rollingUpdate.maxSurge",
		rule:  "the hub sets it from spec.rolloutStrategy",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch o := tc.obj.(type) {
			case *fleetv1alpha1.Placement:
				err = hubEnv.Client.Create(context.Background(), o)
			case *fleetv1alpha1.MemberCluster:
				err = hubEnv.Client.Create(context.Background(), o)
			case *fleetv1alpha1.FederatedWorkload:
				err = hubEnv.Client.Create(context.Background(), o)
			}
			if err == nil {
				t.Fatalf("%s was admitted", tc.obj.GetName())
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.rule) {
				t.Errorf("error does not say %q: %v", tc.rule, err)
			}
		})
	}
}

// Every fleet example is admitted by the hub's apiserver and its webhooks,
// every document of it in order (namespaced ones into the test's namespace).
func TestAdmission_AcceptsEveryFleetExample(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "examples", "fleet", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fleet examples found (%v)", err)
	}
	ns := newNamespace(t, "examples")
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				js, err := yaml.YAMLToJSON(doc)
				if err != nil {
					t.Fatal(err)
				}
				if string(bytes.TrimSpace(js)) == "null" {
					continue // only comments
				}
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(js); err != nil {
					t.Fatal(err)
				}
				namespaced, err := hubEnv.Client.IsObjectNamespaced(u)
				if err != nil {
					t.Fatal(err)
				}
				if namespaced {
					u.SetNamespace(ns)
				}
				if err := hubEnv.Client.Create(context.Background(), u); err != nil {
					t.Fatalf("example rejected: %s %s: %v", u.GetKind(), u.GetName(), err)
				}
			}
		})
	}
}

// podCliqueSetTemplate is a FederatedWorkload template of a PodCliqueSet
// with the given spec.updateStrategy.
func podCliqueSetTemplate(updateStrategy string) string {
	return `{"apiVersion":"lockstep.dev/v1alpha1","kind":"PodCliqueSet","spec":{"updateStrategy":` + updateStrategy +
		`,"template":{"cliques":[{"name":"web","replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"web:1"}]}}}]}}}`
}

// The hub admits PodCliqueSet templates of either type that leave the
// rollout limits to it, and a member's PodCliqueSet CRD admits what the hub
// writes from them: the limits under ReplicaRecreate, none under
// RollingUpdate, where the CRD would refuse them.
func TestAdmission_PodCliqueSetMembersHoldTheLimitsTheirTypeTakes(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "pcs-limits")
	memberNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pcs-limits-"}}
	if err := memberEnv.Client.Create(ctx, memberNS); err != nil {
		t.Fatal(err)
	}
	for _, ty := range []string{"RollingUpdate", "ReplicaRecreate"} {
		t.Run(ty, func(t *testing.T) {
			name := strings.ToLower(ty)
			raw := podCliqueSetTemplate(`{"type":"` + ty + `"}`)
			fw := &fleetv1alpha1.FederatedWorkload{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: fleetv1alpha1.FederatedWorkloadSpec{
					PlacementRef: fleetv1alpha1.PlacementReference{Name: "p"}, Replicas: 4,
					Template: runtime.RawExtension{Raw: []byte(raw)},
				},
			}
			if err := hubEnv.Client.Create(ctx, fw); err != nil {
				t.Fatalf("the hub refused the template: %v", err)
			}
			tmpl, err := member.ParseTemplate([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			obj, err := member.Build(member.Object{Template: tmpl, Namespace: memberNS.Name, Name: name, Replicas: 2,
				Grant: align.Grant{Started: true, Partition: 1}})
			if err != nil {
				t.Fatal(err)
			}
			_, hasSurge, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "updateStrategy", "rollingUpdate", "maxSurge")
			if hasSurge != (ty == "ReplicaRecreate") {
				t.Fatalf("the member object holds maxSurge: %v", hasSurge)
			}
			if err := memberEnv.Client.Create(ctx, obj); err != nil {
				t.Fatalf("the member refused what the hub writes: %v", err)
			}
			if ty != "RollingUpdate" {
				return
			}
			// Why the hub writes no limits there: the CRD refuses them.
			bad := obj.DeepCopy()
			bad.SetName(name + "-with-limits")
			bad.SetResourceVersion("")
			_ = unstructured.SetNestedField(bad.Object, int64(0), "spec", "updateStrategy", "rollingUpdate", "maxSurge")
			if err := memberEnv.Client.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "only allowed with type ReplicaRecreate") {
				t.Fatalf("a RollingUpdate PodCliqueSet with maxSurge: %v", err)
			}
		})
	}
}
