package records

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/tablecheck"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The generated timestamps and dates lie in the five days from day 20000
// of the epoch. expiryNow puts the cutoff of a 30-day expiration at noon
// of the third: two days expire, one day is split, two stay.
var expiryNow = time.UnixMicro(20002*86_400_000_000 + 43_200_000_000).Add(30 * 24 * time.Hour)

// env is a table and what runs record expiration on it.
type env struct{ *tableenv.Env }

func newEnv(t *testing.T, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	e, tbl := tableenv.New(t, sc, spec, format)
	return &env{e}, tbl
}

func newRESTEnv(t *testing.T, sc *iceberg.Schema, spec iceberg.PartitionSpec, format string) (*env, *table.Table) {
	t.Helper()
	e, tbl := tableenv.NewREST(t, sc, spec, format)
	return &env{e}, tbl
}

// setColumn sets the table's expiration column.
func (e *env) setColumn(tbl *table.Table, col string) *table.Table {
	e.T.Helper()
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{ExpirationColumnProperty: col}); err != nil {
		e.T.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	return tbl
}

// expire runs record expiration with 30 days at expiryNow.
func (e *env) expire(job *Job, dryRun bool) (jobs.Outcome, *ExpirationFigures) {
	e.T.Helper()
	e.Defaults.Configs[maintenance.RecordExpiration] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ExpirationSettings{Days: maintenance.Int(30)}}
	out, err := e.Runner(job.Definition()).Run(e.Ctx, e.Target(), maintenance.RecordExpiration, "test", jobs.Options{Now: expiryNow, DryRun: dryRun})
	if err != nil {
		e.T.Fatal(err)
	}
	fig, _ := out.Figures.(*ExpirationFigures)
	return out, fig
}

// unexpired fingerprints the visible rows of tbl whose col is at or after
// the cutoff or null, computed here from the values, independently of the
// job's filters.
func (e *env) unexpired(tbl *table.Table, col string) tablecheck.Fingerprint {
	e.T.Helper()
	cutMicros := expiryNow.Add(-30 * 24 * time.Hour).UnixMicro()
	_, it, err := tbl.Scan().ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	var fp tablecheck.Fingerprint
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
		}
		idx := rec.Schema().FieldIndices(col)
		if len(idx) != 1 {
			e.T.Fatalf("no column %s in %s", col, rec.Schema())
		}
		c := rec.Column(idx[0])
		fp.AddRows(rec, func(r int) bool {
			if c.IsNull(r) {
				return true
			}
			switch a := c.(type) {
			case *array.Timestamp:
				return int64(a.Value(r)) >= cutMicros
			case *array.Date32:
				// A day expires once all of it is before the cutoff.
				return (int64(a.Value(r))+1)*86_400_000_000 > cutMicros
			}
			e.T.Fatalf("column %s is %s", col, c.DataType())
			return false
		})
		rec.Release()
	}
	return fp
}

// checkExpiry runs record expiration and asserts the differential
// invariants: the visible rows are exactly the unexpired ones, the job's
// counts match, time travel to before still returns every row, and every
// reachable file exists.
func (e *env) checkExpiry(job *Job, col string) *ExpirationFigures {
	e.T.Helper()
	before := e.Load()
	all, want := e.Rows(before, 0), e.unexpired(before, col)
	local := strings.HasPrefix(before.Location(), "file://")
	files := 0
	if local {
		files = tableenv.CountData(e.T.(*testing.T), before.Location())
	}
	if want.Rows == all.Rows || want.Rows == 0 {
		e.T.Fatalf("setup: %d of %d rows stay; want some to expire and some to stay", want.Rows, all.Rows)
	}
	out, fig := e.expire(job, false)
	if out.Status != state.Successful {
		e.T.Fatalf("record expiration: %s: %s", out.Status, out.FailureMessage)
	}
	after := e.Load()
	if got := e.Rows(after, 0); !got.Equal(want) {
		e.T.Fatalf("visible rows: %v, want the %v unexpired of %v", got, want, all)
	}
	if fig.DeletedRecords != all.Rows-want.Rows {
		e.T.Errorf("deletedRecords = %d, want %d", fig.DeletedRecords, all.Rows-want.Rows)
	}
	if fig.DeletedDataFiles != int64(fig.FilesDropped+fig.FilesRewritten) || fig.DeletedDataFiles == 0 || fig.RemovedFilesSize <= 0 {
		e.T.Errorf("figures %+v", fig)
	}
	snap := before.CurrentSnapshot().SnapshotID
	if got := e.Rows(after, snap); !got.Equal(all) {
		e.T.Fatalf("time travel to %d: %v, want %v", snap, got, all)
	}
	for s := after.CurrentSnapshot(); s != nil && s.SnapshotID != snap; s = after.SnapshotByID(*s.ParentSnapshotID) {
		if op := s.Summary.Operation; op != table.OpDelete && op != table.OpOverwrite {
			e.T.Errorf("snapshot %d is %s, want delete or overwrite", s.SnapshotID, op)
		}
		// A commit that claims its rows is borne out by storage: what it
		// read is what it wrote and what it says it removed.
		if _, ok := s.Summary.Properties[rebase.RowsRemovedProperty]; ok {
			c, err := rebase.Recompute(e.Ctx, after, s.SnapshotID)
			if err != nil || !c.Kept() {
				e.T.Fatalf("snapshot %d: %v\n%s", s.SnapshotID, err, c.Report())
			}
		}
	}
	missing, err := tablecheck.MissingFiles(e.Ctx, after)
	if err != nil || len(missing) > 0 {
		e.T.Fatalf("missing reachable files %v: %v", missing, err)
	}
	if local {
		if n := tableenv.CountData(e.T.(*testing.T), after.Location()); n != files+fig.FilesWritten {
			e.T.Errorf("%d files, want the %d before and the %d written: outputs left behind", n, files, fig.FilesWritten)
		}
	}
	return fig
}

