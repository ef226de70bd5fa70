package status

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// FuzzDecodeValue feeds arbitrary bodies to the configuration parser: it
// must never panic, and whatever it accepts must be valid and re-encode.
func FuzzDecodeValue(f *testing.F) {
	for _, seed := range []string{
		`{"value":{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":256,"strategy":"sort"}}}}`,
		`{"value":{"status":"disabled"}}`,
		`{"value":{"status":"enabled","settings":{"icebergSnapshotManagement":{"minSnapshotsToKeep":1,"maxSnapshotAgeHours":2}}}}`,
		`{"value":null}`, `[]`, `{"value":{"settings":{}}}`, `{"value":{"status":"enabled","settings":{"icebergCompaction":{"targetFileSizeMB":-1}}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, typ := range maintenance.JobTypes() {
			r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(body))
			cfg, err := decodeValue(r, typ)
			if err != nil {
				continue
			}
			if err := cfg.Validate(typ); err != nil {
				t.Fatalf("accepted an invalid configuration %s: %v", body, err)
			}
			if _, err := cfg.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzVerify feeds the SigV4 verifier requests made from a correctly
// signed one with the path, body, date and Authorization header replaced
// by fuzzed values. It must never panic, and it may accept only the
// original request: any other path, body, date or signature is forged.
func FuzzVerify(f *testing.F) {
	when := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const path0, body0 = "/buckets/arn/maintenance/icebergUnreferencedFileRemoval", `{"value":{"status":"enabled"}}`
	sign := func(path, body string) *http.Request {
		r := httptest.NewRequest(http.MethodPut, "http://127.0.0.1:8080"+path, strings.NewReader(body))
		sum := sha256.Sum256([]byte(body))
		r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
		creds := aws.Credentials{AccessKeyID: "AKFUZZ", SecretAccessKey: "fuzz-secret"}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "s3tables", "us-east-1", when); err != nil {
			f.Fatal(err)
		}
		r.Header.Set("Content-Length", strconv.Itoa(len(body))) // as a server sees it
		return r
	}
	orig := sign(path0, body0)
	authz0, date0 := orig.Header.Get("Authorization"), orig.Header.Get("X-Amz-Date")
	f.Add(path0, body0, authz0, date0)
	f.Add(path0, body0+" ", authz0, date0)
	f.Add(path0+"x", body0, authz0, date0)
	f.Add(path0, body0, strings.Replace(authz0, "Signature=", "Signature=0", 1), date0)
	f.Add(path0, body0, "AWS4-HMAC-SHA256 Credential=AKFUZZ/20261201/us-east-1/s3tables/aws4_request, SignedHeaders=, Signature=", date0)
	f.Add(path0, body0, "AWS4-HMAC-SHA256 ,,,==,Credential=////", "20261201T120000Z")
	auth := NewAuth(configs.API{SigningName: "s3tables", Keys: []configs.APIKey{{AccessKeyID: "AKFUZZ", SecretAccessKey: "fuzz-secret"}}})
	auth.now = func() time.Time { return when }
	sig0 := signatureOf(authz0)
	if _, _, err := auth.verify(sign(path0, body0)); err != nil {
		f.Fatalf("the genuine request is refused: %v", err) // else the property below holds vacuously
	}
	f.Fuzz(func(t *testing.T, path, body, authz, date string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n#?%") {
			return // not a request line an HTTP server would parse
		}
		r := sign(path0, body0)
		r.URL.Path, r.RequestURI = path, path
		r.Body = io.NopCloser(strings.NewReader(body))
		r.Header.Set("Authorization", authz)
		r.Header.Set("X-Amz-Date", date)
		_, _, err := auth.verify(r)
		if err == nil && (path != path0 || body != body0 || date != date0 || signatureOf(authz) != sig0) {
			t.Fatalf("accepted a forged request: path %q body %q date %q authz %q", path, body, date, authz)
		}
	})
}

func signatureOf(authz string) string {
	_, sig, _ := strings.Cut(authz, "Signature=")
	return sig
}
