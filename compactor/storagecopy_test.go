package compactor

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/maintenance"
)

// healthyRows is the row limit of the inputs' row groups in the storage
// copy tests: full by rows, each row group is copied, and at this many
// rows of the base schema it is over S3's 5 MiB smallest part.
const healthyRows = 400_000

// healthyTable fills tbl with files of two full row groups each, under a
// target of 512 MB.
func healthyTable(e *env, tbl *table.Table, files int) *table.Table {
	e.T.Helper()
	return healthyTableOf(e, tbl, files, healthyRows)
}

// healthyTableOf is healthyTable with row groups of rows rows.
func healthyTableOf(e *env, tbl *table.Table, files, rows int) *table.Table {
	e.T.Helper()
	e.Defaults.Configs[maintenance.Compaction].Compaction().TargetFileSizeMB = maintenance.Int(512)
	tbl = e.setProps(tbl, iceberg.Properties{"write.parquet.row-group-limit": strconv.Itoa(rows),
		"write.parquet.row-group-size-bytes": strconv.Itoa(8 << 20)})
	for range files {
		tbl = e.Append(tbl, 2*rows)
	}
	return tbl
}

// throughBytes is what a run's requests moved through icekeeper, as its
// meter counted them.
func throughBytes(c *cost.Figures) int64 { return c.BytesRead + c.BytesWritten }

// On S3, a compaction of healthy row groups has the store copy them
// (UploadPartCopy): at most 5% of the compacted bytes pass through
// icekeeper, read or uploaded, where the old path moves each byte at
// least twice; rows are exact and iceberg-go reads the output
// (checkCompaction), and the row check proved it before the commit.
func TestStorageCopiesOnS3(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "part copies", true: "read and upload"}[old], func(t *testing.T) {
			e, tbl := newS3Env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			checkStorageCopies(e, tbl, old)
		})
	}
}

// On format version 3 the copies get the two row-lineage columns encoded
// for their rows, added as chunks of their own after the last row group
// (stitcher.tail), so that each copy stays one range the store copies
// whole: at most 5% of the bytes pass through icekeeper, for row groups
// of about 6 MB as of 12 MB (before, those chunks sat between the copies
// and 198% and 60% passed; plain row IDs alone were 7%). A second
// compaction (of the 6 MB row groups) takes the first one's output with
// two new files: its row groups hold their lineage, in the tail, and are
// copied by the store again, their lineage chunks by icekeeper. Rows are exact, row IDs kept, and the row check proves
// every output.
func TestStorageCopiesOnS3V3(t *testing.T) {
	for _, rows := range []int{healthyRows, 2 * healthyRows} {
		t.Run(strconv.Itoa(rows)+" rows", func(t *testing.T) {
			e, tbl := newS3Env(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "3")
			tbl = healthyTableOf(e, tbl, 2, rows)
			check := func(fig *Figures, groups int) {
				t.Helper()
				share := float64(throughBytes(fig.Cost)) / float64(fig.InputBytes)
				t.Logf("%d row groups copied (%d by the storage); %.1f%% of the bytes through icekeeper", fig.RowGroupsCopied, fig.RowGroupsCopiedByStorage, 100*share)
				if fig.RowGroupsCopied != groups || fig.RowGroupsCopiedByStorage != groups || fig.OutputFiles != 1 {
					t.Fatalf("%d row groups copied, %d by the storage, %d outputs; want %d, %d, 1", fig.RowGroupsCopied, fig.RowGroupsCopiedByStorage, fig.OutputFiles, groups, groups)
				}
				if share > 0.05 {
					t.Errorf("%.1f%% of the compacted bytes passed through icekeeper, want at most 5%%", 100*share)
				}
			}
			check(e.checkLineage(&Job{MinInputFiles: 2}), 4)
			if rows == healthyRows {
				healthyTableOf(e, e.Load(), 2, rows)
				check(e.checkLineage(&Job{MinInputFiles: 2}), 8)
			}
		})
	}
}

// The same on SeaweedFS, through its Iceberg REST catalog: its S3
// gateway takes part copies too. The catalog's answers count as bytes
// through icekeeper as well.
func TestStorageCopiesOnSeaweedFS(t *testing.T) {
	e, tbl := newRESTEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	checkStorageCopies(e, tbl, false)
}