func TestRecordExpiration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format string
		spec   iceberg.PartitionSpec
		// dropped: the spec's day partitions let whole files go
		dropped bool
	}{
		{"unpartitioned", "2", *iceberg.UnpartitionedSpec, false},
		{"identity+day", "2", iceberg.NewPartitionSpec(tableenv.PF(2, 1000, "cat", iceberg.IdentityTransform{}), tableenv.PF(3, 1001, "ts_day", iceberg.DayTransform{})), true},
		{"v3 deletion vectors, by day", "3", iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, tbl := newEnv(t, tableenv.BaseSchema, tc.spec, tc.format)
			tbl = e.Fill(e.setColumn(tbl, "ts"), 6, 200)
			var lineage map[int64]int64
			if tc.format == "3" {
				lineage = e.rowIDs(tbl)
			}
			fig := e.checkExpiry(&Job{}, "ts")
			if tc.format == "3" {
				// The rows that stay keep their row IDs.
				if len(lineage) == 0 {
					t.Fatal("setup: the v3 table's rows have no row IDs")
				}
				for id, rowID := range e.rowIDs(e.Load()) {
					if lineage[id] != rowID {
						t.Fatalf("row %d: _row_id %d after, %d before", id, rowID, lineage[id])
					}
				}
			}
			if fig.FilesRewritten == 0 || tc.dropped != (fig.FilesDropped > 0) {
				t.Errorf("%d files dropped, %d rewritten", fig.FilesDropped, fig.FilesRewritten)
			}
			if !tc.dropped {
				// Every group rewritten: the commit claims its rows.
				removed, err := rowdigest.Parse(e.Load().CurrentSnapshot().Summary.Properties[rebase.RowsRemovedProperty])
				if err != nil || removed.Count != fig.DeletedRecords {
					t.Fatalf("the commit claims to have removed %v (%v); %d records were", removed, err, fig.DeletedRecords)
				}
			}
			// A second run finds nothing more to expire.
			if _, again := e.expire(&Job{}, false); again.DeletedRecords != 0 || again.Commits != 0 {
				t.Errorf("second run removed %d records in %d commits", again.DeletedRecords, again.Commits)
			}
		})
	}
}

// The same on the REST catalog with SigV4 and S3.
func TestRecordExpirationREST(t *testing.T) {
	e, tbl := newRESTEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), "2")
	e.Fill(e.setColumn(tbl, "ts"), 4, 150)
	if fig := e.checkExpiry(&Job{}, "ts"); fig.FilesDropped == 0 || fig.FilesRewritten == 0 {
		t.Errorf("%d files dropped, %d rewritten", fig.FilesDropped, fig.FilesRewritten)
	}
}

// Rows with a null age stay, among them those of a file written before the
// column existed (it has no bounds for it, so it is read); a date column
// expires by whole days.
func TestRecordExpirationNullsDatesAndSchemaChange(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	e, tbl := newEnv(t, sc, *iceberg.UnpartitionedSpec, "2")
	tbl = e.Append(tbl, 300)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"d"}, iceberg.PrimitiveTypes.Date, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl = e.setColumn(tbl, "d")
	for i := 0; i < 4; i++ {
		tbl = e.Append(tbl, 200)
	}
	tbl = e.PosDelete(tbl, 2, 350, 700)
	e.EqDelete(tbl, 3, 400, 900)
	e.checkExpiry(&Job{}, "d")
}

