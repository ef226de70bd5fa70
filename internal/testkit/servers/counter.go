package servers

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// RequestCounter is a proxy in front of an S3 server that counts the
// requests by kind (the HTTP method, or LIST for a ListObjectsV2). It
// forwards the client's Host header unchanged, so SigV4 signatures still
// verify: what users pay for per request, counted as the server sees it.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[string]int
	paths  map[string]int // requests by URL path (bucket and key)
	conns  int
}

// CountRequests starts a counting proxy to endpoint on loopback and
// returns it with its URL, to use as the S3 endpoint.
func CountRequests(t testing.TB, endpoint string) (*RequestCounter, string) {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c := &RequestCounter{counts: map[string]int{}, paths: map[string]int{}}
	proxy := reverseProxy(target)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method
		if r.Method == http.MethodGet && r.URL.Query().Has("list-type") {
			kind = "LIST"
		}
		c.mu.Lock()
		c.counts[kind]++
		c.paths[r.URL.Path]++
		c.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			c.mu.Lock()
			c.conns++
			c.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// Counted returns s reached through a counting proxy (CountRequests), and
// the proxy's counter.
func (s S3Server) Counted(t testing.TB) (*RequestCounter, S3Server) {
	t.Helper()
	c, endpoint := CountRequests(t, s.Endpoint)
	s.Endpoint = endpoint
	return c, s
}

// reverseProxy forwards to target with the client's Host header, so
// SigV4 signatures still verify.
func reverseProxy(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
}

// Intercepted returns s reached through a proxy on loopback (Intercept).
func (s S3Server) Intercepted(t testing.TB, fn func(*http.Request)) S3Server {
	t.Helper()
	s.Endpoint = Intercept(t, s.Endpoint, fn)
	return s
}

// Intercept starts a proxy to endpoint on loopback that hands every
// request to fn before forwarding it, and returns the proxy's URL: fn may
// look at the request's headers, and replace its body (a request damaged
// on the way).
func Intercept(t testing.TB, endpoint string, fn func(*http.Request)) string {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := reverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fn(r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Answered returns s reached through a proxy on loopback that hands every
// response to fn before the client has it: fn may change its headers (a
// store that answers otherwise).
func (s S3Server) Answered(t testing.TB, fn func(*http.Response)) S3Server {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := reverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		fn(r)
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	s.Endpoint = srv.URL
	return s
}

// Take returns the counts since the last Take, and starts again.
func (c *RequestCounter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	c.counts, c.paths = map[string]int{}, map[string]int{}
	return out
}

// TakePaths returns the counts by URL path ("/bucket/key" on a path-style
// endpoint) since the last Take or TakePaths, and starts again.
func (c *RequestCounter) TakePaths() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.paths
	c.counts, c.paths = map[string]int{}, map[string]int{}
	return out
}

// Conns is the number of connections clients have opened to the proxy.
func (c *RequestCounter) Conns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}

// Total is the sum of counts.
func Total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}
