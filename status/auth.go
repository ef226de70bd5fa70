package status

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/icekeeper/icekeeper/configs"
)

// ClockSkew is how far a request's X-Amz-Date may be from the server's
// clock, as AWS allows.
const ClockSkew = 5 * time.Minute

type callerKey struct{}

// Auth verifies SigV4-signed requests against configured access keys.
type Auth struct {
	SigningName string
	keys        map[string]configs.APIKey
	now         func() time.Time
}

// NewAuth returns the verifier for cfg, or nil when no keys are configured
// (the API is then unauthenticated and loopback-only).
func NewAuth(cfg configs.API) *Auth {
	if len(cfg.Keys) == 0 {
		return nil
	}
	a := &Auth{SigningName: cfg.SigningName, keys: map[string]configs.APIKey{}, now: time.Now}
	for _, k := range cfg.Keys {
		a.keys[k.AccessKeyID] = k
	}
	return a
}

// verify checks the request's signature by signing a copy of it, with only
// the headers the caller signed, using the caller's key, date and region,
// and comparing the two signatures in constant time. It returns the key.
func (a *Auth) verify(r *http.Request) (configs.APIKey, error) {
	authz := r.Header.Get("Authorization")
	if id, secret, ok := r.BasicAuth(); ok {
		return a.basic(id, secret)
	}
	if authz == "" {
		return configs.APIKey{}, forbidden("missing Authorization header: requests must be signed with AWS Signature Version 4")
	}
	rest, ok := strings.CutPrefix(authz, "AWS4-HMAC-SHA256 ")
	if !ok {
		return configs.APIKey{}, forbidden("only AWS4-HMAC-SHA256 signatures are accepted")
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[4] != "aws4_request" || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return configs.APIKey{}, forbidden("malformed Authorization header")
	}
	key, ok := a.keys[cred[0]]
	if !ok {
		return configs.APIKey{}, forbidden("unknown access key")
	}
	if cred[3] != a.SigningName {
		return configs.APIKey{}, forbidden(fmt.Sprintf("signed for service %q, this API is %q", cred[3], a.SigningName))
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return configs.APIKey{}, forbidden("missing or malformed X-Amz-Date")
	}
	if d := a.now().Sub(when); d > ClockSkew || d < -ClockSkew {
		return configs.APIKey{}, forbidden("request time is too far from the server's clock")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return configs.APIKey{}, badRequest("cannot read request body")
	}
	if len(body) > maxBody {
		return configs.APIKey{}, badRequest(fmt.Sprintf("request body is larger than %d bytes", maxBody))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != "UNSIGNED-PAYLOAD" && h != payload {
		return configs.APIKey{}, forbidden("payload hash does not match the body")
	}

	probe, err := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
	if err != nil {
		return configs.APIKey{}, forbidden("malformed request URI")
	}
	probe.Host = r.Host
	// The signer takes a signed content-length from ContentLength, not
	// from the header.
	probe.ContentLength = r.ContentLength
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h == "host" {
			continue
		}
		for _, v := range r.Header.Values(h) {
			probe.Header.Add(h, v)
		}
	}
	signer := v4.NewSigner()
	creds := aws.Credentials{AccessKeyID: key.AccessKeyID, SecretAccessKey: key.SecretAccessKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := signer.SignHTTP(context.Background(), creds, probe, payload, a.SigningName, cred[2], when); err != nil {
		return configs.APIKey{}, forbidden("cannot verify signature")
	}
	want := signatureOf(probe.Header.Get("Authorization"))
	if want == "" || !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return configs.APIKey{}, forbidden("the request signature does not match")
	}
	return key, nil
}

// basic checks HTTP Basic credentials, access key ID and secret, as the
// dashboard's browser sends them: a browser cannot sign with SigV4.
func (a *Auth) basic(id, secret string) (configs.APIKey, error) {
	key, ok := a.keys[id]
	if !ok || subtle.ConstantTimeCompare([]byte(secret), []byte(key.SecretAccessKey)) != 1 {
		return configs.APIKey{}, forbidden("unknown access key or wrong secret")
	}
	return key, nil
}

// writable refuses a read-only key anything but reading.
func writable(r *http.Request) error {
	key, ok := r.Context().Value(callerKey{}).(configs.APIKey)
	if ok && key.ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
		return forbidden(fmt.Sprintf("access key %s is read-only", key.AccessKeyID))
	}
	return nil
}

func signatureOf(authz string) string {
	_, sig, _ := strings.Cut(authz, "Signature=")
	return sig
}

// authorize checks the caller's key may act on bucket (namespace "" for
// bucket-wide operations).
func (s *Server) authorize(r *http.Request, bucket, namespace string) error {
	key, ok := r.Context().Value(callerKey{}).(configs.APIKey)
	if !ok || len(key.Scopes) == 0 {
		return nil
	}
	for _, sc := range key.Scopes {
		if scopeAllows(sc, bucket, namespace) {
			return nil
		}
	}
	what := bucket
	if namespace != "" {
		what += "/" + namespace
	}
	return forbidden(fmt.Sprintf("access key %s may not access %s", key.AccessKeyID, what))
}

// sees checks the caller's key may see bucket in listings.
func (s *Server) sees(r *http.Request, bucket string) error {
	key, ok := r.Context().Value(callerKey{}).(configs.APIKey)
	if !ok || len(key.Scopes) == 0 {
		return nil
	}
	for _, sc := range key.Scopes {
		if scopeSees(sc, bucket) {
			return nil
		}
	}
	return forbidden(fmt.Sprintf("access key %s may not access %s", key.AccessKeyID, bucket))
}
