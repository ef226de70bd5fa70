// Package cost measures what a run spends where users pay for it: the
// requests it makes to object storage and the catalog, the bytes they
// move, and the data it processes, and prices them. A Meter travels in
// the run's context; the HTTP clients icekeeper builds count every
// request whose context carries one.
package cost

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/icekeeper/icekeeper/internal/human"
)

// Request kinds, as object storage prices them. LIST is a GET on a
// bucket; a multi-object delete (a POST with ?delete) is a DELETE;
// CATALOG is any request to an Iceberg REST catalog.
const (
	Get     = "GET"
	Put     = "PUT"
	List    = "LIST"
	Delete  = "DELETE"
	Head    = "HEAD"
	Post    = "POST"
	Catalog = "CATALOG"
)

var kinds = [...]string{Get, Put, List, Delete, Head, Post, Catalog}

// Meter counts one run's requests and bytes. Its methods are safe for
// concurrent use: a run's requests go out from many goroutines.
type Meter struct {
	requests     [len(kinds)]atomic.Int64
	bytesRead    atomic.Int64
	bytesWritten atomic.Int64
	refusals     atomic.Int64
	waited       atomic.Int64 // nanoseconds
}

type meterKey struct{}

// With returns ctx carrying m: every request made with the result (or a
// context derived from it) is counted into m.
func With(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// From returns the meter ctx carries, or nil.
func From(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

func (m *Meter) add(kind string, read, written int64) {
	for i, k := range kinds {
		if k == kind {
			m.requests[i].Add(1)
		}
	}
	if read > 0 {
		m.bytesRead.Add(read)
	}
	if written > 0 {
		m.bytesWritten.Add(written)
	}
}

// Waited records time a request to a REST catalog spent waiting on the
// catalog's rate: for its turn under the bucket's commit rate, or, when
// refused, after the catalog refused it (429, or 503 with Retry-After)
// and asked it to come back later. Each refused attempt is also counted
// as a request when it is sent, as the catalog counts it.
func (m *Meter) Waited(d time.Duration, refused bool) {
	if m == nil {
		return
	}
	if refused {
		m.refusals.Add(1)
	}
	if d > 0 {
		m.waited.Add(int64(d))
	}
}

// KindOf classifies an object-storage request.
func KindOf(r *http.Request) string {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		// ListObjects(V2) and ListObjectVersions: a GET on the bucket
		// with listing parameters.
		if q.Has("list-type") || q.Has("prefix") || q.Has("delimiter") || q.Has("marker") || q.Has("versions") {
			return List
		}
		return Get
	case http.MethodPut:
		return Put
	case http.MethodDelete:
		return Delete
	case http.MethodHead:
		return Head
	case http.MethodPost:
		if q.Has("delete") {
			return Delete
		}
		return Post
	}
	return Get
}

// Figures are what a run spent: requests by kind, the bytes they moved,
// the data the run processed (the input of its rewrites) and the price of
// both. They are recorded with the run's figures under "cost".
type Figures struct {
	// Requests counts every request to object storage and to a REST
	// catalog made by the table file IO and the storage clients icekeeper
	// builds; a SQL catalog's queries and local disk are not requests.
	Requests int64            `json:"requests"`
	ByKind   map[string]int64 `json:"byKind,omitempty"`
	// BytesRead and BytesWritten are the bodies of those requests'
	// responses and requests (as their Content-Length gives them).
	BytesRead    int64 `json:"bytesRead"`
	BytesWritten int64 `json:"bytesWritten"`
	// ProcessedObjects and ProcessedBytes are the input of the run's
	// rewrites: what S3 Tables bills compaction by.
	ProcessedObjects int64 `json:"processedObjects"`
	ProcessedBytes   int64 `json:"processedBytes"`
	// StorageRequestsPerObject is the object-storage requests (every kind
	// but CATALOG) per processed object: for a compaction, requests per
	// input file, reads of its metadata and writes of its outputs
	// included. Each is a round trip and work for the storage server, so
	// a run over small files is judged by it (0: nothing processed).
	StorageRequestsPerObject float64 `json:"storageRequestsPerObject,omitempty"`
	// CatalogRefusals counts the requests a REST catalog refused for its
	// rate and that were sent again when it asked; CatalogWaitMs is how
	// long requests waited on the catalog's rate, for those refusals and
	// for the bucket's commit rate.
	CatalogRefusals int64 `json:"catalogRefusals,omitempty"`
	CatalogWaitMs   int64 `json:"catalogWaitMs,omitempty"`
	// USD is the requests' price at the configured request prices.
	USD float64 `json:"usd"`
	// S3TablesUSD is what S3 Tables' managed compaction would charge for
	// the same processed objects and bytes at the configured prices (0
	// for job types S3 Tables does not bill by processed data).
	S3TablesUSD float64 `json:"s3TablesUSD,omitempty"`
}

// Work is the data a run processed, as its job type reports it.
type Work struct {
	Objects, Bytes int64
	// Sorted is a sort or z-order rewrite, which S3 Tables prices higher
	// than a bin-pack.
	Sorted bool
	// Billed says whether S3 Tables bills this work by processed data
	// (its compaction); otherwise S3TablesUSD stays 0.
	Billed bool
}

// Figures prices what m counted and w processed.
func (m *Meter) Figures(p Prices, w Work) Figures {
	f := Figures{ProcessedObjects: w.Objects, ProcessedBytes: w.Bytes}
	if m != nil {
		f.BytesRead, f.BytesWritten = m.bytesRead.Load(), m.bytesWritten.Load()
		f.CatalogRefusals, f.CatalogWaitMs = m.refusals.Load(), time.Duration(m.waited.Load()).Milliseconds()
		for i, k := range kinds {
			n := m.requests[i].Load()
			if n == 0 {
				continue
			}
			if f.ByKind == nil {
				f.ByKind = map[string]int64{}
			}
			f.ByKind[k] = n
			f.Requests += n
		}
	}
	f.USD = p.requests(f.ByKind)
	if w.Objects > 0 {
		f.StorageRequestsPerObject = float64(f.Requests-f.ByKind[Catalog]) / float64(w.Objects)
	}
	if w.Billed {
		perGB := p.BinpackPerGB
		if w.Sorted {
			perGB = p.SortPerGB
		}
		f.S3TablesUSD = float64(w.Objects)/1000*p.ObjectsPer1000 + float64(w.Bytes)/(1<<30)*perGB
	}
	return f
}

// Transport counts each request whose context carries a Meter, then
// passes it to Base (http.DefaultTransport when nil). Catalog marks a
// REST catalog's transport: its requests count as CATALOG.
type Transport struct {
	Base    http.RoundTripper
	Catalog bool
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	kind := Catalog
	if !t.Catalog {
		kind = KindOf(r)
	}
	count(r, resp, kind)
	return resp, err
}

// Client is Transport for an AWS SDK HTTP client (aws.HTTPClient).
type Client struct {
	Base interface {
		Do(*http.Request) (*http.Response, error)
	}
}

// Do implements aws.HTTPClient.
func (c Client) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.Base.Do(r)
	count(r, resp, KindOf(r))
	return resp, err
}

