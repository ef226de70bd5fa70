package status

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/icekeeper/icekeeper/configs"
)

// ClockSkew is how far a request's X-Amz-Date may be from the server's
// clock, as AWS allows.
const ClockSkew = 5 * time.Minute

// Back-off after failed authentication, per remote IP: MaxFailures
// failures within FailureWindow block that address for BackOff (429
// TooManyRequestsException with Retry-After), whatever it sends.
const (
	MaxFailures   = 5
	FailureWindow = time.Minute
	BackOff       = time.Minute
	// maxTracked bounds the addresses remembered: when full, expired
	// entries go first, then an arbitrary one.
	maxTracked = 4096
	// logPerWindow failures are logged per FailureWindow; the rest are
	// counted and the count logged with the next line.
	logPerWindow = 20
)

type callerKey struct{}

// Auth verifies SigV4-signed requests against configured access keys.
type Auth struct {
	SigningName string
	// Logger receives authentication failures, rate-limited; nil: the
	// Server's logger.
	Logger *slog.Logger
	keys   map[string]configs.APIKey
	now    func() time.Time

	mu         sync.Mutex
	clients    map[string]*failures
	logStart   time.Time
	logged     int
	suppressed int
}

// failures is one remote address's recent failed attempts.
type failures struct {
	first time.Time // the window's start
	n     int
	until time.Time // blocked until
}

// NewAuth returns the verifier for cfg, or nil when no keys are configured
// (the API is then unauthenticated and loopback-only).
func NewAuth(cfg configs.API) *Auth {
	if len(cfg.Keys) == 0 {
		return nil
	}
	a := &Auth{SigningName: cfg.SigningName, keys: map[string]configs.APIKey{}, now: time.Now, clients: map[string]*failures{}}
	for _, k := range cfg.Keys {
		a.keys[k.AccessKeyID] = k
	}
	return a
}

// authenticate verifies an API request (SigV4 or HTTP Basic), refusing
// an address in back-off and counting and logging failures.
func (a *Auth) authenticate(r *http.Request) (configs.APIKey, error) {
	if err := a.backingOff(r); err != nil {
		return configs.APIKey{}, err
	}
	if r.Header.Get("Authorization") == "" {
		// Not a guess: nothing to count.
		return configs.APIKey{}, forbidden("missing Authorization header: requests must be signed with AWS Signature Version 4")
	}
	key, id, err := a.verify(r)
	if e, ok := err.(*apiError); ok && e.status == http.StatusForbidden {
		a.fail(r, id, e.msg)
	}
	return key, err
}