// A dry run counts what would go and changes nothing.
func TestRecordExpirationDryRun(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), "2")
	tbl = e.Fill(e.setColumn(tbl, "ts"), 4, 150)
	all, want := e.Rows(tbl, 0), e.unexpired(tbl, "ts")
	files := tableenv.CountData(t, tbl.Location())
	out, fig := e.expire(&Job{}, true)
	if out.Status != state.Successful || fig.DeletedRecords != all.Rows-want.Rows || fig.DeletedDataFiles == 0 {
		t.Fatalf("dry run: %s %s, %+v; want %d records", out.Status, out.FailureMessage, fig, all.Rows-want.Rows)
	}
	if after := e.Load(); after.CurrentSnapshot().SnapshotID != tbl.CurrentSnapshot().SnapshotID {
		t.Fatal("a dry run committed")
	}
	if n := tableenv.CountData(t, tbl.Location()); n != files {
		t.Errorf("a dry run left %d files where there were %d", n, files)
	}
	// It tells the files that would be rewritten from those that would
	// be dropped whole, as the real run then does.
	text := fig.Text()
	if !strings.Contains(text, fmt.Sprintf("%d would be dropped whole, %d rewritten without their expired rows", fig.FilesDropped, fig.FilesRewritten)) {
		t.Errorf("dry run text:\n%s", text)
	}
	_, real := e.expire(&Job{}, false)
	if fig.FilesDropped != real.FilesDropped || fig.FilesRewritten != real.FilesRewritten || fig.DeletedDataFiles != real.DeletedDataFiles ||
		fig.DeletedRecords != real.DeletedRecords || fig.RemovedFilesSize != real.RemovedFilesSize || real.FilesRewritten == 0 || real.FilesDropped == 0 {
		t.Errorf("dry run: %d dropped, %d rewritten, %d records; real run: %d dropped, %d rewritten, %d records",
			fig.FilesDropped, fig.FilesRewritten, fig.DeletedRecords, real.FilesDropped, real.FilesRewritten, real.DeletedRecords)
	}
}

// A file whose bounds hold unexpired rows, all of which a position delete
// removed, is dropped whole by the real run (nothing is left to write);
// its dry run says so rather than "rewritten".
func TestRecordExpirationDryRunAllExpired(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tbl = e.Append(e.setColumn(tbl, "ts"), 300)
	cut := expiryNow.Add(-30 * 24 * time.Hour).UnixMicro()
	_, it, err := tbl.Scan(table.WithSelectedFields("id", "ts")).ToArrowRecords(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var staying []int64
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		ids, ts := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Timestamp)
		for i := 0; i < int(rec.NumRows()); i++ {
			if int64(ts.Value(i)) >= cut {
				staying = append(staying, ids.Value(i))
			}
		}
		rec.Release()
	}
	if len(staying) == 0 || len(staying) == 300 {
		t.Fatalf("setup: %d of 300 rows stay", len(staying))
	}
	e.PosDelete(tbl, staying...)
	_, dry := e.expire(&Job{}, true)
	_, real := e.expire(&Job{}, false)
	if real.FilesDropped != 1 || real.FilesRewritten != 0 || dry.FilesDropped != real.FilesDropped || dry.FilesRewritten != real.FilesRewritten || dry.DeletedRecords != real.DeletedRecords {
		t.Errorf("dry run: %d dropped, %d rewritten, %d records; real run: %d dropped, %d rewritten, %d records",
			dry.FilesDropped, dry.FilesRewritten, dry.DeletedRecords, real.FilesDropped, real.FilesRewritten, real.DeletedRecords)
	}
}

