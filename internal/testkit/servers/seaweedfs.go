//go:build unix

package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// SeaweedFSVersion is the SeaweedFS scripts/servers.sh builds, whose
// binary it keeps in GOPATH/bin as weed-SeaweedFSVersion.
const SeaweedFSVersion = "v0.0.0-20261109003541-7506e5f91cd6"

// SeaweedFSWebhook starts a SeaweedFS of the test's own (master, volume
// server, filer and S3 gateway, every listener on 127.0.0.1, its data in
// a temporary directory) whose filer posts its events to endpoint with
// the bearer token, and returns its S3 gateway with a bucket made on it.
// The server is stopped when the test ends. Like Tool, it skips the test
// under -short or without the binary, unless ICEKEEPER_REQUIRE_SERVERS=1.
//
// A start takes some seconds: a test should share one between its cases.
//
// The webhook is configured by environment variables: the filer reads
// notification.toml through viper, which also takes each key from WEED_
// and the key in upper case with "." as "_", so no file is needed.
func SeaweedFSWebhook(t testing.TB, endpoint, token string) S3Server {
	t.Helper()
	weed := Tool(t, "weed-"+SeaweedFSVersion)
	const key, secret = "icekeeper", "icekeeper-secret"
	dir := t.TempDir()
	ports := freePorts(t, 8)
	master, volume, filer, s3Port := ports[0], ports[1], ports[2], ports[3]
	grpc := ports[4:] // each server's gRPC port, in the same order
	p := strconv.Itoa
	cmd := exec.Command(weed, "server",
		"-dir="+filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
		"-master.volumeSizeLimitMB=64", "-volume.max=100",
		"-master.port="+p(master), "-master.port.grpc="+p(grpc[0]),
		"-volume.port="+p(volume), "-volume.port.grpc="+p(grpc[1]),
		"-filer", "-filer.port="+p(filer), "-filer.port.grpc="+p(grpc[2]),
		"-filer.localSocket="+filepath.Join(dir, "filer.sock"),
		"-s3", "-s3.port="+p(s3Port), "-s3.port.grpc="+p(grpc[3]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.localSocket="+filepath.Join(dir, "s3.sock"),
	)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The filer also looks for configuration files in its working directory
	// and in $HOME/.seaweedfs: both are the test's own.
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+dir,
		"TMPDIR="+dir,                                             // weed writes its logs there
		"AWS_ACCESS_KEY_ID="+key, "AWS_SECRET_ACCESS_KEY="+secret, // the S3 gateway's admin
		"WEED_NOTIFICATION_WEBHOOK_ENABLED=true",
		"WEED_NOTIFICATION_WEBHOOK_ENDPOINT="+endpoint,
		"WEED_NOTIFICATION_WEBHOOK_BEARER_TOKEN="+token,
	)
	logPath := filepath.Join(dir, "weed.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A group of its own, so that stopping it reaches anything it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", weed, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("the end of SeaweedFS's log:\n%s", tail(b, 40))
			}
		}
		start := time.Now()
		stopGroup(cmd.Process.Pid, exited, 5*time.Second)
		t.Logf("SeaweedFS stopped in %v", time.Since(start).Round(10*time.Millisecond))
		// weed server puts each gRPC server's local socket in /tmp, by port.
		for i, name := range []string{"master", "volume", "filer", "s3"} {
			os.Remove(fmt.Sprintf("/tmp/seaweedfs-%s-grpc-%d.sock", name, grpc[i]))
		}
	})

	const within = time.Minute
	addr := "127.0.0.1:" + p(s3Port)
	srv := S3Server{Endpoint: "http://" + addr, Key: key, Secret: secret, Bucket: RandomName("icekeeper-test-")}
	srv.Client = NewClient(srv.Endpoint, key, secret)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		// The S3 gateway answers before the filer behind it is ready: the
		// server is up once a bucket can be made.
		_, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(srv.Bucket)})
		if err == nil {
			return srv
		}
		select {
		case <-exited:
			t.Fatalf("SeaweedFS exited while starting: %v", cmd.ProcessState)
		case <-ctx.Done():
			t.Fatalf("SeaweedFS at %s: no bucket after %v: %v", addr, within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopGroup sends SIGTERM to the process group pgid, then SIGKILL once
// its leader has exited or grace has passed. weed server takes some 25 s
// to stop on SIGTERM, far longer than data thrown away is worth waiting
// for.
func stopGroup(pgid int, exited <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
	}
	// Whatever else is left of the group goes too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
}

// freePorts returns n distinct ports nothing listens on at the moment.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		_, port, err := net.SplitHostPort(FreeAddr(t))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports
}

// tail is the last n lines of b.
func tail(b []byte, n int) []byte {
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