// backingOff refuses a remote address that failed too often lately.
func (a *Auth) backingOff(r *http.Request) error {
	ip := remoteIP(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.clients[ip]; ok {
		if wait := f.until.Sub(a.now()); wait > 0 {
			secs := int((wait + time.Second - 1) / time.Second)
			return tooManyRequests(fmt.Sprintf("too many failed authentication attempts from %s: retry in %d s", ip, secs), secs)
		}
	}
	return nil
}

// fail counts a failed attempt of r's address and logs it, at most
// logPerWindow lines per FailureWindow.
func (a *Auth) fail(r *http.Request, keyID, reason string) {
	ip := remoteIP(r)
	now := a.now()
	a.mu.Lock()
	f, ok := a.clients[ip]
	if !ok {
		if len(a.clients) >= maxTracked {
			a.evict(now)
		}
		f = &failures{first: now}
		a.clients[ip] = f
	}
	if now.Sub(f.first) > FailureWindow && !now.Before(f.until) {
		*f = failures{first: now}
	}
	f.n++
	blocked := f.n == MaxFailures
	if blocked {
		f.until = now.Add(BackOff)
	}
	if now.Sub(a.logStart) > FailureWindow {
		a.logStart, a.logged = now, 0
	}
	log := a.logged < logPerWindow
	suppressed := 0
	if log {
		a.logged++
		suppressed, a.suppressed = a.suppressed, 0
	} else {
		a.suppressed++
	}
	a.mu.Unlock()
	if !log || a.Logger == nil {
		return
	}
	if len(keyID) > 64 {
		keyID = keyID[:64] + "…"
	}
	attrs := []any{"key", keyID, "remote", ip, "reason", reason}
	if suppressed > 0 {
		attrs = append(attrs, "notLogged", suppressed)
	}
	if blocked {
		attrs = append(attrs, "blockedFor", BackOff.String())
	}
	a.Logger.Warn("API authentication failed", attrs...)
}

// evict makes room in the tracking map: expired entries, else any one.
func (a *Auth) evict(now time.Time) {
	for ip, f := range a.clients {
		if now.Sub(f.first) > FailureWindow && !now.Before(f.until) {
			delete(a.clients, ip)
		}
	}
	for ip := range a.clients {
		if len(a.clients) < maxTracked {
			return
		}
		delete(a.clients, ip)
	}
}

func remoteIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// verify checks HTTP Basic credentials or the request's SigV4 signature,
// computed over exactly the headers the request lists in SignedHeaders.
// It returns the key and the key ID the request claimed.
func (a *Auth) verify(r *http.Request) (configs.APIKey, string, error) {
	if id, secret, ok := r.BasicAuth(); ok {
		key, err := a.basic(id, secret)
		return key, id, err
	}
	rest, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return configs.APIKey{}, "", forbidden("only AWS4-HMAC-SHA256 signatures are accepted")
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	if len(cred) != 5 || cred[4] != "aws4_request" || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return configs.APIKey{}, "", forbidden("malformed Authorization header")
	}
	id := cred[0]
	key, ok := a.keys[id]
	if !ok {
		return configs.APIKey{}, id, forbidden("unknown access key")
	}
	if cred[3] != a.SigningName {
		return configs.APIKey{}, id, forbidden(fmt.Sprintf("signed for service %q, this API is %q", cred[3], a.SigningName))
	}
	amzDate := r.Header.Get("X-Amz-Date")
	when, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return configs.APIKey{}, id, forbidden("missing or malformed X-Amz-Date")
	}
	if cred[1] != amzDate[:8] {
		return configs.APIKey{}, id, forbidden("the credential's date is not X-Amz-Date's")
	}
	if d := a.now().Sub(when); d > ClockSkew || d < -ClockSkew {
		return configs.APIKey{}, id, forbidden("request time is too far from the server's clock")
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") {
		return configs.APIKey{}, id, forbidden("SignedHeaders must include host and x-amz-date")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return configs.APIKey{}, id, badRequest("cannot read request body")
	}
	if len(body) > maxBody {
		return configs.APIKey{}, id, badRequest(fmt.Sprintf("request body is larger than %d bytes", maxBody))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	switch h := r.Header.Get("X-Amz-Content-Sha256"); h {
	case "", payload:
	case "UNSIGNED-PAYLOAD":
		return configs.APIKey{}, id, forbidden("unsigned payloads are not accepted: sign the body")
	default:
		return configs.APIKey{}, id, forbidden("payload hash does not match the body")
	}

	canonical, err := canonicalRequest(r, signed, payload)
	if err != nil {
		return configs.APIKey{}, id, err
	}
	scope := strings.Join(cred[1:], "/")
	digest := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(digest[:])
	k := hmacSHA256([]byte("AWS4"+key.SecretAccessKey), cred[1])
	for _, part := range cred[2:] {
		k = hmacSHA256(k, part)
	}
	want := hex.EncodeToString(hmacSHA256(k, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return configs.APIKey{}, id, forbidden("the request signature does not match")
	}
	return key, id, nil
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// canonicalRequest is SigV4's canonical request of r over exactly the
// signed headers, as botocore and the Go SDK build it: the path as sent,
// escaped once more (services other than S3); the query decoded,
// re-escaped and sorted; each header's values trimmed, inner spaces
// collapsed, joined by commas.
func canonicalRequest(r *http.Request, signed []string, payload string) (string, error) {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(sigEscape(path, false) + "\n")
	var pairs []string
	if r.URL.RawQuery != "" {
		for _, kv := range strings.Split(r.URL.RawQuery, "&") {
			k, v, _ := strings.Cut(kv, "=")
			dk, err1 := url.QueryUnescape(k)
			dv, err2 := url.QueryUnescape(v)
			if err1 != nil || err2 != nil {
				return "", forbidden("malformed query string")
			}
			pairs = append(pairs, sigEscape(dk, true)+"="+sigEscape(dv, true))
		}
		sort.Strings(pairs)
	}
	b.WriteString(strings.Join(pairs, "&") + "\n")
	prev := ""
	for _, h := range signed {
		if h == "" || h != strings.ToLower(h) || h <= prev {
			return "", forbidden("SignedHeaders must be lowercase, sorted and without repeats")
		}
		prev = h
		var vals []string
		switch h {
		case "host":
			vals = []string{r.Host}
		case "content-length":
			vals = r.Header.Values(h)
			if len(vals) == 0 && r.ContentLength >= 0 {
				vals = []string{strconv.FormatInt(r.ContentLength, 10)}
			}
		case "transfer-encoding":
			vals = r.TransferEncoding
		default:
			vals = r.Header.Values(h)
		}
		if len(vals) == 0 {
			return "", forbidden(fmt.Sprintf("signed header %s is not in the request", h))
		}
		for i, v := range vals {
			vals[i] = strings.Join(strings.Fields(v), " ")
		}
		b.WriteString(h + ":" + strings.Join(vals, ",") + "\n")
	}
	b.WriteString("\n" + strings.Join(signed, ";") + "\n" + payload)
	return b.String(), nil
}

// sigEscape percent-encodes all but SigV4's unreserved characters (and
// "/" unless sep), upper-case hex.
func sigEscape(s string, sep bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !sep) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
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

// scoped reports whether the caller's key is limited to some buckets.
func (s *Server) scoped(r *http.Request) bool {
	key, ok := r.Context().Value(callerKey{}).(configs.APIKey)
	return ok && len(key.Scopes) > 0
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
