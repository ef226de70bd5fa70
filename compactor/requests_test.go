package compactor

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
)

// newCountedS3Env is newS3Env with every S3 request going through a
// counting proxy.
func newCountedS3Env(t *testing.T, spec iceberg.PartitionSpec) (*env, *iceberg.Schema, *servers.RequestCounter, servers.S3Server) {
	t.Helper()
	counter, srv := servers.S3(t).Counted(t)
	home := t.TempDir()
	cfg := configs.Embedded(home)
	props := srv.Props()
	props["type"], props["uri"], props["warehouse"] = "sql", servers.Postgres(t), "s3://"+srv.Bucket+"/warehouse"
	cfg.Buckets[0].Catalog = props
	e, _ := newEnvWith(t, cfg, home, tableenv.BaseSchema, spec, "2")
	return e, tableenv.BaseSchema, counter, srv
}

// A compaction of small files on S3 reads each input with one request,
// its footer included, and each manifest once, even when a minimum file
// age makes the run read the files' commit times from the manifests, and
// reads its output's footer back in a few ranges. The run's figures report its
// storage requests per input file.
func TestRequestsPerSmallInputOnS3(t *testing.T) {
	e, _, counter, srv := newCountedS3Env(t, *iceberg.UnpartitionedSpec)
	const inputs = 40
	tbl := e.Load()
	// Pages of 16 KiB: the inputs' pages are worth keeping as they
	// are (ownChunk), and the proof reads the kept pages back by
	// their bytes.
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"write.parquet.page-size-bytes": "16384"}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < inputs; i++ {
		tbl = e.Append(tbl, 200)
	}
	e.Defaults.Knobs.MinFileAgeMinutes = 60
	e.opts = jobs.Options{Now: time.Now().Add(2 * time.Hour)}
	var dataFiles, manifests []string
	for _, df := range e.dataFiles() {
		dataFiles = append(dataFiles, objectPath(t, srv.Bucket, df.FilePath()))
	}
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		manifests = append(manifests, objectPath(t, srv.Bucket, m.FilePath()))
	}
	counter.TakePaths()
	// The output is of more than 64 KiB: read back, it would be in ranges.
	out, fig := e.compact(&Job{MinInputFiles: 2, wholeFileBytes: 64 << 10})
	paths := counter.TakePaths()
	if out.Status != state.Successful || fig.GroupsMerged != 1 || fig.InputFiles != inputs {
		t.Fatalf("compaction: %s %s: %d groups merged, %d inputs", out.Status, out.FailureMessage, fig.GroupsMerged, fig.InputFiles)
	}
	reads := func(keys []string) (total, most int) {
		for _, k := range keys {
			total += paths[k]
			most = max(most, paths[k])
		}
		return total, most
	}
	dataReqs, dataMost := reads(dataFiles)
	manifestReqs, manifestMost := reads(manifests)
	total := servers.Total(paths)
	t.Logf("%d requests for %d inputs: %d to the inputs, %d to their %d manifests; %d pages kept; the run's figures: %s",
		total, inputs, dataReqs, manifestReqs, len(manifests), fig.PagesKept, fig.Cost.Text())
	if per := float64(dataReqs) / inputs; per > 1.1 || dataMost > 1 {
		t.Errorf("%.2f requests per small input file (at most %d for one), want at most 1.1", per, dataMost)
	}
	if manifestMost > 1 {
		t.Errorf("a manifest was read %d times in one run", manifestMost)
	}
	// The rest is the run's own: loading the table, the manifest
	// rewrite's and the data rewrite's commits (each reads the head it
	// commits on and writes a manifest list, manifests and a metadata
	// file), the output and the proof's ranges: 27 when this was written,
	// with the output read back whole, against 36 before three repeated
	// reads went: the equality-delete stage's second load and scan of a
	// table without equality deletes, the load of the table the manifest
	// rewrite's commit had just returned, and each commit's second read
	// of its head's manifest list. Read back in ranges, the output takes
	// three requests, not one: its magic, its end and one range, from
	// which its small column chunks are read too (they took one request
	// each before), and the pages kept as they were take none of their
	// own (one each when their headers were read apart). 23 since the
	// data commit's first attempt takes the table it was staged on when
	// the catalog's metadata location is unchanged (bucket.Refresh) and
	// the attempt staged on it: no metadata file read again, and no
	// second manifest list written (and deleted); and since the data
	// commit reads the manifest list and the merged manifest the scan
	// held, not again from the store. 20 since the proof decodes the
	// bytes sent, which the store acknowledged, instead of reading the
	// output back (TestProofFromTheBytesSentOnS3 reads it back).
	if other := total - dataReqs - manifestReqs; other > 20 {
		t.Errorf("%d requests besides the inputs and their manifests, want at most 20", other)
	}
	if fig.OutputsProvenAsSent != 1 {
		t.Errorf("%d outputs proven from the bytes sent, want 1", fig.OutputsProvenAsSent)
	}
	if fig.PagesKept == 0 {
		t.Error("no page kept as it was: the proof's reads of kept pages go untested")
	}
	if fig.Cost == nil || fig.Cost.StorageRequestsPerObject <= 0 {
		t.Errorf("the figures report no storage requests per input file: %+v", fig.Cost)
	}
}

