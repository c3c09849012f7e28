package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/api/limit"
)

// The generated CRDs, installed in a real apiserver, apply the documented
// defaults and reject what the API says is invalid, with the field named.

var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, _ := goruntime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	scheme := runtime.NewScheme()
	if err := fleetv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	env := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "fleet", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		env.BinaryAssetsDirectory = filepath.Join(root, "bin")
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (run `make tools`): %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func TestCRDs_ApplyTheDocumentedDefaults(t *testing.T) {
	ctx := context.Background()
	mc := &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m1"},
		Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretReference{
			Namespace: "lockstep-fleet", Name: "m1",
		}},
	}
	if err := k8s.Create(ctx, mc); err != nil {
		t.Fatalf("creating MemberCluster: %v", err)
	}
	if got := mc.Spec.KubeconfigSecretRef.Key; got != fleetv1alpha1.DefaultKubeconfigKey {
		t.Errorf("kubeconfigSecretRef.key = %q, want %q", got, fleetv1alpha1.DefaultKubeconfigKey)
	}

	p := &fleetv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatalf("creating Placement: %v", err)
	}
	ds := p.Spec.DecisionStrategy
	if got := ds.GroupStrategy.ClustersPerDecisionGroup.String(); got != "100%" {
		t.Errorf("clustersPerDecisionGroup = %q, want 100%%", got)
	}
	if got := ds.UpdateStrategy.Type; got != fleetv1alpha1.RollingUpdateDecisionUpdate {
		t.Errorf("updateStrategy.type = %q, want RollingUpdate", got)
	}

	set := &fleetv1alpha1.MemberClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "everything"}}
	if err := k8s.Create(ctx, set); err != nil {
		t.Fatalf("creating a MemberClusterSet without a spec: %v", err)
	}
	if set.Spec.ClusterSelector != nil {
		t.Errorf("a set without a spec got clusterSelector %v, want none (every cluster)", set.Spec.ClusterSelector)
	}

	fw := obj("FederatedWorkload", "default", "fw", map[string]any{"spec": map[string]any{
		"placementRef": map[string]any{"name": "p"}, "replicas": int64(4),
		"template": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"x-unknown": "kept"}},
	}})
	if err := k8s.Create(ctx, fw); err != nil {
		t.Fatalf("creating FederatedWorkload: %v", err)
	}
	var typed fleetv1alpha1.FederatedWorkload
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(fw), &typed); err != nil {
		t.Fatal(err)
	}
	// The schema's defaults are the API's one default of both halves.
	rs := typed.Spec.RolloutStrategy
	if rs.MaxUnavailable == nil || *rs.MaxUnavailable != intstr.FromInt32(limit.DefaultMaxUnavailable) ||
		rs.MaxSurge == nil || *rs.MaxSurge != intstr.FromInt32(limit.DefaultMaxSurge) {
		t.Errorf("rolloutStrategy = %+v, want maxUnavailable %d, maxSurge %d", rs, limit.DefaultMaxUnavailable, limit.DefaultMaxSurge)
	}
	if got := typed.Spec.MemberLostTimeoutSeconds; got == nil || *got != fleetv1alpha1.DefaultMemberLostTimeoutSeconds {
		t.Errorf("memberLostTimeoutSeconds = %v, want %d", got, fleetv1alpha1.DefaultMemberLostTimeoutSeconds)
	}
	if !strings.Contains(string(typed.Spec.Template.Raw), `"x-unknown":"kept"`) {
		t.Errorf("the template lost its fields: %s", typed.Spec.Template.Raw)
	}
}

