package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// nonRoot is the user and group the operator runs as (distroless' "nonroot").
const nonRoot = 65532

type options struct {
	repo, image, out, arch string
}

// build compiles the operator, assembles the image and writes the tarball; it
// returns the image's reference.
func build(o options) (string, error) {
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return "", err
	}
	ref := o.image
	if ref == "" {
		if ref, err = chartDefaultImage(repo); err != nil {
			return "", err
		}
	}
	work, err := os.MkdirTemp("", "lockstep-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)

	binary := filepath.Join(work, "lockstep")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "./cmd/lockstep")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the operator: %w", err)
	}
	img, err := image(binary, o.arch, ref)
	if err != nil {
		return "", err
	}
	if err := writeArchive(img, ref, filepath.Join(work, "oci"), o.out); err != nil {
		return "", err
	}
	return ref, nil
}

// chartDefaultImage is image.repository:appVersion of charts/lockstep, the
// image the chart installs when no value overrides it.
func chartDefaultImage(repo string) (string, error) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	for path, into := range map[string]any{"Chart.yaml": &chart, "values.yaml": &values} {
		raw, err := os.ReadFile(filepath.Join(repo, "charts", "lockstep", path))
		if err != nil {
			return "", err
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			return "", fmt.Errorf("charts/lockstep/%s: %w", path, err)
		}
	}
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	if values.Image.Repository == "" || tag == "" {
		return "", fmt.Errorf("charts/lockstep names no default image")
	}
	return values.Image.Repository + ":" + tag, nil
}

// image is the binary at /lockstep on an empty base, with just enough of /etc
// for the user to have a name, and a /tmp.
func image(binary, arch, ref string) (v1.Image, error) {
	layer, err := rootfs(binary)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{CreatedBy: "hack/image: /lockstep", Created: v1.Time{Time: epoch}}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/lockstep"}
	cfg.Config.User = fmt.Sprintf("%d:%d", nonRoot, nonRoot)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "lockstep",
		"org.opencontainers.image.source":   "https://github.com/lockstep-dev/lockstep",
		"org.opencontainers.image.ref.name": ref,
	}
	return mutate.ConfigFile(img, cfg)
}

// epoch stamps files and the config, so that the same binary makes the same image.
var epoch = time.Unix(0, 0).UTC()

// rootfs is the image's single layer, uncompressed (tarball compresses it).
func rootfs(binary string) ([]byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, step := range []func() error{
		func() error { return dir("etc/", 0o755) },
		func() error {
			return file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot))
		},
		func() error { return file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", nonRoot)) },
		func() error { return dir("tmp/", 0o1777) },
		func() error { return file("lockstep", 0o755, bin) },
		tw.Close,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// writeArchive writes img as an OCI image layout in dir, adds the
// manifest.json docker load reads, and tars the directory into out.
func writeArchive(img v1.Image, ref, dir, out string) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          ref,
	})); err != nil {
		return err
	}
	if err := writeDockerManifest(img, ref, dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname, h.Mode = filepath.ToSlash(rel), epoch, 0, 0, "", "", 0o644
		if d.IsDir() {
			h.Name, h.Mode = h.Name+"/", 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeDockerManifest writes the manifest.json of `docker save`, pointing at
// the OCI layout's blobs, as Docker itself does since version 25.
func writeDockerManifest(img v1.Image, ref, dir string) error {
	cfg, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: blobPath(cfg), RepoTags: []string{ref}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		entry.Layers = append(entry.Layers, blobPath(d))
	}
	raw, err := json.Marshal([]any{entry})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), raw, 0o644)
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
