package bucket

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// How an upload's body is sent through the shared configuration, as a
// store on each scheme sees it: signed with its SHA-256 by default;
// with unsignedBodies, unsigned with its CRC32 in a header over http and
// in a trailer over https (the SDK's own way there, with or without the
// option). A request that is not an upload stays signed.
func TestUnsignedBodies(t *testing.T) {
	type seen struct{ method, payloadHash, crcHeader, trailer string }
	var mu sync.Mutex
	var got []seen
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.Header.Get("X-Amz-Content-Sha256"), r.Header.Get("X-Amz-Checksum-Crc32"), r.Header.Get("X-Amz-Trailer")})
		mu.Unlock()
		if r.Method == http.MethodPost {
			w.Write([]byte(`<DeleteResult></DeleteResult>`))
		}
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	tls := httptest.NewTLSServer(handler)
	defer tls.Close()
	// The TLS server's certificate, as a CA bundle the AWS configuration
	// loads (AWS_CA_BUNDLE), as a user's private CA would be.
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)

	for _, tc := range []struct {
		name     string
		endpoint string
		unsigned bool
		want     func(seen) bool
	}{
		{"http, signed", plain.URL, false, func(s seen) bool { return len(s.payloadHash) == 64 && s.crcHeader != "" }},
		{"http, unsigned", plain.URL, true, func(s seen) bool { return s.payloadHash == unsignedPayloadHash && s.crcHeader != "" }},
		{"https, signed", tls.URL, false, func(s seen) bool {
			return s.payloadHash == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" && s.trailer == "x-amz-checksum-crc32"
		}},
		{"https, unsigned", tls.URL, true, func(s seen) bool {
			return s.payloadHash == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" && s.trailer == "x-amz-checksum-crc32"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg, err := sharedAWSConfig(ctx, map[string]string{"s3.region": "us-east-1",
				"s3.access-key-id": "key", "s3.secret-access-key": "secret"}, tc.unsigned)
			if err != nil {
				t.Fatal(err)
			}
			client := s3.NewFromConfig(*cfg, func(o *s3.Options) {
				o.BaseEndpoint, o.UsePathStyle = aws.String(tc.endpoint), true
			})
			mu.Lock()
			got = nil
			mu.Unlock()
			body := strings.NewReader(strings.Repeat("row ", 1000))
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: body}); err != nil {
				t.Fatal(err)
			}
			// A batch delete has a body too, and is no upload.
			if _, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("b"),
				Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("k")}}}}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("the store saw %d requests, want 2: %+v", len(got), got)
			}
			if !tc.want(got[0]) {
				t.Errorf("upload sent as %+v", got[0])
			}
			if del := got[1]; del.method != http.MethodPost || tc.endpoint == plain.URL && len(del.payloadHash) != 64 {
				t.Errorf("batch delete sent as %+v, want its body signed", del)
			}
		})
	}
}