// obj builds an unstructured object, so that tests can send what the Go types
// could not express (a missing required field, a wrong type).
func obj(kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetAPIVersion(fleetv1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func placementWith(name string, decisionStrategy map[string]any) *unstructured.Unstructured {
	return obj("Placement", "default", name, map[string]any{"spec": map[string]any{"decisionStrategy": decisionStrategy}})
}

func TestCRDs_RejectInvalidObjectsNamingTheField(t *testing.T) {
	selector := map[string]any{"matchLabels": map[string]any{"region": "eu"}}
	cases := []struct {
		name      string
		obj       *unstructured.Unstructured
		wantField string
	}{
		{"percent 0%", placementWith("zero-pct", map[string]any{"groupStrategy": map[string]any{"clustersPerDecisionGroup": "0%"}}), "clustersPerDecisionGroup"},
		{"percent 101%", placementWith("big-pct", map[string]any{"groupStrategy": map[string]any{"clustersPerDecisionGroup": "101%"}}), "clustersPerDecisionGroup"},
		{"int 0", placementWith("zero-int", map[string]any{"groupStrategy": map[string]any{"clustersPerDecisionGroup": int64(0)}}), "clustersPerDecisionGroup"},
		{"group without selector", placementWith("no-sel", map[string]any{"groupStrategy": map[string]any{
			"decisionGroups": []any{map[string]any{"groupName": "canary"}},
		}}), "groupClusterSelector"},
		{"duplicate group names", placementWith("dup", map[string]any{"groupStrategy": map[string]any{
			"decisionGroups": []any{
				map[string]any{"groupName": "canary", "groupClusterSelector": selector},
				map[string]any{"groupName": "canary", "groupClusterSelector": selector},
			},
		}}), "decisionGroups"},
		{"bad update type", placementWith("bad-type", map[string]any{"updateStrategy": map[string]any{"type": "Sometimes"}}), "updateStrategy.type"},
		{"secret ref without name", obj("MemberCluster", "", "no-name", map[string]any{"spec": map[string]any{
			"kubeconfigSecretRef": map[string]any{"namespace": "lockstep-fleet"},
		}}), "kubeconfigSecretRef.name"},
		{"template without kind", obj("FederatedWorkload", "default", "no-kind", map[string]any{"spec": map[string]any{
			"placementRef": map[string]any{"name": "p"}, "replicas": int64(1), "template": map[string]any{"apiVersion": "apps/v1", "spec": map[string]any{}},
		}}), "template.kind"},
		{"negative replicas", obj("FederatedWorkload", "default", "neg", map[string]any{"spec": map[string]any{
			"placementRef": map[string]any{"name": "p"}, "replicas": int64(-1), "template": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"},
		}}), "spec.replicas"},
		{"secret ref without namespace", obj("MemberCluster", "", "no-ns", map[string]any{"spec": map[string]any{
			"kubeconfigSecretRef": map[string]any{"name": "m1"},
		}}), "kubeconfigSecretRef.namespace"},
		{"binding not named after its set", obj("MemberClusterSetBinding", "default", "gold", map[string]any{"spec": map[string]any{
			"clusterSet": "silver",
		}}), "spec.clusterSet"},
		{"binding without a set", obj("MemberClusterSetBinding", "default", "none", map[string]any{"spec": map[string]any{}}), "spec.clusterSet"},
		{"placement naming an empty set", obj("Placement", "default", "empty-set", map[string]any{"spec": map[string]any{
			"clusterSets": []any{""},
		}}), "spec.clusterSets"},
		{"placement naming a set twice", obj("Placement", "default", "dup-set", map[string]any{"spec": map[string]any{
			"clusterSets": []any{"gold", "gold"},
		}}), "spec.clusterSets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := k8s.Create(context.Background(), tc.obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error does not name %s: %v", tc.wantField, err)
			}
		})
	}
}

func TestCRDs_APlacementDecisionNeverHoldsMoreThan100Clusters(t *testing.T) {
	ctx := context.Background()
	pd := &fleetv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Name: "p-decision-1", Namespace: "default",
		Labels: map[string]string{fleetv1alpha1.LabelPlacement: "p"},
	}}
	if err := k8s.Create(ctx, pd); err != nil {
		t.Fatalf("creating PlacementDecision: %v", err)
	}
	for i := range fleetv1alpha1.MaxClustersPerDecision {
		pd.Status.Decisions = append(pd.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: fmt.Sprintf("cluster%03d", i)})
	}
	if err := k8s.Status().Update(ctx, pd); err != nil {
		t.Fatalf("writing 100 decisions: %v", err)
	}
	pd.Status.Decisions = append(pd.Status.Decisions, fleetv1alpha1.ClusterDecision{ClusterName: "cluster100"})
	err := k8s.Status().Update(ctx, pd)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.decisions") {
		t.Fatalf("writing 101 decisions: got %v, want Invalid naming status.decisions", err)
	}
}
