package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The image as a container runtime would unpack it: built from a static,
// stamped binary; run as the non-root user with icekeeper as entrypoint;
// for linux and the binary's architecture (containerd and Kubernetes may
// refuse an image without them); reported on stdout with its digest; and
// the binary taken out of its layer runs `version` and `demo`. No
// container runtime is needed, or run: this machine has none, so the
// binary runs directly, not inside a container.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds icekeeper with go build and runs it: the whole suite runs it")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "icekeeper")
	// Without -trimpath (a release adds it): the build then reuses the
	// compiled packages of the test run (scripts/test.sh builds with
	// CGO_ENABLED=0 too) instead of compiling every dependency again.
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X github.com/icekeeper/icekeeper/internal/version.version=v0.0.0-image-test -X github.com/icekeeper/icekeeper/internal/version.date=2026-12-01T00:00:00Z",
		"../../cmd/icekeeper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs := filepath.Join(dir, "ca.crt")
	os.WriteFile(certs, []byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), 0o644)
	oci := filepath.Join(dir, "oci")
	var report bytes.Buffer
	if err := run(options{binary: bin, certs: certs, tag: "icekeeper:test", tarball: filepath.Join(dir, "icekeeper.tar"), layout: oci}, &report); err != nil {
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
	if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/icekeeper" {
		t.Fatalf("image config %+v", cfg.Config)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Fatalf("image platform %q/%q, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if p := m.Manifests[0].Platform; p == nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
		t.Fatalf("layout index platform %+v", p)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{digest.String(), "linux/" + runtime.GOARCH, "icekeeper.tar", "icekeeper:test", "OCI layout " + oci} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, report.String())
		}
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

// fakeELF writes the header of a 64-bit little-endian ELF executable for
// machine, which is all the builder reads of a binary.
func fakeELF(t *testing.T, machine elf.Machine) string {
	t.Helper()
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT), Ehsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, h)
	p := filepath.Join(t.TempDir(), "icekeeper")
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The architecture is the binary's, not the builder's: an arm64 binary
// built on amd64 makes an arm64 image. What is not a Linux binary is
// refused.
func TestImagePlatform(t *testing.T) {
	certs := filepath.Join(t.TempDir(), "ca.crt")
	os.WriteFile(certs, []byte("x"), 0o644)
	for machine, arch := range map[elf.Machine]string{elf.EM_AARCH64: "arm64", elf.EM_X86_64: "amd64"} {
		img, platform, err := build(fakeELF(t, machine), certs)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS != "linux" || cfg.Architecture != arch || platform.String() != "linux/"+arch {
			t.Errorf("%v: config %s/%s, platform %v; want linux/%s", machine, cfg.OS, cfg.Architecture, platform, arch)
		}
	}
	script := filepath.Join(t.TempDir(), "icekeeper")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	if _, _, err := build(script, certs); err == nil || !strings.Contains(err.Error(), "not a Linux binary") {
		t.Errorf("a script made an image: %v", err)
	}
}

// --push puts the image in a registry (an in-process one on 127.0.0.1),
// from where it pulls back with the same digest and platform.
func TestPush(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the machine's
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	certs := filepath.Join(t.TempDir(), "ca.crt")
	os.WriteFile(certs, []byte("x"), 0o644)
	target := strings.TrimPrefix(srv.URL, "http://") + "/platform/icekeeper:0.1.0"
	var report bytes.Buffer
	if err := run(options{binary: fakeELF(t, elf.EM_AARCH64), certs: certs, push: target}, &report); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(target)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" {
		t.Errorf("pulled config %s/%s %+v", cfg.OS, cfg.Architecture, cfg.Config)
	}
	if want := "pushed " + target + "@" + digest.String(); !strings.Contains(report.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, report.String())
	}
}
