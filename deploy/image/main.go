// Command image assembles icekeeper's container image without a container
// runtime or a registry, as ko does: one layer with the static binary, CA
// certificates and a non-root user, over nothing (FROM scratch), written
// as an OCI image layout, or as a tarball that `docker load` and
// `podman load` take.
//
//	CGO_ENABLED=0 go build -trimpath -o icekeeper ./cmd/icekeeper
//	go run ./deploy/image --binary icekeeper --tag icekeeper:0.1.0 --tarball icekeeper.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's non-root user, as distroless images number it.
const uid = 65532

func main() {
	binary := flag.String("binary", "icekeeper", "the static icekeeper binary (CGO_ENABLED=0)")
	certs := flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to include")
	tag := flag.String("tag", "icekeeper:dev", "the image's name, for the tarball")
	out := flag.String("tarball", "", "write a docker/podman-loadable tarball here")
	dir := flag.String("layout", "", "write an OCI image layout into this directory")
	flag.Parse()
	if err := run(*binary, *certs, *tag, *out, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, certs, tag, out, dir string) error {
	if out == "" && dir == "" {
		return fmt.Errorf("give --tarball or --layout")
	}
	img, err := build(binary, certs)
	if err != nil {
		return err
	}
	if out != "" {
		ref, err := name.NewTag(tag)
		if err != nil {
			return fmt.Errorf("--tag: %w", err)
		}
		if err := tarball.WriteToFile(out, ref, img); err != nil {
			return fmt.Errorf("write %s: %w", out, err)
		}
	}
	if dir != "" {
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			return fmt.Errorf("write layout %s: %w", dir, err)
		}
		if err := p.AppendImage(img); err != nil {
			return fmt.Errorf("write layout %s: %w", dir, err)
		}
	}
	return nil
}

// build returns the image: scratch, one layer, icekeeper as entrypoint.
func build(binary, certs string) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(certs)
	if err != nil {
		return nil, err
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
			return nil, err
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
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	return mutate.Config(img, v1.Config{
		Entrypoint:   []string{"/usr/local/bin/icekeeper"},
		Cmd:          []string{"serve", "--config", "/etc/icekeeper/icekeeper.yaml"},
		User:         fmt.Sprintf("%d:%d", uid, uid),
		WorkingDir:   "/data",
		Env:          []string{"ICEKEEPER_HOME=/data/icekeeper-data", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels: map[string]string{"org.opencontainers.image.title": "icekeeper",
			"org.opencontainers.image.licenses": "Apache-2.0"},
	})
}