// A writer commits while the run commits: its rows stay, expired or not,
// since they came after the plan; a position delete on a file the run
// rewrites makes it leave that file's group for the next run. The next
// run finishes the work, and rows are exact.
func TestRecordExpirationBesideWriters(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, iceberg.NewPartitionSpec(tableenv.PF(3, 1000, "ts_day", iceberg.DayTransform{})), "2")
	tbl = e.Fill(e.setColumn(tbl, "ts"), 6, 200)
	split := e.splitDayRow(tbl)
	var during *table.Table
	job := &Job{beforeCommit: func(attempt int) {
		if attempt == 1 {
			during = e.PosDelete(e.Append(e.Load(), 100), split)
		}
	}}
	out, fig := e.expire(job, false)
	if out.Status != state.Successful || fig.Conflicts == 0 || len(fig.Dropped) != 1 || fig.FilesDropped == 0 {
		t.Fatalf("%s %s, %+v; want the split day's group dropped, the expired days' files gone", out.Status, out.FailureMessage, fig)
	}
	got := e.IDs(e.Load())
	for id := range e.IDs(during) {
		if id > e.Next-101 && got[id] != 1 {
			t.Fatalf("row %d the writer added is gone", id)
		}
	}
	if got[split] != 0 {
		t.Fatalf("row %d deleted meanwhile is back", split)
	}
	want := e.unexpired(during, "ts")
	if _, fig := e.expire(&Job{}, false); fig.FilesRewritten == 0 {
		t.Errorf("the next run rewrote nothing: %+v", fig)
	}
	if got := e.Rows(e.Load(), 0); !got.Equal(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// splitDayRow returns the id of a row of the day the cutoff splits that
// stays.
func (e *env) splitDayRow(tbl *table.Table) int64 {
	e.T.Helper()
	cut := iceberg.Timestamp(expiryNow.Add(-30 * 24 * time.Hour).UnixMicro())
	ref := iceberg.Reference("ts")
	f := iceberg.NewAnd(iceberg.GreaterThanEqual(ref, cut), iceberg.LessThan(ref, iceberg.Timestamp(20003*86_400_000_000)))
	_, it, err := tbl.Scan(table.WithRowFilter(f), table.WithSelectedFields("id")).ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
		}
		if rec.NumRows() > 0 {
			return rec.Column(0).(*array.Int64).Value(0)
		}
	}
	e.T.Fatal("setup: no row on the split day after the cutoff")
	return 0
}

// Refusals name the problem and change nothing.
func TestRecordExpirationRefusals(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tbl = e.Append(tbl, 100)
	for _, tc := range []struct{ column, want string }{
		{"", "set the table property icekeeper.record-expiration.column to the column whose value is a row's age (its timestamp and date columns: ts)"},
		{"created_at", `the table has no column "created_at"`},
		{"name", `column "name" is string; record expiration needs a date, timestamp`},
	} {
		if tc.column != "" {
			tbl = e.setColumn(tbl, tc.column)
		}
		snap := e.Load().CurrentSnapshot().SnapshotID
		out, _ := e.expire(&Job{}, false)
		if out.Status != state.Failed || !strings.Contains(out.FailureMessage, tc.want) {
			t.Errorf("column %q: %s %q, want Failed with %q", tc.column, out.Status, out.FailureMessage, tc.want)
		}
		if e.Load().CurrentSnapshot().SnapshotID != snap {
			t.Errorf("column %q: the refused run committed", tc.column)
		}
		err := e.Runner((&Job{}).Definition()).CheckTableConfig(e.Ctx, e.Target(), maintenance.RecordExpiration, enabledExpiry(30))
		if !strings.Contains(errString(err), tc.want) {
			t.Errorf("column %q: CheckTableConfig = %v", tc.column, err)
		}
	}
	_, err := settingsOf(maintenance.Settings{Configs: map[maintenance.JobType]maintenance.Config{maintenance.RecordExpiration: enabledExpiry(0)}})
	if !strings.Contains(errString(err), "without settings.days") {
		t.Errorf("no days: %v", err)
	}
}

func enabledExpiry(days int) maintenance.Config {
	c := maintenance.Config{Status: maintenance.Enabled, Settings: &maintenance.ExpirationSettings{}}
	if days > 0 {
		c.RecordExpiration().Days = maintenance.Int(days)
	}
	return c
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// rowIDs maps each visible row's id to its _row_id (v3 row lineage); rows
// without one are left out.
func (e *env) rowIDs(tbl *table.Table) map[int64]int64 {
	e.T.Helper()
	_, it, err := tbl.Scan(table.WithRowLineage()).ToArrowRecords(e.Ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[int64]int64{}
	for rec, err := range it {
		if err != nil {
			e.T.Fatal(err)
		}
		id := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		rowID := rec.Column(rec.Schema().FieldIndices(iceberg.RowIDColumnName)[0]).(*array.Int64)
		for i := 0; i < id.Len(); i++ {
			if rowID.IsValid(i) {
				out[id.Value(i)] = rowID.Value(i)
			}
		}
		rec.Release()
	}
	return out
}

// A timestamp inside a struct is refused: the column must be top-level.
func TestRecordExpirationNestedColumn(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "meta", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
		}}},
	)
	e, tbl := newEnv(t, sc, *iceberg.UnpartitionedSpec, "2")
	e.setColumn(e.Append(tbl, 50), "meta.at")
	out, _ := e.expire(&Job{}, false)
	if want := `column "meta.at" is nested in a struct`; out.Status != state.Failed || !strings.Contains(out.FailureMessage, want) {
		t.Fatalf("%s %q, want Failed with %q", out.Status, out.FailureMessage, want)
	}
}

