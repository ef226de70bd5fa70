package compactor

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// bodyRequest is what the store was sent with a request body.
type bodyRequest struct {
	method, path string
	payloadHash  string // x-amz-content-sha256
	crc32        bool   // an x-amz-checksum-crc32 header, among the signed ones
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// With s3UnsignedPayload a compaction over S3 (over http: versitygw
// under a SQL catalog, SeaweedFS under its REST catalog) uploads every
// object and part unsigned, each with its CRC32 in a signed header; every
// other request, and every request without the option, is signed with its
// body's SHA-256. Either way, a body damaged on the way to the store is
// refused by it (by its CRC32 unsigned, by its SHA-256 signed): the run
// fails, the table keeps its snapshot and its rows, and the next run
// compacts.
func TestUnsignedPayloadOnS3(t *testing.T) {
	for _, tc := range []struct {
		name     string
		store    string // versitygw or seaweedfs
		unsigned bool
		// checksums is AWS_REQUEST_CHECKSUM_CALCULATION: with
		// when_required the SDK sends no checksum of its own with an
		// upload, and an unsigned one must still carry one.
		checksums string
	}{
		{"versitygw signed", "versitygw", false, ""},
		{"versitygw unsigned", "versitygw", true, ""},
		{"versitygw unsigned, SDK checksums when required", "versitygw", true, "when_required"},
		{"seaweedfs signed", "seaweedfs", false, ""},
		{"seaweedfs unsigned", "seaweedfs", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unsigned := tc.unsigned
			if tc.checksums != "" {
				t.Setenv("AWS_REQUEST_CHECKSUM_CALCULATION", tc.checksums)
			}
			var mu sync.Mutex
			var seen []bodyRequest
			var damage atomic.Bool
			intercept := func(r *http.Request) {
				if r.ContentLength <= 0 {
					return
				}
				signed := signedHeaders(r.Header.Get("Authorization"))
				mu.Lock()
				seen = append(seen, bodyRequest{method: r.Method, path: r.URL.Path, payloadHash: r.Header.Get("X-Amz-Content-Sha256"),
					crc32: r.Header.Get("X-Amz-Checksum-Crc32") != "" && slices.Contains(signed, "x-amz-checksum-crc32")})
				mu.Unlock()
				if damage.Load() && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/data/") {
					body, err := io.ReadAll(r.Body)
					if err != nil {
						t.Error(err)
						return
					}
					body[len(body)/2] ^= 0x20
					r.Body = io.NopCloser(bytes.NewReader(body))
				}
			}
			home := t.TempDir()
			var cfg *configs.Config
			if tc.store == "seaweedfs" {
				srv := servers.REST(t)
				srv.S3Endpoint = servers.Intercept(t, srv.S3Endpoint, intercept)
				cfg = configs.Embedded(home)
				cfg.Buckets[0].Catalog = srv.Props()
			} else {
				cfg = tableenv.SQLOnS3(home, servers.S3(t).Intercepted(t, intercept))
			}
			cfg.Buckets[0].S3UnsignedPayload = unsigned
			e, tbl := newEnvWith(t, cfg, home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			for range 6 {
				tbl = e.Append(tbl, 200)
			}
			want := e.Rows(tbl, 0)
			before := tbl.CurrentSnapshot().SnapshotID

			damage.Store(true)
			mu.Lock()
			seen = nil
			mu.Unlock()
			out, fig := e.compact(&Job{MinInputFiles: 2})
			if out.Status == state.Successful && fig.GroupsCommitted > 0 {
				t.Fatalf("a damaged upload was committed: %s", fig.Text())
			}
			msg := out.FailureMessage
			if fig != nil {
				msg += " " + strings.Join(fig.Errors, " ")
			}
			refusal := "XAmzContentSHA256Mismatch"
			if unsigned {
				refusal = "BadDigest"
			}
			t.Logf("refused: %s", msg)
			if !strings.Contains(msg, refusal) {
				t.Fatalf("the store's refusal is not named (%s): %q", refusal, msg)
			}
			after := e.Load()
			if got := after.CurrentSnapshot().SnapshotID; got != before {
				t.Fatalf("the failed run moved the table from snapshot %d to %d", before, got)
			}
			e.checkSameRows(want, before)

			damage.Store(false)
			mu.Lock()
			seen = nil
			mu.Unlock()
			e.checkCompaction(&Job{MinInputFiles: 2})
			mu.Lock()
			defer mu.Unlock()
			var data, uploads int
			for _, r := range seen {
				upload := r.method == http.MethodPut
				if upload {
					uploads++
					if strings.Contains(r.path, "/data/") {
						data++
					}
				}
				switch {
				case unsigned && upload:
					if r.payloadHash != "UNSIGNED-PAYLOAD" || !r.crc32 {
						t.Errorf("upload %s: payload hash %q, signed CRC32 %t; want UNSIGNED-PAYLOAD with a signed CRC32", r.path, r.payloadHash, r.crc32)
					}
				case !hexSHA256.MatchString(r.payloadHash):
					t.Errorf("%s %s: payload hash %q, want the body's SHA-256", r.method, r.path, r.payloadHash)
				}
			}
			if data == 0 || uploads == data {
				t.Fatalf("%d uploads, %d of data: the run wrote no data file, or no metadata", uploads, data)
			}
		})
	}
}

// signedHeaders is the SignedHeaders list of a SigV4 Authorization header.
func signedHeaders(auth string) []string {
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return nil
	}
	list, _, _ := strings.Cut(rest, ",")
	return strings.Split(list, ";")
}
