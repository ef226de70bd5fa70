package status

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// IntentHeader is the header the dashboard sends with its writes. A write
// (any method but GET and HEAD) must carry it, a JSON Content-Type or a
// SigV4 Authorization header: a cross-site form can send none of them,
// and a cross-site fetch that sets one needs a CORS preflight the API
// never grants.
const IntentHeader = "X-Icekeeper-Request"

// guard wraps every route: security headers on every response; without
// keys, a Host that is loopback or configured (a DNS-rebinding page
// carries its own name); for writes, no cross-site Origin or
// Sec-Fetch-Site and a sign of intent (a JSON Content-Type or
// IntentHeader). What it refuses is 403 ForbiddenException naming why.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if err := s.checkIntent(r); err != nil {
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) checkIntent(r *http.Request) *apiError {
	if s.Auth == nil && !s.hostAllowed(r.Host) {
		return forbidden(fmt.Sprintf("Host %q is not a loopback name or one of api.allowedHosts: without access keys the API answers only requests addressed to this machine", r.Host))
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	if r.URL.Path == EventsPath && r.Method != http.MethodPost {
		return nil // answered 405, whatever it carries: nothing to forge
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) {
		return forbidden(fmt.Sprintf("cross-site request refused: Origin %q is not this API's %q", origin, r.Host))
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		// same-site too: another port of localhost is same-site.
		return forbidden(fmt.Sprintf("cross-site request refused: Sec-Fetch-Site is %q, writes must be same-origin", site))
	}
	if r.Header.Get(IntentHeader) != "" {
		return nil
	}
	// A SigV4 Authorization header is one no form can send and no
	// cross-site fetch sets without a preflight: the SDKs' bodiless
	// DELETEs carry no Content-Type. (HTTP Basic is what a browser
	// attaches by itself, so it does not count.)
	if strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		return nil
	}
	// River's UI is a bundle icekeeper does not write: it posts its JSON
	// as text/plain, so there a browser's proof of the same origin
	// stands for intent (an Origin header is same-origin once here).
	if strings.HasPrefix(r.URL.Path, "/river/") && (r.Header.Get("Sec-Fetch-Site") == "same-origin" || r.Header.Get("Origin") != "") {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && mt == "application/json" {
		return nil
	}
	// Webhooks send a bearer token, which no form or simple cross-site
	// request can carry, and CloudEvents have media types of their own.
	if r.URL.Path == EventsPath && (strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") ||
		err == nil && (mt == "application/cloudevents+json" || mt == "application/cloudevents-batch+json")) {
		return nil
	}
	return forbidden(fmt.Sprintf("%s %s needs Content-Type application/json or the %s header, got Content-Type %q", r.Method, r.URL.Path, IntentHeader, r.Header.Get("Content-Type")))
}

// hostAllowed says whether a Host header names this machine (localhost,
// 127.0.0.0/8, ::1, any port) or one of the configured names.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.AllowedHosts {
		a = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
		if host != "" && strings.TrimSuffix(strings.ToLower(a), ".") == host {
			return true
		}
	}
	return false
}

// sameOrigin compares an Origin header's host:port with the request's
// Host, a missing port being the Origin scheme's default (so a TLS proxy
// in front, which forwards Host without :443, still matches).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" and the like: an opaque origin is another site
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	withPort := func(hp string) string {
		if _, _, err := net.SplitHostPort(hp); err == nil {
			return strings.ToLower(hp)
		}
		return strings.ToLower(net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), port))
	}
	return withPort(u.Host) == withPort(host)
}
