package bucket

import (
	"bytes"
	"container/list"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
)

// etagTransport makes table loads through a REST catalog conditional, as
// the Iceberg REST spec (1.11) defines: a load answered with an ETag is
// kept, the next load of the same table sends If-None-Match, and a 304
// Not Modified is answered from what was kept. A table that did not
// change then costs its catalog a status line, not its whole metadata,
// at every fire. A server that sends no ETag (SeaweedFS's catalog does
// not) sees no difference: nothing is kept and nothing is added.
//
// Only GETs of a table's own path are kept. Any other request on that
// path (a commit, a drop) forgets it, so the next load is unconditional
// even from a server whose ETags were wrong. The kept bodies are bounded
// by maxBytes, the least recently used dropped first.
type etagTransport struct {
	base     http.RoundTripper
	maxBytes int64

	mu    sync.Mutex
	bytes int64
	lru   *list.List // of *etagEntry, most recently used first
	byURL map[string]*list.Element
}

type etagEntry struct {
	url    string
	path   string
	etag   string
	header http.Header
	body   []byte
}

// defaultETagBytes bounds the table loads kept for conditional requests:
// a streaming table's metadata is a few MB, so this keeps the tables of
// a busy bucket, not all of a fleet's.
const defaultETagBytes = 64 << 20

func newETagTransport(base http.RoundTripper, maxBytes int64) *etagTransport {
	return &etagTransport{base: base, maxBytes: maxBytes, lru: list.New(), byURL: map[string]*list.Element{}}
}

// tableLoadPath matches a table's own route: …/namespaces/{ns}/tables/{name}.
var tableLoadPath = regexp.MustCompile(`/namespaces/[^/]+/tables/[^/]+$`)

func (t *etagTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !tableLoadPath.MatchString(r.URL.Path) {
		return t.base.RoundTrip(r)
	}
	key := r.URL.String()
	if r.Method != http.MethodGet {
		t.forgetPath(r.URL.Path)
		return t.base.RoundTrip(r)
	}
	kept := t.get(key)
	if kept != nil {
		r = r.Clone(r.Context())
		r.Header.Set("If-None-Match", kept.etag)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && kept != nil:
		resp.Body.Close()
		return kept.response(r), nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		t.put(&etagEntry{url: key, path: r.URL.Path, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body})
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	default:
		t.forget(key)
		return resp, nil
	}
}

// response is the kept load as the 200 the server would have sent.
func (e *etagEntry) response(r *http.Request) *http.Response {
	h := e.header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(e.body)))
	h.Del("Content-Encoding")
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(e.body)), ContentLength: int64(len(e.body)), Request: r}
}

func (t *etagTransport) get(key string) *etagEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	el, ok := t.byURL[key]
	if !ok {
		return nil
	}
	t.lru.MoveToFront(el)
	return el.Value.(*etagEntry)
}

func (t *etagTransport) put(e *etagEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(e.url)
	if int64(len(e.body)) > t.maxBytes {
		return
	}
	t.byURL[e.url] = t.lru.PushFront(e)
	t.bytes += int64(len(e.body))
	for t.bytes > t.maxBytes {
		t.removeLocked(t.lru.Back().Value.(*etagEntry).url)
	}
}

func (t *etagTransport) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(key)
}

// forgetPath forgets every kept load of the table at path, whatever its
// query.
func (t *etagTransport) forgetPath(path string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for el := t.lru.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*etagEntry); e.path == path {
			t.removeLocked(e.url)
		}
		el = next
	}
}

func (t *etagTransport) removeLocked(key string) {
	el, ok := t.byURL[key]
	if !ok {
		return
	}
	t.lru.Remove(el)
	delete(t.byURL, key)
	t.bytes -= int64(len(el.Value.(*etagEntry).body))
}
