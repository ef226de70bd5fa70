package cost

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Requests are counted by kind into the meter their context carries, and
// not at all without one.
func TestTransportCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "5")
		w.Write([]byte("hello"))
	}))
	defer srv.Close()
	m := &Meter{}
	client := &http.Client{Transport: Transport{}}
	do := func(ctx context.Context, method, target, body string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body, req.ContentLength = http.NoBody, 0
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ctx := With(context.Background(), m)
	do(ctx, "GET", "/bucket/key.parquet", "")
	do(ctx, "GET", "/bucket?list-type=2&prefix=t/", "")
	do(ctx, "PUT", "/bucket/out.parquet", "0123456789")
	do(ctx, "POST", "/bucket?delete", "<Delete/>")
	do(ctx, "HEAD", "/bucket/key.parquet", "")
	do(context.Background(), "GET", "/bucket/other", "") // no meter: not counted
	f := m.Figures(DefaultPrices(), Work{})
	want := map[string]int64{Get: 1, List: 1, Put: 1, Delete: 1, Head: 1}
	if f.Requests != 5 || len(f.ByKind) != len(want) {
		t.Fatalf("counted %d requests %v, want 5 %v", f.Requests, f.ByKind, want)
	}
	for k, n := range want {
		if f.ByKind[k] != n {
			t.Errorf("%s: %d, want %d", k, f.ByKind[k], n)
		}
	}
	if f.BytesWritten != 10+int64(len("<Delete/>")) {
		t.Errorf("bytes written %d", f.BytesWritten)
	}
	if f.BytesRead != 4*5 { // HEAD has no body
		t.Errorf("bytes read %d, want 20", f.BytesRead)
	}
	// GET, HEAD at $0.0004 per 1,000; PUT, LIST at $0.005; DELETE free.
	if wantUSD := 2*0.0004/1000 + 2*0.005/1000; math.Abs(f.USD-wantUSD) > 1e-12 {
		t.Errorf("usd %g, want %g", f.USD, wantUSD)
	}
}

// S3 Tables' price for the same work: per object and per GB, sort
// dearer than bin-pack, nothing for work it does not bill.
func TestS3TablesPrice(t *testing.T) {
	p := DefaultPrices()
	var m *Meter
	w := Work{Objects: 2000, Bytes: 4 << 30, Billed: true}
	if got := m.Figures(p, w).S3TablesUSD; math.Abs(got-(0.004+0.02)) > 1e-12 {
		t.Errorf("bin-pack: %g, want 0.024", got)
	}
	w.Sorted = true
	if got := m.Figures(p, w).S3TablesUSD; math.Abs(got-(0.004+0.04)) > 1e-12 {
		t.Errorf("sort: %g, want 0.044", got)
	}
	w.Billed = false
	if got := m.Figures(p, w).S3TablesUSD; got != 0 {
		t.Errorf("unbilled work priced %g", got)
	}
}

func TestText(t *testing.T) {
	f := Figures{Requests: 3, ByKind: map[string]int64{Get: 2, Put: 1}, BytesRead: 2048, BytesWritten: 100, USD: 0.0000058,
		ProcessedObjects: 2, ProcessedBytes: 2048, S3TablesUSD: 0.000004}
	want := "cost: 3 requests (GET 2, PUT 1), 2.0 KiB read, 100 B written: $0.0000058; S3 Tables would charge $0.0000040 for 2 objects, 2.0 KiB"
	if got := f.Text(); got != want {
		t.Errorf("Text() =\n%q, want\n%q", got, want)
	}
	local := Figures{ProcessedObjects: 2, ProcessedBytes: 2048, S3TablesUSD: 0.000004}
	if got, want := local.Text(), "cost: no storage requests; S3 Tables would charge $0.0000040 for 2 objects, 2.0 KiB"; got != want {
		t.Errorf("Text() on local disk = %q, want %q", got, want)
	}
}

// The time requests waited on a catalog's rate, and the refusals among
// them, are in the figures and in the line; a meterless context records
// nothing.
func TestWaited(t *testing.T) {
	m := &Meter{}
	m.Waited(1500*time.Millisecond, false)
	m.Waited(time.Minute, true)
	m.Waited(0, true)
	From(context.Background()).Waited(time.Hour, true)
	m.add(Catalog, 0, 0)
	f := m.Figures(DefaultPrices(), Work{})
	if f.CatalogRefusals != 2 || f.CatalogWaitMs != 61500 {
		t.Fatalf("figures %+v, want 2 refusals and 61500 ms", f)
	}
	if want := "; waited 1m1.5s on the catalog's rate (2 requests refused)"; !strings.HasSuffix(f.Text(), want) {
		t.Errorf("Text() = %q, want it to end %q", f.Text(), want)
	}
}
