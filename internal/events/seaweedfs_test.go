//go:build unix

package events

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// seaweedfsVersion is the SeaweedFS scripts/servers.sh builds, whose
// binary it keeps in GOPATH/bin under this version.
const seaweedfsVersion = "v0.0.0-20261109003541-7506e5f91cd6"

// TestSeaweedFSWebhook puts an object through a real SeaweedFS's S3 API
// and decodes what its filer posts to the webhook: the shape Parse reads
// is the one SeaweedFS sends, the filer's own files and the directories
// above the object yield nothing, and the bearer token is sent.
func TestSeaweedFSWebhook(t *testing.T) {
	weed := servers.Tool(t, "weed-"+seaweedfsVersion)
	const token = "icekeeper-webhook-token"
	hooks := newHookRecorder(t)
	s3Addr := startSeaweedFS(t, weed, hooks.url+"/icekeeper/v1/events", token)

	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + s3Addr),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("icekeeper", "icekeeper-secret", ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const bucket = "lake"
	// A key as a writer might name it: a space, "+", "=" and non-ASCII
	// are written into the filer's path as they are, not encoded.
	const key = "wh/sales/orders/data/ts_day=2024-05-01/part 00001+é.parquet"
	for {
		// The S3 gateway answers before the filer behind it is ready.
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create bucket %s: %v", bucket, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("PAR1"))}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}

	// The filer posts from a pool of workers, out of order; wait for the
	// object's event, then for the filer to fall quiet, so that a second
	// event for the object would be seen too.
	want := Event{Source: SourceS3, Kind: KindCreated, Type: "seaweedfs:create", Bucket: bucket, Key: key, Location: "s3://" + bucket + "/" + key}
	reqs := hooks.waitFor(t, 20*time.Second, func(evs []Event) bool {
		return slices.ContainsFunc(evs, func(ev Event) bool { return reflect.DeepEqual(ev, want) })
	})

	var got []Event
	for i, r := range reqs {
		if h := r.header.Get("Authorization"); h != "Bearer "+token {
			t.Errorf("request %d: Authorization %q, want the bearer token", i+1, h)
		}
		evs, err := Parse(r.header, r.body)
		if err != nil {
			t.Errorf("request %d: %v\n%s", i+1, err, r.body)
			continue
		}
		if len(evs) > 0 && !reflect.DeepEqual(evs, []Event{want}) {
			t.Errorf("request %d: got %+v from\n%s", i+1, evs, r.body)
		}
		got = append(got, evs...)
	}
	if len(got) != 1 {
		t.Errorf("%d requests gave %d events, want the object's one: %+v", len(reqs), len(got), got)
	}
}

// hookRequest is one request the webhook received.
type hookRequest struct {
	header http.Header
	body   []byte
	at     time.Time
}

// hookRecorder is an HTTP server on 127.0.0.1 that keeps every request
// posted to it and answers 200, as the event route does.
type hookRecorder struct {
	url string

	mu   sync.Mutex
	reqs []hookRequest
}

func newHookRecorder(t *testing.T) *hookRecorder {
	h := &hookRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.reqs = append(h.reqs, hookRequest{header: r.Header.Clone(), body: body, at: time.Now()})
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// waitFor waits until the events of the requests so far satisfy done and
// no request has come for a second since, and returns the requests.
func (h *hookRecorder) waitFor(t *testing.T, within time.Duration, done func([]Event) bool) []hookRequest {
	t.Helper()
	const quiet = time.Second
	deadline := time.Now().Add(within)
	for {
		h.mu.Lock()
		reqs := append([]hookRequest(nil), h.reqs...)
		h.mu.Unlock()
		var evs []Event
		for _, r := range reqs {
			e, _ := Parse(r.header, r.body) // errors are reported by the caller
			evs = append(evs, e...)
		}
		if done(evs) && time.Since(reqs[len(reqs)-1].at) >= quiet {
			return reqs
		}
		if time.Now().After(deadline) {
			for _, r := range reqs {
				t.Logf("received: %s", r.body)
			}
			t.Fatalf("no awaited event in %d webhook requests after %v", len(reqs), within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startSeaweedFS starts a SeaweedFS of the test's own (master, volume
// server, filer and S3 gateway, every listener on 127.0.0.1, its data in
// a temporary directory) whose filer posts its events to endpoint with the
// bearer token, and returns its S3 address. The server is stopped when the
// test ends.
//
// The webhook is configured by environment variables: the filer reads
// notification.toml through viper, which also takes each key from WEED_
// and the key in upper case with "." as "_", so no file is needed.
func startSeaweedFS(t *testing.T, weed, endpoint, token string) (s3Addr string) {
	t.Helper()
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
		"AWS_ACCESS_KEY_ID=icekeeper", "AWS_SECRET_ACCESS_KEY=icekeeper-secret", // the S3 gateway's admin
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

	s3Addr = "127.0.0.1:" + p(s3Port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s3Addr, time.Second)
		if err == nil {
			c.Close()
			return s3Addr
		}
		select {
		case <-exited:
			t.Fatalf("SeaweedFS exited while starting: %v", cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("SeaweedFS's S3 gateway not listening on %s after 30s", s3Addr)
		}
		time.Sleep(100 * time.Millisecond)
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
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		_, port, err := net.SplitHostPort(servers.FreeAddr(t))
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
