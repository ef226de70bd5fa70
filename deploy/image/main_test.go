package main

import (
	"archive/tar"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The image as a container runtime would unpack it: built from a static,
// stamped binary; run as the non-root user with icekeeper as entrypoint;
// and the binary taken out of its layer runs `version` and `demo`. No
// container runtime is needed, or run: this machine has none, so the
// binary runs directly, not inside a container.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "icekeeper")
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-X github.com/icekeeper/icekeeper/internal/version.version=v0.0.0-image-test -X github.com/icekeeper/icekeeper/internal/version.date=2026-12-01T00:00:00Z",
		"../../cmd/icekeeper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs := filepath.Join(dir, "ca.crt")
	os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644)
	oci := filepath.Join(dir, "oci")
	if err := run(bin, certs, "icekeeper:test", filepath.Join(dir, "icekeeper.tar"), oci); err != nil {
		t.Fatal(err)
	}

	p, err := layout.FromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index %+v %v", m, err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/icekeeper" || cfg.OS != "" && cfg.OS != "linux" {
		t.Fatalf("image config %+v", cfg.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	root := filepath.Join(dir, "rootfs")
	seen := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = true
		if h.Typeflag == tar.TypeReg {
			os.MkdirAll(filepath.Join(root, filepath.Dir(h.Name)), 0o755)
			f, _ := os.OpenFile(filepath.Join(root, h.Name), os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode))
			io.Copy(f, tr)
			f.Close()
		}
	}
	for _, want := range []string{"usr/local/bin/icekeeper", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "tmp/", "data/"} {
		if !seen[want] {
			t.Errorf("image lacks %s", want)
		}
	}
	inImage := filepath.Join(root, "usr/local/bin/icekeeper")
	if f, err := elf.Open(inImage); err != nil {
		t.Fatal(err)
	} else {
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Fatal("the binary is dynamically linked; the image has no libc")
			}
		}
		f.Close()
	}
	out, err := exec.Command(inImage, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.0.0-image-test") || !strings.Contains(string(out), "built 2026-12-01T00:00:00Z") {
		t.Fatalf("version: %v %s", err, out)
	}
	demo := exec.Command(inImage, "demo", "--appends", "3")
	demo.Env = append(os.Environ(), "ICEKEEPER_HOME="+filepath.Join(dir, "home"), "ICEKEEPER_CONFIG=")
	if out, err := demo.CombinedOutput(); err != nil || !strings.Contains(string(out), "created local/demo/events") {
		t.Fatalf("demo: %v %s", err, out)
	}
	if st, err := os.Stat(filepath.Join(dir, "icekeeper.tar")); err != nil || st.Size() < 1<<20 {
		t.Fatalf("tarball: %v %v", st, err)
	}
}
