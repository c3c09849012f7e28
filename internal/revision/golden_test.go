package revision

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-revisions.json")

const goldenFile = "testdata/golden-revisions.json"

// goldenRevisions is testdata/golden-revisions.json: for each example
// PodCliqueSet ("file#name"), its revision name and the hash of every role.
type goldenRevisions struct {
	CanonicalFormVersion int                        `json:"canonicalFormVersion"`
	Revisions            map[string]exampleRevision `json:"revisions"`
}

type exampleRevision struct {
	Name  string            `json:"name"`
	Roles map[string]string `json:"roles"`
}

func revisionOf(t *testing.T, pcs *v1alpha1.PodCliqueSet) exampleRevision {
	t.Helper()
	rev, err := ForSpec(pcs.Name, &pcs.Spec)
	if err != nil {
		t.Fatal(err)
	}
	out := exampleRevision{Name: rev.Name, Roles: map[string]string{}}
	for _, r := range rev.Roles {
		out.Roles[r.Role] = r.Revision
	}
	return out
}

// examplePodCliqueSets reads every PodCliqueSet under examples/, keyed
// "examples/<file>#<name>"; other documents (the fleet's kinds) are skipped.
func examplePodCliqueSets(t *testing.T) map[string]*v1alpha1.PodCliqueSet {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string]*v1alpha1.PodCliqueSet{}
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			var meta struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return err
			}
			if meta.APIVersion != v1alpha1.GroupVersion.String() || meta.Kind != "PodCliqueSet" {
				continue
			}
			pcs := &v1alpha1.PodCliqueSet{}
			if err := yaml.UnmarshalStrict(doc, pcs); err != nil {
				t.Errorf("%s: %v", rel, err)
				continue
			}
			out[filepath.ToSlash(rel)+"#"+pcs.Name] = pcs
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no PodCliqueSet found under examples/")
	}
	return out
}

// TestGoldenRevisions pins the revision of every example PodCliqueSet, defaulted
// as the webhook defaults it. Run with -update to rewrite the golden file, and
// only when rolling every such workload on upgrade is intended.
func TestGoldenRevisions(t *testing.T) {
	got := goldenRevisions{CanonicalFormVersion: CanonicalFormVersion, Revisions: map[string]exampleRevision{}}
	for key, pcs := range examplePodCliqueSets(t) {
		pcs.Default()
		got.Revisions[key] = revisionOf(t, pcs)
	}
	if *update {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/revision/ -update to create it)", err)
	}
	var want goldenRevisions
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if want.CanonicalFormVersion != got.CanonicalFormVersion {
		t.Errorf("CanonicalFormVersion = %d, golden file has %d", got.CanonicalFormVersion, want.CanonicalFormVersion)
	}
	keys := map[string]bool{}
	for k := range want.Revisions {
		keys[k] = true
	}
	for k := range got.Revisions {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		w, inWant := want.Revisions[k]
		g, inGot := got.Revisions[k]
		switch {
		case !inWant:
			t.Errorf("%s: new example, not in %s (run with -update)", k, goldenFile)
		case !inGot:
			t.Errorf("%s: in %s but no longer under examples/ (run with -update)", k, goldenFile)
		default:
			const rolls = "an operator upgrade with this change would roll every such workload (every running PodCliqueSet with templates like it)"
			if w.Name != g.Name {
				t.Errorf("%s: revision = %q, golden %q: %s", k, g.Name, w.Name, rolls)
			}
			for role := range mergeKeys(w.Roles, g.Roles) {
				if w.Roles[role] != g.Roles[role] {
					t.Errorf("%s: hash of role %s = %q, golden %q: %s", k, role, g.Roles[role], w.Roles[role], rolls)
				}
			}
		}
	}
}

func mergeKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