// count adds r to the meter its context carries, if any. A request that
// failed before an answer counts too: it was sent, or tried.
func count(r *http.Request, resp *http.Response, kind string) {
	m := From(r.Context())
	if m == nil {
		return
	}
	var read int64
	// A HEAD's Content-Length is the object's, not a body that came.
	if resp != nil && resp.ContentLength > 0 && r.Method != http.MethodHead {
		read = resp.ContentLength
	}
	m.add(kind, read, max(r.ContentLength, 0))
}

// Text is f in one line for a terminal: "cost: 183 requests (GET 150,
// PUT 20, LIST 13), 12.3 MiB read, 4.5 MiB written: $0.00012; S3 Tables
// would charge $0.0012 for 8 objects, 36.0 MiB".
func (f Figures) Text() string {
	var b strings.Builder
	if f.Requests == 0 {
		// Local disk, or a SQL catalog's queries: nothing priced.
		b.WriteString("cost: no storage requests")
		if f.S3TablesUSD > 0 {
			fmt.Fprintf(&b, "; S3 Tables would charge %s for %s, %s", human.USD(f.S3TablesUSD),
				human.Count(f.ProcessedObjects, "object"), human.Bytes(f.ProcessedBytes))
		}
		return b.String()
	}
	b.WriteString("cost: " + human.Count(f.Requests, "request"))
	if len(f.ByKind) > 0 {
		var parts []string
		for _, k := range kinds {
			if n := f.ByKind[k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", k, n))
			}
		}
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	fmt.Fprintf(&b, ", %s read, %s written: %s", human.Bytes(f.BytesRead), human.Bytes(f.BytesWritten), human.USD(f.USD))
	if f.StorageRequestsPerObject > 0 {
		fmt.Fprintf(&b, "; %.2f storage requests per object processed", f.StorageRequestsPerObject)
	}
	if f.S3TablesUSD > 0 {
		fmt.Fprintf(&b, "; S3 Tables would charge %s for %s, %s", human.USD(f.S3TablesUSD),
			human.Count(f.ProcessedObjects, "object"), human.Bytes(f.ProcessedBytes))
	}
	if f.CatalogRefusals > 0 || f.CatalogWaitMs > 0 {
		fmt.Fprintf(&b, "; waited %v on the catalog's rate (%s refused)", time.Duration(f.CatalogWaitMs)*time.Millisecond,
			human.Count(f.CatalogRefusals, "request"))
	}
	return b.String()
}
