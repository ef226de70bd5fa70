// Command image assembles icekeeper's container image without a container
// runtime, as ko does: one layer with the static binary, CA certificates
// and a non-root user, over nothing (FROM scratch), written as an OCI image
// layout, as a tarball that `docker load` and `podman load` take, or pushed
// straight to a registry. The image's platform is linux and the
// architecture the binary was built for, read from its ELF header.
//
//	CGO_ENABLED=0 go build -trimpath -o icekeeper ./cmd/icekeeper
//	go run ./deploy/image --binary icekeeper --tag icekeeper:0.1.0 --tarball icekeeper.tar
//	go run ./deploy/image --binary icekeeper --push registry.example.com/icekeeper:0.1.0
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's non-root user, as distroless images number it.
const uid = 65532

// options are the command's flags.
type options struct {
	binary, certs string
	tag           string // the image's name in the tarball
	tarball       string // write a docker/podman-loadable tarball here
	layout        string // write an OCI image layout into this directory
	push          string // push to this reference (registry/repository:tag)
}

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "icekeeper", "the static icekeeper binary (CGO_ENABLED=0); its ELF header gives the image's architecture")
	flag.StringVar(&o.certs, "ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to include")
	flag.StringVar(&o.tag, "tag", "icekeeper:dev", "the image's name, for the tarball")
	flag.StringVar(&o.tarball, "tarball", "", "write a docker/podman-loadable tarball here")
	flag.StringVar(&o.layout, "layout", "", "write an OCI image layout into this directory")
	flag.StringVar(&o.push, "push", "", "push the image to this reference, e.g. registry.example.com/icekeeper:0.1.0 (credentials from docker login / podman login)")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds the image, writes it where o says and reports on w what it
// wrote.
func run(o options, w io.Writer) error {
	if o.tarball == "" && o.layout == "" && o.push == "" {
		return fmt.Errorf("give --tarball, --layout or --push")
	}
	img, platform, err := build(o.binary, o.certs)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	size, err := layers[0].Size()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "image %s %s, layer %.1f MB compressed\n", digest, platform, float64(size)/1e6)
	if o.tarball != "" {
		ref, err := name.NewTag(o.tag)
		if err != nil {
			return fmt.Errorf("--tag: %w", err)
		}
		if err := tarball.WriteToFile(o.tarball, ref, img); err != nil {
			return fmt.Errorf("write %s: %w", o.tarball, err)
		}
		st, err := os.Stat(o.tarball)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s (%s, %.1f MB)\n", o.tarball, ref, float64(st.Size())/1e6)
	}
	if o.layout != "" {
		p, err := layout.Write(o.layout, empty.Index)
		if err != nil {
			return fmt.Errorf("write layout %s: %w", o.layout, err)
		}
		if err := p.AppendImage(img, layout.WithPlatform(*platform)); err != nil {
			return fmt.Errorf("write layout %s: %w", o.layout, err)
		}
		fmt.Fprintf(w, "wrote OCI layout %s\n", o.layout)
	}
	if o.push != "" {
		ref, err := name.ParseReference(o.push)
		if err != nil {
			return fmt.Errorf("--push: %w", err)
		}
		if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Fprintf(w, "pushed %s@%s\n", ref, digest)
	}
	return nil
}

// platformOf returns the platform a Go binary was built for: linux (the
// image has no other kernel) and GOARCH, from the ELF header. A binary for
// another OS is no ELF file, or one with another OS ABI, and is refused.
func platformOf(binary string) (*v1.Platform, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("%s is not a Linux binary (build it with GOOS=linux): %w", binary, err)
	}
	defer f.Close()
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return nil, fmt.Errorf("%s is built for OS ABI %v, not Linux (build it with GOOS=linux)", binary, f.OSABI)
	}
	p := &v1.Platform{OS: "linux"}
	switch {
	case f.Machine == elf.EM_X86_64:
		p.Architecture = "amd64"
	case f.Machine == elf.EM_AARCH64:
		p.Architecture = "arm64"
	case f.Machine == elf.EM_386:
		p.Architecture = "386"
	case f.Machine == elf.EM_ARM:
		p.Architecture = "arm"
	case f.Machine == elf.EM_PPC64 && f.Data == elf.ELFDATA2LSB:
		p.Architecture = "ppc64le"
	case f.Machine == elf.EM_S390:
		p.Architecture = "s390x"
	case f.Machine == elf.EM_RISCV && f.Class == elf.ELFCLASS64:
		p.Architecture = "riscv64"
	case f.Machine == elf.EM_LOONGARCH:
		p.Architecture = "loong64"
	default:
		return nil, fmt.Errorf("%s: unknown architecture %v", binary, f.Machine)
	}
	return p, nil
}

// build returns the image: scratch, one layer, icekeeper as entrypoint,
// for the binary's platform.
func build(binary, certs string) (v1.Image, *v1.Platform, error) {
	platform, err := platformOf(binary)
	if err != nil {
		return nil, nil, err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, nil, err
	}
	ca, err := os.ReadFile(certs)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "usr/", "usr/local/", "usr/local/bin/", "tmp/", "data/"} {
		mode, owner := int64(0o755), 0
		if d == "tmp/" {
			mode = 0o1777
		}
		if d == "data/" {
			owner = uid
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, Uid: owner, Gid: owner, ModTime: epoch}); err != nil {
			return nil, nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"usr/local/bin/icekeeper", 0o755, bin},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, ca},
		{"etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/data:/sbin/nologin\n", uid, uid))},
		{"etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", uid))},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	// Without os and architecture containerd and Kubernetes may refuse
	// the image ("no match for platform").
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Config = v1.Config{
		Entrypoint:   []string{"/usr/local/bin/icekeeper"},
		Cmd:          []string{"serve", "--config", "/etc/icekeeper/icekeeper.yaml"},
		User:         fmt.Sprintf("%d:%d", uid, uid),
		WorkingDir:   "/data",
		Env:          []string{"ICEKEEPER_HOME=/data/icekeeper-data", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels: map[string]string{"org.opencontainers.image.title": "icekeeper",
			"org.opencontainers.image.licenses": "Apache-2.0"},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, nil, err
	}
	return img, platform, nil
}
