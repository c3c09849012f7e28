// Package chart tests the Helm chart in charts/lockstep with the real helm and
// promtool binaries (built into bin/ by make): lint, renders against golden
// files, the schema, the generated CRDs, RBAC and webhooks it carries, and the
// alerts and dashboard it ships. The real install is in test/e2e/chart.
package chart

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// tool returns the path of a binary in bin/ ($LOCKSTEP_BIN when set). A missing
// binary fails the test: CI must not pass by running nothing.
func tool(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("LOCKSTEP_BIN")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "bin")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v (run 'make %s' or 'make test-unit', which build it)", name, err, filepath.Join("bin", name))
	}
	return path
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), "charts", "lockstep") }

// run runs a binary and returns its standard output; a failure carries stderr.
func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		return stdout.String(), errors.Join(err, errors.New(stderr.String()))
	}
	return stdout.String(), nil
}

// render runs helm template with --set style values and returns the manifest.
func render(t *testing.T, sets ...string) (string, error) {
	t.Helper()
	return renderAs(t, "lockstep", "lockstep-system", sets...)
}

// renderAs renders the chart as release name in namespace.
func renderAs(t *testing.T, release, namespace string, sets ...string) (string, error) {
	t.Helper()
	args := []string{"template", release, chartDir(t), "--namespace", namespace}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return run(t, tool(t, "helm"), args...)
}

func mustRender(t *testing.T, sets ...string) string {
	t.Helper()
	out, err := render(t, sets...)
	if err != nil {
		t.Fatalf("helm template %v: %v", sets, err)
	}
	return out
}

// objects parses a multi-document manifest.
func objects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("parsing the render: %v", err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in the render", kind, name)
	return nil
}
