package bucket

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// etagServer is a REST catalog's table route that answers conditional
// loads as the Iceberg REST spec describes, and counts what it sent.
type etagServer struct {
	mu          sync.Mutex
	version     int
	sendETags   bool
	full, short int // 200s with a body, 304s
	conditional []string
}

func (s *etagServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPost {
		s.version++
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.URL.Path == "/v1/namespaces/ns/tables/missing" {
		http.Error(w, `{"error":{"message":"no such table","type":"NoSuchTableException","code":404}}`, http.StatusNotFound)
		return
	}
	etag := fmt.Sprintf(`"v%d"`, s.version)
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		s.conditional = append(s.conditional, inm)
		if s.sendETags && inm == etag {
			s.short++
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if s.sendETags {
		w.Header().Set("ETag", etag)
	}
	w.Header().Set("Content-Type", "application/json")
	s.full++
	fmt.Fprintf(w, `{"metadata-location":"s3://b/t/metadata/v%d.metadata.json","metadata":{"padding":%q}}`, s.version, strings.Repeat("x", 1000))
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// A table load answered with an ETag is kept; the next load of the table
// is conditional and a 304 is answered with the kept body as a 200; a
// changed table is loaded again; a commit on the table's path forgets it.
func TestConditionalTableLoads(t *testing.T) {
	s := &etagServer{sendETags: true}
	srv := httptest.NewServer(s)
	defer srv.Close()
	tr := newETagTransport(http.DefaultTransport, defaultETagBytes)
	c := &http.Client{Transport: tr}
	url := srv.URL + "/v1/namespaces/ns/tables/t"

	code, first := get(t, c, url)
	if code != http.StatusOK || !strings.Contains(first, "v0.metadata.json") {
		t.Fatalf("first load: %d %s", code, first)
	}
	code, again := get(t, c, url)
	if code != http.StatusOK || again != first {
		t.Fatalf("unchanged load: %d, body equal %v", code, again == first)
	}
	if s.full != 1 || s.short != 1 || len(s.conditional) != 1 || s.conditional[0] != `"v0"` {
		t.Fatalf("server sent %d bodies and %d 304s; conditional requests %v", s.full, s.short, s.conditional)
	}

	s.mu.Lock()
	s.version++ // a writer committed
	s.mu.Unlock()
	if _, body := get(t, c, url); !strings.Contains(body, "v1.metadata.json") {
		t.Fatalf("a changed table was answered from what was kept: %s", body)
	}
	if s.full != 2 {
		t.Fatalf("server sent %d bodies, want 2", s.full)
	}

	// A commit through the catalog forgets the table: the next load is
	// not conditional, whatever the server's ETags say.
	resp, err := c.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	n := len(s.conditional)
	if _, body := get(t, c, url); !strings.Contains(body, "v2.metadata.json") || len(s.conditional) != n {
		t.Fatalf("after a commit: %s, %d conditional requests (was %d)", body, len(s.conditional), n)
	}

	// Other routes and errors pass as they are, and nothing is kept of them.
	if code, _ := get(t, c, srv.URL+"/v1/namespaces/ns/tables/missing"); code != http.StatusNotFound {
		t.Fatalf("missing table: %d", code)
	}
	if _, ok := tr.byURL[srv.URL+"/v1/namespaces/ns/tables/missing"]; ok {
		t.Fatal("an error response was kept")
	}
}

// A server that sends no ETag gets no conditional request, and nothing is
// kept.
func TestLoadsWithoutETags(t *testing.T) {
	s := &etagServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	tr := newETagTransport(http.DefaultTransport, defaultETagBytes)
	c := &http.Client{Transport: tr}
	for range 3 {
		get(t, c, srv.URL+"/v1/namespaces/ns/tables/t")
	}
	if s.full != 3 || len(s.conditional) != 0 || tr.lru.Len() != 0 {
		t.Fatalf("%d bodies, conditional %v, %d kept", s.full, s.conditional, tr.lru.Len())
	}
}

// The kept bodies stay within the bound, the least recently used going
// first, and a body larger than the bound is not kept.
func TestConditionalLoadsBounded(t *testing.T) {
	s := &etagServer{sendETags: true}
	srv := httptest.NewServer(s)
	defer srv.Close()
	tr := newETagTransport(http.DefaultTransport, 2500) // two bodies of about 1,070 bytes
	c := &http.Client{Transport: tr}
	for _, name := range []string{"a", "b", "a", "c"} {
		get(t, c, srv.URL+"/v1/namespaces/ns/tables/"+name)
	}
	kept := func(name string) bool { _, ok := tr.byURL[srv.URL+"/v1/namespaces/ns/tables/"+name]; return ok }
	if !kept("a") || kept("b") || !kept("c") || tr.bytes > 2500 {
		t.Fatalf("kept a=%v b=%v c=%v, %d bytes", kept("a"), kept("b"), kept("c"), tr.bytes)
	}
	small := newETagTransport(http.DefaultTransport, 100)
	get(t, &http.Client{Transport: small}, srv.URL+"/v1/namespaces/ns/tables/a")
	if small.lru.Len() != 0 || small.bytes != 0 {
		t.Fatalf("a body over the bound was kept: %d entries, %d bytes", small.lru.Len(), small.bytes)
	}
}
