package planner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// day is the length of a day in microseconds.
const day = 86_400_000_000

// expiryMeta is the metadata of a table with the given columns after an
// id, and props.
func expiryMeta(t *testing.T, props iceberg.Properties, fields ...iceberg.NestedField) table.Metadata {
	t.Helper()
	fs := append([]iceberg.NestedField{{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}}, fields...)
	meta, err := table.NewMetadata(iceberg.NewSchema(0, fs...), iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///t", props)
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

func TestExpiryColumnOf(t *testing.T) {
	// Noon of day 20002: a date column's cutoff is that day, which
	// expires only once all of it is older.
	cutoff := time.UnixMicro(20002*day + day/2).UTC()
	ts := iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz}
	for _, tc := range []struct {
		name    string
		column  string
		fields  []iceberg.NestedField
		cutoff  time.Time
		wantCut int64
		wantErr string
	}{
		{name: "no property, a timestamp column to suggest", fields: []iceberg.NestedField{ts},
			wantErr: "set the table property icekeeper.record-expiration.column to the column whose value is a row's age (its timestamp and date columns: ts)"},
		{name: "no property, no time column", wantErr: "(the table has no timestamp or date column)"},
		{name: "missing column", column: "created_at", fields: []iceberg.NestedField{ts}, wantErr: `the table has no column "created_at"`},
		{name: "not a time column", column: "name", fields: []iceberg.NestedField{{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String}},
			wantErr: `column "name" is string; record expiration needs a date, timestamp`},
		{name: "nested column", column: "meta.at", fields: []iceberg.NestedField{{ID: 2, Name: "meta", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz}}}}}, wantErr: `column "meta.at" is nested in a struct`},
		{name: "timestamptz in microseconds", column: "ts", fields: []iceberg.NestedField{ts}, cutoff: cutoff, wantCut: 20002*day + day/2},
		{name: "timestamp in microseconds", column: "ts", fields: []iceberg.NestedField{{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp}}, cutoff: cutoff, wantCut: 20002*day + day/2},
		{name: "timestamp_ns in nanoseconds", column: "ts", fields: []iceberg.NestedField{{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampNs}}, cutoff: cutoff, wantCut: (20002*day + day/2) * 1000},
		{name: "date: the day the cutoff falls in", column: "d", fields: []iceberg.NestedField{{ID: 2, Name: "d", Type: iceberg.PrimitiveTypes.Date}}, cutoff: cutoff, wantCut: 20002},
		{name: "date before the epoch rounds down", column: "d", fields: []iceberg.NestedField{{ID: 2, Name: "d", Type: iceberg.PrimitiveTypes.Date}}, cutoff: time.UnixMicro(-day / 2), wantCut: -1},
		{name: "spaces around the name", column: " ts ", fields: []iceberg.NestedField{ts}, cutoff: cutoff, wantCut: 20002*day + day/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// v3, for timestamp_ns.
			props := iceberg.Properties{"format-version": "3"}
			if tc.column != "" {
				props[ExpirationColumnProperty] = tc.column
			}
			c, err := ExpiryColumnOf(expiryMeta(t, props, tc.fields...), tc.cutoff)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNoExpirationColumn) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrNoExpirationColumn with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != strings.TrimSpace(tc.column) || c.ID != 2 || c.Cut != tc.wantCut {
				t.Fatalf("%+v, want column %q (2) cut at %d", c, tc.column, tc.wantCut)
			}
		})
	}
}