// Files without column metrics (write.metadata.metrics.default=none) are
// all read. The first run removes the expired rows; the second reads the
// files again, finds nothing expired, commits nothing and leaves no
// output behind.
func TestRecordExpirationWithoutMetrics(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"write.metadata.metrics.default": "none"}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl = e.Fill(e.setColumn(tbl, "ts"), 4, 200)
	tasks, err := tbl.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.File.UpperBoundValues()[3] != nil {
			t.Fatalf("setup: %s has bounds for ts", task.File.FilePath())
		}
	}
	if fig := e.checkExpiry(&Job{}, "ts"); fig.FilesKept != 0 || fig.FilesDropped != 0 {
		t.Errorf("files decided by bounds they do not have: %+v", fig)
	}
	snap, files := e.Load().CurrentSnapshot().SnapshotID, tableenv.CountData(t, tbl.Location())
	out, fig := e.expire(&Job{}, false)
	if out.Status != state.Successful || fig.DeletedRecords != 0 || fig.Commits != 0 || fig.FilesUnchanged == 0 {
		t.Fatalf("second run: %s %s %+v", out.Status, out.FailureMessage, fig)
	}
	if e.Load().CurrentSnapshot().SnapshotID != snap {
		t.Error("the second run committed")
	}
	if n := tableenv.CountData(t, tbl.Location()); n != files {
		t.Errorf("%d files after the second run, %d before: its outputs were left", n, files)
	}
}

// The unchanged rule: a run that found nothing expired records until when
// the clock leaves that so (the earliest row's age reaching the days); a
// later run on the same metadata before then skips, reading nothing
// beyond it, and the first run after it evaluates in full and expires
// that row.
func TestExpiryUnchangedRule(t *testing.T) {
	e, tbl := newEnv(t, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	e.Fill(e.setColumn(tbl, "ts"), 4, 100)
	e.Defaults.Configs[maintenance.RecordExpiration] = maintenance.Config{Status: maintenance.Enabled,
		Settings: &maintenance.ExpirationSettings{Days: maintenance.Int(30)}}
	run := func(now time.Time) *ExpirationFigures {
		t.Helper()
		r := e.Runner((&Job{}).Definition())
		r.FullEvery = 1000 * time.Hour
		out, err := r.Run(e.Ctx, e.Target(), maintenance.RecordExpiration, "test", jobs.Options{Now: now})
		if err != nil || out.Status != state.Successful {
			t.Fatalf("run at %v: %v %s %s", now, err, out.Status, out.FailureMessage)
		}
		return out.Figures.(*ExpirationFigures)
	}
	// The rows' ts lie in days 20000–20004: 30 days after day 20000
	// began, none has expired yet.
	first := time.UnixMicro(20000 * 86_400_000_000).Add(30 * 24 * time.Hour)
	if fig := run(first); fig.FilesKept != fig.FilesScanned || fig.FilesScanned == 0 || fig.DeletedRecords != 0 {
		t.Fatalf("setup: the first run found expired rows:\n%s", fig.Text())
	}
	ev, ok, err := e.Store.LastEvaluation(e.Ctx, e.Target().Key(), maintenance.RecordExpiration)
	if err != nil || !ok {
		t.Fatalf("no evaluation recorded: %v", err)
	}
	if !ev.ValidUntil.After(first) || ev.ValidUntil.After(first.Add(25*time.Hour)) {
		t.Fatalf("valid until %v, want within a day of %v", ev.ValidUntil, first)
	}
	if fig := run(ev.ValidUntil.Add(-time.Second)); fig.Unchanged == nil || !fig.Unchanged.Skip || !strings.Contains(fig.Text(), "skipped") {
		t.Fatalf("a second before the first row expires, the run did not skip:\n%s", fig.Text())
	}
	fig := run(ev.ValidUntil.Add(time.Second))
	if fig.Unchanged == nil || fig.Unchanged.Skip || fig.DeletedRecords == 0 {
		t.Fatalf("a second after the first row expired, the run did not expire it:\n%s", fig.Text())
	}
}
