package chart

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var update = flag.Bool("update", false, "rewrite the golden renders in testdata/golden")

// valueCases are the values the chart is rendered, linted and compared with.
var valueCases = []struct {
	name string
	sets []string
}{
	{"default", nil},
	{"single-replica-no-pdb", []string{"replicaCount=1", "leaderElection.enabled=false", "podDisruptionBudget.enabled=false"}},
	{"cert-manager", []string{"webhook.certificates.source=certManager"}},
	{"cert-manager-cluster-issuer", []string{"webhook.certificates.source=certManager", "webhook.certificates.certManager.issuerRef.kind=ClusterIssuer", "webhook.certificates.certManager.issuerRef.name=corp-ca"}},
	{"existing-secret", []string{"webhook.certificates.source=secret", "webhook.certificates.secretName=lockstep-tls", "webhook.certificates.caBundle=Q0EK"}},
	{"monitoring", []string{"metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "metrics.dashboard.enabled=true"}},
	{"scheduling", []string{"nodeSelector.node-role\\.kubernetes\\.io/control-plane=", "tolerations[0].key=node-role.kubernetes.io/control-plane", "tolerations[0].effect=NoSchedule", "priorityClassName=system-cluster-critical", "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=100", "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=kubernetes.io/hostname"}},
	{"hub", []string{"hub.enabled=true"}},
	{"hub-analysis", []string{"hub.enabled=true", "hub.analysis.prometheusAddresses[0]=http://prometheus.monitoring:9090", "hub.analysis.webhookURLPrefixes[0]=https://gates.example.com/lockstep"}},
}

func TestLint_StrictOverEveryValueCase(t *testing.T) {
	for _, c := range valueCases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir(t)}
			for _, s := range c.sets {
				args = append(args, "--set", s)
			}
			if out, err := run(t, tool(t, "helm"), args...); err != nil {
				t.Fatalf("helm lint --strict: %v\n%s", err, out)
			}
		})
	}
}

func TestTemplate_MatchesGoldenRenders(t *testing.T) {
	for _, c := range valueCases {
		t.Run(c.name, func(t *testing.T) {
			got := []byte(mustRender(t, c.sets...))
			path := filepath.Join("testdata", "golden", c.name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run 'make chart-golden' to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the render differs from %s; review the change and run 'make chart-golden':\n%s", path, lineDiff(string(want), string(got)))
			}
		})
	}
}

// lineDiff shows the first lines that differ, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  golden: %s\n  render: %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}

func TestSchema_RejectsWrongValuesAtInstall(t *testing.T) {
	for _, c := range []struct {
		set, why string
	}{
		{"replicaCount=two", "got string, want integer"},
		{"replicaCount=0", "minimum"},
		{"webhook.certificates.source=vault", "must be one of"},
		{"logLevel=verbose", "must be one of"},
		{"image.pullPolicy=Sometimes", "must be one of"},
		{"metrics.prometheusRule.reconcileErrorRatio=2", "maximum"},
		{"webhook.port=70000", "maximum"},
		{"resources.requests.cpu=lots", "resources"},
		{"unknownKey=1", "additional properties 'unknownKey' not allowed"},
		{"webhook.certificates.certManager.duration=90days", "duration"},
	} {
		t.Run(c.set, func(t *testing.T) {
			_, err := render(t, c.set)
			if err == nil {
				t.Fatalf("helm template accepted %s", c.set)
			}
			if !strings.Contains(err.Error(), c.why) {
				t.Fatalf("helm template rejected %s for another reason: %v", c.set, err)
			}
		})
	}
}

func TestTemplate_SecretSourceNeedsSecretAndCA(t *testing.T) {
	if _, err := render(t, "webhook.certificates.source=secret", "webhook.certificates.caBundle=Q0EK"); err == nil || !strings.Contains(err.Error(), "secretName is required") {
		t.Fatalf("want secretName required, got %v", err)
	}
	if _, err := render(t, "webhook.certificates.source=secret", "webhook.certificates.secretName=s"); err == nil || !strings.Contains(err.Error(), "caBundle is required") {
		t.Fatalf("want caBundle required, got %v", err)
	}
}

func TestCRDs_AreTheGeneratedOnesByteForByte(t *testing.T) {
	root := repoRoot(t)
	for _, pair := range [][2]string{
		{"config/crd/bases", "charts/lockstep/crds"},
		{"config/fleet/crd/bases", "charts/lockstep/files/fleet-crds"},
	} {
		generated, _ := filepath.Glob(filepath.Join(root, pair[0], "*.yaml"))
		inChart, _ := filepath.Glob(filepath.Join(root, pair[1], "*.yaml"))
		if len(generated) == 0 || len(generated) != len(inChart) {
			t.Fatalf("%s has %d CRDs, %s has %d: run 'make generate'", pair[0], len(generated), pair[1], len(inChart))
		}
		for _, g := range generated {
			want, _ := os.ReadFile(g)
			got, err := os.ReadFile(filepath.Join(root, pair[1], filepath.Base(g)))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s differs from %s (%v): run 'make generate'", pair[1], filepath.Base(g), g, err)
			}
		}
	}
}

func TestWebhooks_AreTheGeneratedOnesPointedAtTheRelease(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string]*unstructured.Unstructured{}
	for _, o := range objects(t, string(raw)) {
		generated[o.GetKind()] = o
	}
	objs := objects(t, mustRender(t))
	for kind, name := range map[string]string{
		"MutatingWebhookConfiguration":   "lockstep-mutating-webhook-configuration",
		"ValidatingWebhookConfiguration": "lockstep-validating-webhook-configuration",
	} {
		got, want := webhooksOf(find(t, objs, kind, name)), webhooksOf(generated[kind])
		if len(got) == 0 || len(got) != len(want) {
			t.Fatalf("%s: %d webhooks, generated %d", kind, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			svc := g["clientConfig"].(map[string]any)["service"].(map[string]any)
			if svc["name"] != "lockstep-webhook" || svc["namespace"] != "lockstep-system" {
				t.Errorf("%s %s: service %v, want lockstep-system/lockstep-webhook", kind, g["name"], svc)
			}
			wantPath := w["clientConfig"].(map[string]any)["service"].(map[string]any)["path"]
			if g["name"] != w["name"] || svc["path"] != wantPath || !reflect.DeepEqual(g["rules"], w["rules"]) {
				t.Errorf("%s: webhook %v (path %v) differs from the generated %v (path %v)", kind, g["name"], svc["path"], w["name"], wantPath)
			}
		}
	}
}

func webhooksOf(o *unstructured.Unstructured) []map[string]any {
	list, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	out := make([]map[string]any, 0, len(list))
	for _, w := range list {
		out = append(out, w.(map[string]any))
	}
	return out
}

func TestDeployment_OperatorFlagsFollowTheCertificateSource(t *testing.T) {
	for _, c := range []struct {
		sets       []string
		certSecret string
	}{
		{nil, "--cert-secret=lockstep-webhook-server-cert"},
		{[]string{"webhook.certificates.source=certManager"}, "--cert-secret="},
		{[]string{"webhook.certificates.source=secret", "webhook.certificates.secretName=mine", "webhook.certificates.caBundle=Q0EK"}, "--cert-secret="},
	} {
		objs := objects(t, mustRender(t, c.sets...))
		d := find(t, objs, "Deployment", "lockstep-operator")
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		found := false
		for _, a := range args {
			found = found || a == c.certSecret
		}
		if !found {
			t.Errorf("%v: args %v lack %s", c.sets, args, c.certSecret)
		}
	}
}