// checkStorageCopies compacts three files of two healthy row groups each
// into one, and checks the bytes that passed through icekeeper: at most
// 5% of the input with storage copies, and each byte at least twice on
// the old path (NoStorageCopies): read, and uploaded.
func checkStorageCopies(e *env, tbl *table.Table, old bool) {
	t := e.T
	t.Helper()
	healthyTable(e, tbl, 3)
	fig := e.checkCompaction(&Job{MinInputFiles: 2, NoStorageCopies: old})
	through := throughBytes(fig.Cost)
	share := float64(through) / float64(fig.InputBytes)
	t.Logf("%d row groups copied, %d re-encoded; %d of %d input bytes through icekeeper (%.1f%%); %s",
		fig.RowGroupsCopied, fig.RowGroupsReencoded, through, fig.InputBytes, 100*share, fig.Cost.Text())
	if fig.RowGroupsCopied != 6 || fig.RowGroupsReencoded != 0 || fig.OutputFiles != 1 {
		t.Fatalf("%d row groups copied, %d re-encoded, %d outputs; want 6, 0, 1", fig.RowGroupsCopied, fig.RowGroupsReencoded, fig.OutputFiles)
	}
	if want := map[bool]int{false: 6, true: 0}[old]; fig.RowGroupsCopiedByStorage != want {
		t.Errorf("%d row groups copied by the storage, want %d", fig.RowGroupsCopiedByStorage, want)
	}
	if !old && share > 0.05 {
		t.Errorf("%.1f%% of the compacted bytes passed through icekeeper, want at most 5%%", 100*share)
	}
	if old && share < 2 {
		t.Errorf("the old path moved %.1f%% of the bytes, expected reading and uploading each", 100*share)
	}
	// The proof decodes what was sent, and samples the copied ranges
	// from the store (sentCopy): the store acknowledged every part.
	if fig.OutputsProvenAsSent != 1 {
		t.Errorf("%d outputs proven from the bytes sent, want 1", fig.OutputsProvenAsSent)
	}
}

// A store that refuses UploadPartCopy gets the old path: the run reads
// and uploads the row groups, its rows are exact, and it asks the store
// no more than once per group that may be running when the answer comes
// (Parallelism, 2 here), not once per row group.
func TestStorageCopiesRefused(t *testing.T) {
	srv := servers.S3(t)
	refusing, attempts := refusePartCopies(t, srv.Endpoint)
	srv.Endpoint = refusing
	home := t.TempDir()
	cfg := configs.Embedded(home)
	props := srv.Props()
	props["type"], props["uri"], props["warehouse"] = "sql", servers.Postgres(t), "s3://"+srv.Bucket+"/warehouse"
	cfg.Buckets[0].Catalog = props
	e, tbl := newEnvWith(t, cfg, home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	healthyTable(e, tbl, 3)
	fig := e.checkCompaction(&Job{MinInputFiles: 2})
	if fig.RowGroupsCopied != 6 || fig.RowGroupsCopiedByStorage != 0 {
		t.Fatalf("%d row groups copied, %d by the storage; want 6, 0", fig.RowGroupsCopied, fig.RowGroupsCopiedByStorage)
	}
	if n := attempts.Load(); n < 1 || n > 2 {
		t.Errorf("%d part copies asked of a store that refuses them, want 1 (2 at most)", n)
	}
	if share := float64(throughBytes(fig.Cost)) / float64(fig.InputBytes); share < 1 {
		t.Errorf("%.1f%% of the bytes through icekeeper: the row groups were not read and uploaded", 100*share)
	}
}

// refusePartCopies starts a proxy to endpoint that answers every
// UploadPartCopy (a PUT with x-amz-copy-source) with S3's 501
// NotImplemented, as a store without part copies does, and counts them.
func refusePartCopies(t *testing.T, endpoint string) (string, *atomic.Int64) {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("x-amz-copy-source") != "" {
			attempts.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &attempts
}

// On local disk the healthy row groups are copied between files by the
// kernel (copy_file_range) or, forced to the old path, through memory:
// either way the output's row groups are the inputs' bytes, its rows
// exact, and iceberg-go reads it (checkCompaction).
func TestStorageCopiesLocal(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy_file_range", true: "read and write"}[old], func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			tbl = healthyTable(e, tbl, 3)
			inputs := map[[32]byte]bool{}
			for _, df := range e.dataFiles() {
				pf := openParquet(t, df)
				for i := range pf.Metadata().RowGroups {
					inputs[rowGroupHash(t, pf, &pf.Metadata().RowGroups[i])] = true
				}
			}
			fig := e.checkCompaction(&Job{MinInputFiles: 2, NoStorageCopies: old})
			if fig.RowGroupsCopied != 6 || fig.OutputFiles != 1 {
				t.Fatalf("%d row groups copied, %d outputs; want 6, 1", fig.RowGroupsCopied, fig.OutputFiles)
			}
			if want := map[bool]int{false: 6, true: 0}[old]; fig.RowGroupsCopiedByStorage != want {
				t.Errorf("%d row groups copied by the storage, want %d", fig.RowGroupsCopiedByStorage, want)
			}
			pf := openParquet(t, e.dataFiles()[0])
			for i := range pf.Metadata().RowGroups {
				if !inputs[rowGroupHash(t, pf, &pf.Metadata().RowGroups[i])] {
					t.Errorf("output row group %d is not an input's bytes", i)
				}
			}
		})
	}
}
