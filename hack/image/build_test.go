package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestImage_RunsTheOperatorAsNonRootWithoutAShell builds the image as make
// image does, then reads the tarball with nothing but archive/tar: the OCI
// index names the chart's default image, the config runs /lockstep as 65532,
// the only layer holds no shell, and the binary unpacked from it runs.
func TestImage_RunsTheOperatorAsNonRootWithoutAShell(t *testing.T) {
	out := filepath.Join(t.TempDir(), "lockstep.tar")
	ref, err := build(options{repo: "../..", out: out, arch: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	chartImage, err := chartDefaultImage("../..")
	if err != nil {
		t.Fatal(err)
	}
	if ref != chartImage {
		t.Fatalf("image %s, chart default %s", ref, chartImage)
	}
	files := untar(t, readFile(t, out))

	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	decode(t, files["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != chartImage {
		t.Fatalf("index.json: %+v, want one manifest named %s", index.Manifests, chartImage)
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest, MediaType string }
	}
	decode(t, blob(t, files, index.Manifests[0].Digest), &manifest)
	var config struct {
		OS, Architecture string
		Config           struct {
			User       string
			Entrypoint []string
		}
	}
	decode(t, blob(t, files, manifest.Config.Digest), &config)
	if config.Config.User != "65532:65532" || !slices.Equal(config.Config.Entrypoint, []string{"/lockstep"}) || config.OS != "linux" || config.Architecture != runtime.GOARCH {
		t.Fatalf("config: %+v", config)
	}
	var dockerManifest []struct{ RepoTags []string }
	decode(t, files["manifest.json"], &dockerManifest)
	if len(dockerManifest) != 1 || !slices.Equal(dockerManifest[0].RepoTags, []string{chartImage}) {
		t.Fatalf("manifest.json (docker load): %+v", dockerManifest)
	}

	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0].Digest)))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	rootfs := untar(t, layer)
	var names []string
	for name := range rootfs {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"etc/", "etc/group", "etc/passwd", "lockstep", "tmp/"}; !slices.Equal(names, want) {
		t.Fatalf("the image holds %v, want exactly %v (no shell, nothing else)", names, want)
	}

	bin := filepath.Join(t.TempDir(), "lockstep")
	if err := os.WriteFile(bin, rootfs["lockstep"], 0o755); err != nil {
		t.Fatal(err)
	}
	help, err := exec.CommandContext(t.Context(), bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("/lockstep --help: %v\n%s", err, help)
	}
	for _, cmd := range []string{"operator", "plan"} {
		if !strings.Contains(string(help), cmd) {
			t.Errorf("/lockstep --help does not list %q:\n%s", cmd, help)
		}
	}
	if static, err := exec.CommandContext(t.Context(), "go", "version", "-m", bin).CombinedOutput(); err != nil || !strings.Contains(string(static), "CGO_ENABLED=0") {
		t.Errorf("the binary is not built with CGO_ENABLED=0 (%v):\n%s", err, static)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// untar maps entry names to contents (directories to nil).
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
}

func blob(t *testing.T, files map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := files["blobs/"+strings.Replace(digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("no blob %s in the archive", digest)
	}
	return b
}

func decode(t *testing.T, b []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