// le8 and le4 serialize a timestamp and a date bound.
func le8(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
func le4(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// bounds describes a data file's metrics of column 2; a nil bound or
// nulls < 0 is absent.
type bounds struct {
	lo, hi []byte
	nulls  int64
}

func boundedFile(t *testing.T, path string, size, rows int64, b bounds, part map[int]any) iceberg.DataFile {
	t.Helper()
	bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, part, nil, nil, rows, size)
	if err != nil {
		t.Fatal(err)
	}
	if b.lo != nil {
		bld.LowerBoundValues(map[int][]byte{2: b.lo})
	}
	if b.hi != nil {
		bld.UpperBoundValues(map[int][]byte{2: b.hi})
	}
	if b.nulls >= 0 {
		bld.NullValueCounts(map[int]int64{2: b.nulls})
	}
	return bld.Build()
}

func TestFateOf(t *testing.T) {
	const cut = 20002 * day
	ts := ExpiryColumn{Name: "ts", ID: 2, Type: iceberg.PrimitiveTypes.TimestampTz, Cut: cut}
	date := ExpiryColumn{Name: "d", ID: 2, Type: iceberg.PrimitiveTypes.Date, Cut: 20002}
	for _, tc := range []struct {
		name string
		col  ExpiryColumn
		b    bounds
		want Fate
	}{
		{"every row expired", ts, bounds{le8(cut - 2*day), le8(cut - 1), 0}, FateDrop},
		{"no row expired", ts, bounds{le8(cut), le8(cut + day), 0}, FateKeep},
		{"some rows expired", ts, bounds{le8(cut - day), le8(cut + day), 0}, FateFilter},
		{"expired bounds, but nulls stay", ts, bounds{le8(cut - 2*day), le8(cut - 1), 3}, FateFilter},
		{"expired bounds, null count unknown", ts, bounds{le8(cut - 2*day), le8(cut - 1), -1}, FateFilter},
		{"no bounds", ts, bounds{nil, nil, -1}, FateFilter},
		{"no bounds, no nulls", ts, bounds{nil, nil, 0}, FateFilter},
		{"only nulls", ts, bounds{nil, nil, 10}, FateKeep},
		{"a lower bound at the cutoff is enough to keep", ts, bounds{le8(cut), nil, -1}, FateKeep},
		{"a bound of the wrong width is unknown", ts, bounds{le4(1), le4(2), 0}, FateFilter},
		{"dates all before the cutoff's day", date, bounds{le4(19990), le4(20001), 0}, FateDrop},
		{"dates from the cutoff's day", date, bounds{le4(20002), le4(20005), 0}, FateKeep},
		{"dates across the cutoff's day", date, bounds{le4(20000), le4(20002), 0}, FateFilter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.col.FateOf(boundedFile(t, "f.parquet", 100, 10, tc.b, nil)); got != tc.want {
				t.Fatalf("fate %d, want %d", got, tc.want)
			}
		})
	}
}