// objectPath is the proxy's URL path of an s3:// location on a
// path-style endpoint.
func objectPath(t *testing.T, bucket, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil || u.Host != bucket {
		t.Fatalf("%s is not in bucket %s", loc, bucket)
	}
	return "/" + bucket + "/" + strings.TrimPrefix(u.Path, "/")
}

// A run that only merges manifests reads each on S3 once: the manifest
// rewrite reads them, and the scan after it reads the merged one.
func TestManifestRewriteReadsOnceOnS3(t *testing.T) {
	e, _, counter, srv := newCountedS3Env(t, *iceberg.UnpartitionedSpec)
	tbl := e.Load()
	for range 20 {
		tbl = e.Append(tbl, 5)
	}
	list := manifestsOf(t, e, tbl)
	counter.TakePaths()
	out, fig := e.compact(&Job{MinInputFiles: 1000})
	paths := counter.TakePaths()
	if out.Status != state.Successful || fig.ManifestsRewritten != 20 || fig.GroupsPlanned != 0 {
		t.Fatalf("%s %s: %d manifests rewritten, %d groups planned", out.Status, out.FailureMessage, fig.ManifestsRewritten, fig.GroupsPlanned)
	}
	for _, m := range list {
		if n := paths[objectPath(t, srv.Bucket, m.FilePath())]; n != 1 {
			t.Errorf("manifest %s read %d times, want once", m.FilePath(), n)
		}
	}
}

// An output is proved from the bytes icekeeper sent, kept beside the
// upload, when the store acknowledged them with its own digest of what it
// took: the object is then not read back; only its footer is, by the
// check every output gets (rebase.VerifyOutput). Where the store's answer
// gives no digest, or one of other bytes (a CRC32 or an ETag that is not
// theirs), the output is read back from the store and proved from there;
// so it is when no copy of the bytes could be kept (a temporary directory
// that is not there). The run succeeds and its rows are exact either way.
func TestProofFromTheBytesSentOnS3(t *testing.T) {
	const crc = "X-Amz-Checksum-Crc32"
	footerReads := -1 // the output's reads when it is proved as sent
	for _, tc := range []struct {
		name   string
		answer func(http.Header)
		noTemp bool
	}{
		{"acknowledged", nil, false},
		{"no digest", func(h http.Header) { h.Del(crc); h.Del("Etag") }, false},
		{"another CRC32", func(h http.Header) { h.Set(crc, "AAAAAA==") }, false},
		{"another ETag", func(h http.Header) { h.Del(crc); h.Set("Etag", `"00000000000000000000000000000000"`) }, false},
		{"no temporary directory", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noTemp {
				t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
			}
			srv := servers.S3(t)
			if tc.answer != nil {
				srv = srv.Answered(t, func(r *http.Response) {
					if r.Request.Method == http.MethodPut && strings.Contains(r.Request.URL.Path, "/data/") {
						tc.answer(r.Header)
					}
				})
			}
			counter, srv := srv.Counted(t)
			home := t.TempDir()
			e, tbl := newEnvWith(t, tableenv.SQLOnS3(home, srv), home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
			for range 6 {
				tbl = e.Append(tbl, 200)
			}
			want := e.Rows(tbl, 0)
			before := tbl.CurrentSnapshot().SnapshotID
			counter.TakePaths()
			out, fig := e.compact(&Job{MinInputFiles: 2})
			paths := counter.TakePaths()
			if out.Status != state.Successful || fig.GroupsMerged != 1 || fig.OutputFiles != 1 {
				t.Fatalf("compaction: %s %s: %d groups merged, %d outputs", out.Status, out.FailureMessage, fig.GroupsMerged, fig.OutputFiles)
			}
			e.checkSameRows(want, before)
			output := objectPath(t, srv.Bucket, e.dataFiles()[0].FilePath())
			reads := paths[output] - 1 // its PUT
			t.Logf("%d outputs proven from the bytes sent; %d requests read the output", fig.OutputsProvenAsSent, reads)
			sent := tc.answer == nil && !tc.noTemp
			if sent != (fig.OutputsProvenAsSent == 1) {
				t.Fatalf("the store acknowledged the upload: %v; yet %d outputs proven from the bytes sent", sent, fig.OutputsProvenAsSent)
			}
			if sent {
				footerReads = reads
			} else if footerReads < 0 || reads <= footerReads {
				t.Fatalf("the output was read with %d requests, as many as its footer check's %d: not read back", reads, footerReads)
			}
		})
	}
}
