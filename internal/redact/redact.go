// Package redact hides credentials in URIs and in text that may quote
// them (errors of HTTP clients and database drivers), before anything is
// printed, logged or recorded.
package redact

import (
	"context"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces every hidden value.
const Mask = "***"

// Sensitive reports whether a query parameter or key named name holds a
// credential: token, credential, secret, password, signature anywhere in
// the name (x-amz-security-token, X-Amz-Signature, client_secret), or
// key, sig, pwd at the end of the name (key, api_key, accessKey, sig).
func Sensitive(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"token", "credential", "secret", "password", "passwd", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	for _, s := range []string{"key", "sig", "pwd"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// URI returns s with the password of its user info and the values of its
// sensitive query parameters masked. A string that is not a URI is
// returned as Text would return it.
//
// It edits s itself rather than printing the parsed URL again: that would
// percent-encode what s carries unescaped (non-ASCII letters, quotes), and
// a recorded object name must read exactly as it was.
func URI(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		// Unparsable ("postgres://u:pw@[::1/x"): mask what looks like a
		// password all the same.
		return params(password(s))
	}
	// Split s as url.Parse does: fragment, then query, then authority.
	rest, frag, hasFrag := strings.Cut(s, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	if _, ok := u.User.Password(); ok {
		rest = password(rest)
	}
	out := rest
	if hasQuery {
		out += "?" + params(query)
	}
	if hasFrag {
		out += "#" + frag
	}
	return out
}

var (
	uriRE   = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)
	paramRE = regexp.MustCompile(`([A-Za-z0-9_.-]+)=([^&\s"'<>;,)]+)`)
)

// params masks the values of sensitive name=value pairs in s.
func params(s string) string {
	return paramRE.ReplaceAllStringFunc(s, func(kv string) string {
		name, _, _ := strings.Cut(kv, "=")
		if Sensitive(name) {
			return name + "=" + Mask
		}
		return kv
	})
}

// Text masks the credentials of every URI in s, and every sensitive
// name=value pair outside them. A URI's path is left alone: a Hive-style
// partition directory (customer_key=42/) is data, not a credential.
func Text(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range uriRE.FindAllStringIndex(s, -1) {
		b.WriteString(params(s[last:m[0]]))
		b.WriteString(URI(s[m[0]:m[1]]))
		last = m[1]
	}
	b.WriteString(params(s[last:]))
	return b.String()
}

// Handler wraps h so that every string and error attribute and the
// message are passed through Text.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	for i := range as {
		as[i] = attr(as[i])
	}
	return handler{h.Handler.WithAttrs(as)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i := range as {
			out[i] = attr(as[i])
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, Text(err.Error()))
		}
	}
	return a
}

// password masks the password of the user information in s's authority
// ("//user:password@host"), if it has one.
func password(s string) string {
	i := strings.Index(s, "//")
	if i < 0 {
		return s
	}
	auth := s[i+2:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return s
	}
	colon := strings.Index(auth[:at], ":")
	if colon < 0 {
		return s
	}
	return s[:i+2+colon+1] + Mask + s[i+2+at:]
}