// KeptUntil is the first instant at which FateOf stops keeping one of
// the files: a moment before it every file is kept, a microsecond after
// it (the columns' finest unit but nanoseconds) one is not.
func TestKeptUntil(t *testing.T) {
	const days = 30
	retention := days * 24 * time.Hour
	now := time.UnixMicro(20002 * day)
	for _, tc := range []struct {
		name  string
		typ   iceberg.Type
		files []bounds
	}{
		{"timestamps", iceberg.PrimitiveTypes.TimestampTz, []bounds{{le8(20010*day + 7), le8(20011 * day), 0}, {le8(20005*day + 3), le8(20030 * day), 2}}},
		{"nanosecond timestamps", iceberg.PrimitiveTypes.TimestampTzNs, []bounds{{le8(20010*day*1000 + 7), le8(20011 * day * 1000), 0}}},
		{"dates", iceberg.PrimitiveTypes.Date, []bounds{{le4(20040), le4(20050), 0}, {le4(20003), le4(20004), 0}}},
		{"only nulls besides", iceberg.PrimitiveTypes.Date, []bounds{{nil, nil, 10}, {le4(20003), le4(20004), 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			col := ExpiryColumn{Name: "c", ID: 2, Type: tc.typ}
			var files []ExpiryFile
			for i, b := range tc.files {
				files = append(files, ExpiryFile{Task: table.FileScanTask{File: boundedFile(t, fmt.Sprintf("f%d", i), 100, 10, b, nil)}})
			}
			kept := func(at time.Time) bool {
				c := col
				c.Cut = expiryCut(c.Type, at.Add(-retention))
				for _, f := range files {
					if c.FateOf(f.Task.File) != FateKeep {
						return false
					}
				}
				return true
			}
			until := col.KeptUntil(files, days, now)
			if !kept(now) || until.IsZero() {
				t.Fatalf("setup: not kept now, or kept forever (%v)", until)
			}
			if !kept(until.Add(-time.Nanosecond)) || kept(until.Add(time.Microsecond)) {
				t.Fatalf("KeptUntil %v: kept just before %v, just after %v", until, kept(until.Add(-time.Nanosecond)), kept(until.Add(time.Microsecond)))
			}
		})
	}
	nulls := []ExpiryFile{{Task: table.FileScanTask{File: boundedFile(t, "n", 100, 10, bounds{nil, nil, 10}, nil)}}}
	if got := (ExpiryColumn{ID: 2, Type: iceberg.PrimitiveTypes.Date}).KeptUntil(nulls, days, now); !got.IsZero() {
		t.Fatalf("a file of nulls is kept forever, got %v", got)
	}
	unbounded := []ExpiryFile{{Task: table.FileScanTask{File: boundedFile(t, "u", 100, 10, bounds{nil, nil, 0}, nil)}}}
	if got := (ExpiryColumn{ID: 2, Type: iceberg.PrimitiveTypes.Date}).KeptUntil(unbounded, days, now); !got.Equal(now) {
		t.Fatalf("a file without bounds gives now, got %v", got)
	}
}

func TestPlanExpiry(t *testing.T) {
	const cut = 20002 * day
	col := ExpiryColumn{Name: "ts", ID: 2, Type: iceberg.PrimitiveTypes.TimestampTz, Cut: cut}
	expired := bounds{le8(cut - 2*day), le8(cut - 1), 0}
	split := bounds{le8(cut - day), le8(cut + day), 0}
	fresh := bounds{le8(cut), le8(cut + day), 0}
	file := func(part, path string, size int64, b bounds) ExpiryFile {
		return ExpiryFile{Task: table.FileScanTask{File: boundedFile(t, path, size, 10, b, nil)}, Partition: part, Label: "label " + part}
	}
	type group struct {
		partition string
		files     []string
		drop      bool
		bytes     int64
	}
	for _, tc := range []struct {
		name   string
		files  []ExpiryFile
		target int64
		want   []group
		kept   int
	}{
		{name: "nothing", target: 100},
		{name: "nothing expired", files: []ExpiryFile{file("p", "a", 10, fresh), file("p", "b", 10, fresh)}, target: 100, kept: 2},
		{name: "dropped whole, in one group per partition", target: 10,
			files: []ExpiryFile{file("p", "a", 40, expired), file("p", "b", 40, expired), file("q", "c", 40, expired)},
			want:  []group{{"label p", []string{"a", "b"}, true, 80}, {"label q", []string{"c"}, true, 40}}},
		{name: "rewrites packed toward the target", target: 100,
			files: []ExpiryFile{file("p", "a", 60, split), file("p", "b", 40, split), file("p", "c", 30, split), file("p", "d", 10, fresh)},
			want:  []group{{"label p", []string{"a", "b"}, false, 100}, {"label p", []string{"c"}, false, 30}}, kept: 1},
		{name: "a file over the target goes alone", target: 50,
			files: []ExpiryFile{file("p", "a", 80, split), file("p", "b", 10, split)},
			want:  []group{{"label p", []string{"a"}, false, 80}, {"label p", []string{"b"}, false, 10}}},
		{name: "drops before rewrites, partitions in key order", target: 100,
			files: []ExpiryFile{file("q", "a", 10, split), file("p", "b", 10, split), file("q", "c", 10, expired), file("p", "d", 10, fresh)},
			want: []group{{"label p", []string{"b"}, false, 10}, {"label q", []string{"c"}, true, 10},
				{"label q", []string{"a"}, false, 10}}, kept: 1},
		{name: "files without bounds are read", target: 100,
			files: []ExpiryFile{file("p", "a", 10, bounds{nil, nil, -1}), file("p", "b", 10, bounds{nil, nil, 10})},
			want:  []group{{"label p", []string{"a"}, false, 10}}, kept: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			groups, kept := PlanExpiry(col, tc.files, tc.target)
			if kept != tc.kept {
				t.Errorf("kept %d, want %d", kept, tc.kept)
			}
			var got []group
			for _, g := range groups {
				gg := group{partition: g.Partition, drop: g.Drop, bytes: g.Bytes}
				for _, task := range g.Tasks {
					gg.files = append(gg.files, task.File.FilePath())
				}
				got = append(got, gg)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("groups %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].partition != tc.want[i].partition || got[i].drop != tc.want[i].drop || got[i].bytes != tc.want[i].bytes ||
					strings.Join(got[i].files, ",") != strings.Join(tc.want[i].files, ",") {
					t.Fatalf("group %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestExpiryTargetBytes(t *testing.T) {
	for _, tc := range []struct {
		props iceberg.Properties
		want  int64
	}{
		{nil, 512 << 20},
		{iceberg.Properties{"write.target-file-size-bytes": "134217728"}, 128 << 20},
		{iceberg.Properties{"write.target-file-size-bytes": "0"}, 512 << 20},
		{iceberg.Properties{"write.target-file-size-bytes": "lots"}, 512 << 20},
	} {
		if got := ExpiryTargetBytes(tc.props); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.props, got, tc.want)
		}
	}
}
