package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// generatedRoles are the role files controller-gen writes from the code's
// RBAC markers, and how the chart names what they grant for a release
// "prod" in namespace "platform" with the fleet namespace "fleet".
var generatedRoles = []struct {
	file, name string
	// namespaces maps a generated Role's namespace to the release's.
	namespaces map[string]string
	// roleNames maps a generated Role's namespace to the chart's Role name.
	roleNames map[string]string
	// resourceNames maps the binaries' default object names to the release's.
	resourceNames map[string]string
}{
	{
		file: "config/rbac/role.yaml", name: "prod-lockstep-operator",
		namespaces: map[string]string{"lockstep-system": "platform"},
		roleNames:  map[string]string{"lockstep-system": "prod-lockstep-operator"},
		resourceNames: map[string]string{
			"lockstep-webhook-server-cert":              "prod-lockstep-webhook-server-cert",
			"lockstep-mutating-webhook-configuration":   "prod-lockstep-mutating-webhook-configuration",
			"lockstep-validating-webhook-configuration": "prod-lockstep-validating-webhook-configuration",
		},
	},
	{
		file: "config/fleet/rbac/role.yaml", name: "prod-lockstep-hub",
		namespaces: map[string]string{"lockstep-system": "platform", "lockstep-fleet": "fleet"},
		roleNames:  map[string]string{"lockstep-system": "prod-lockstep-hub", "lockstep-fleet": "prod-lockstep-hub-fleet"},
		resourceNames: map[string]string{
			"lockstep-hub-webhook-server-cert":                "prod-lockstep-hub-webhook-server-cert",
			"lockstep-fleet-validating-webhook-configuration": "prod-lockstep-fleet-validating-webhook-configuration",
		},
	},
	{file: "config/fleet/member-rbac/role.yaml", name: "prod-lockstep-fleet-member"},
}

// TestRBAC_ChartGrantsExactlyTheGeneratedRoles holds every role of the chart
// (operator, hub, member) equal to what the code's markers generate: the same
// rules, in the namespaces and with the object names of the release.
func TestRBAC_ChartGrantsExactlyTheGeneratedRoles(t *testing.T) {
	out, err := renderAs(t, "prod", "platform", "hub.enabled=true", "hub.fleetNamespace=fleet", "member.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	rendered := objects(t, out)
	for _, g := range generatedRoles {
		docs := objects(t, readFile(t, g.file))
		if len(docs) == 0 {
			t.Fatalf("%s holds no role", g.file)
		}
		for _, want := range docs {
			name, ns := g.name, ""
			if want.GetKind() == "Role" {
				name, ns = g.roleNames[want.GetNamespace()], g.namespaces[want.GetNamespace()]
			}
			got := findIn(rendered, want.GetKind(), ns, name)
			if got == nil {
				t.Errorf("%s: the chart renders no %s %s/%s", g.file, want.GetKind(), ns, name)
				continue
			}
			wantRules := renamed(want.Object["rules"], g.resourceNames)
			if !reflect.DeepEqual(got.Object["rules"], wantRules) {
				t.Errorf("%s: the chart's %s %s differs from the generated one:\nchart:     %v\ngenerated: %v", g.file, want.GetKind(), name, got.Object["rules"], wantRules)
			}
			binding := findIn(rendered, want.GetKind()+"Binding", ns, name)
			if binding == nil {
				t.Errorf("%s: no %sBinding %s", g.file, want.GetKind(), name)
			}
		}
	}
	// Every role the chart renders is one of the generated ones.
	for _, o := range rendered {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		known := false
		for _, g := range generatedRoles {
			known = known || o.GetName() == g.name || slices.Contains(values(g.roleNames), o.GetName())
		}
		if !known {
			t.Errorf("the chart renders %s %s, which no marker generates", o.GetKind(), o.GetName())
		}
	}
}

// TestRBAC_NoClusterWideSecretAccess: neither the generated roles nor any
// render of the chart give a ClusterRole any right on Secrets; the operator
// and the hub reach Secrets only through Roles of their own namespaces.
func TestRBAC_NoClusterWideSecretAccess(t *testing.T) {
	var roles []*unstructured.Unstructured
	for _, g := range generatedRoles {
		roles = append(roles, objects(t, readFile(t, g.file))...)
	}
	for _, c := range append(valueCases, struct {
		name string
		sets []string
	}{"hub-and-member", []string{"hub.enabled=true", "member.enabled=true"}}) {
		roles = append(roles, objects(t, mustRender(t, c.sets...))...)
	}
	checked := 0
	for _, o := range roles {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		checked++
		if bad := secretRules(o); len(bad) > 0 {
			t.Errorf("ClusterRole %s grants on Secrets cluster-wide: %v", o.GetName(), bad)
		}
	}
	if checked == 0 {
		t.Fatal("no ClusterRole checked")
	}
}

// TestRBAC_SecretRuleCheckCatchesAClusterWideGrant shows the check above
// fails on the rule this chart used to have.
func TestRBAC_SecretRuleCheckCatchesAClusterWideGrant(t *testing.T) {
	old := &unstructured.Unstructured{Object: map[string]any{"kind": "ClusterRole", "rules": []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"create", "get", "list", "patch", "update", "watch"}},
	}}}
	if len(secretRules(old)) == 0 {
		t.Fatal("a ClusterRole with every verb on secrets passed the check")
	}
	wildcard := &unstructured.Unstructured{Object: map[string]any{"kind": "ClusterRole", "rules": []any{
		map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"list"}},
	}}}
	if len(secretRules(wildcard)) == 0 {
		t.Fatal("a ClusterRole listing every resource passed the check")
	}
}

// secretRules are the rules of a role that reach Secrets of the core group.
func secretRules(role *unstructured.Unstructured) []any {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var bad []any
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		if (slices.Contains(groups, "") || slices.Contains(groups, "*")) &&
			(slices.Contains(resources, "secrets") || slices.Contains(resources, "*")) {
			bad = append(bad, rule)
		}
	}
	return bad
}

// renamed is rules with each resourceName replaced through names.
func renamed(rules any, names map[string]string) any {
	out, _ := yamlCopy(rules).([]any)
	for _, r := range out {
		rule := r.(map[string]any)
		list, ok := rule["resourceNames"].([]any)
		if !ok {
			continue
		}
		for i, n := range list {
			if to, ok := names[n.(string)]; ok {
				list[i] = to
			}
		}
	}
	return out
}

func yamlCopy(v any) any {
	raw, err := yaml.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := yaml.Unmarshal(raw, &out); err != nil {
		return nil
	}
	return out
}

func findIn(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name && o.GetNamespace() == namespace {
			return o
		}
	}
	return nil
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
