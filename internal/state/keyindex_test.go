package state

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
)

// testKeyIndex: files are added incomplete and completed; lookups return
// the entries of the hashes asked for, in every segment, of this table's
// index of this UUID and field set only, across more hashes than one
// query takes; merging segments keeps every entry of a live file;
// forgetting a file keeps its entries until they outnumber the live ones,
// then sweeps them; dropping keeps only the given UUID's indexes.
func testKeyIndex(t *testing.T, s Store) {
	ctx := context.Background()
	other := TableKey{tbl.Bucket, tbl.Namespace, "other"}
	ix := KeyIndexName{TableUUID: "u1", Fields: "1"}
	if files, err := s.KeyFiles(ctx, tbl, ix); err != nil || len(files) != 0 {
		t.Fatalf("an index never written: %v %v", files, err)
	}
	if err := s.LookupKeys(ctx, tbl, ix, []int64{1}, func(KeyEntry) error { return errors.New("an entry") }); err != nil {
		t.Fatalf("lookup in an index never written: %v", err)
	}
	add := func(k TableKey, ix KeyIndexName, path string, records int64) KeyFile {
		t.Helper()
		f, err := s.AddKeyFile(ctx, k, ix, KeyFile{Path: path, Size: 100 * records, Records: records, Complete: true})
		if err != nil {
			t.Fatal(err)
		}
		if f.ID == 0 || f.Complete {
			t.Fatalf("added %+v: want an ID, not complete", f)
		}
		return f
	}
	a := add(tbl, ix, "s3://b/t/data/a.parquet", 3)
	b := add(tbl, ix, "s3://b/t/data/b.parquet", 1)
	// The same path in another table, another UUID and another field set.
	oa := add(other, ix, a.Path, 3)
	ua := add(tbl, KeyIndexName{TableUUID: "u0", Fields: "1"}, a.Path, 3)
	fa := add(tbl, KeyIndexName{TableUUID: "u1", Fields: "1,6"}, a.Path, 3)
	raw := []byte{0, 1, 0xff, '\n', 0xc3}
	entries := []KeyEntry{
		{Hash: -5, File: a.ID, Pos: 0, Entry: raw},
		{Hash: 7, File: a.ID, Pos: 1, Entry: []byte("a1")},
		{Hash: -5, File: a.ID, Pos: 2, Entry: []byte("a2")}, // a key twice in one file
		{Hash: 7, File: b.ID, Pos: 0, Entry: []byte("b0")},  // and in another file
	}
	// More entries than one statement takes.
	for i := range int64(2*keyBatch + 3) {
		entries = append(entries, KeyEntry{Hash: 1000 + i, File: b.ID, Pos: 1 + i, Entry: []byte("x")})
	}
	// Two segments: a's entries, then b's.
	segA, err := s.PutKeys(ctx, tbl, ix, entries[:3])
	if err != nil {
		t.Fatal(err)
	}
	entries[3].Entry = []byte("b0'")
	segB, err := s.PutKeys(ctx, tbl, ix, entries[3:])
	if err != nil || segB <= segA {
		t.Fatalf("segment %d, %v after %d", segB, err, segA)
	}
	for _, w := range []struct {
		k  TableKey
		ix KeyIndexName
		f  int64
	}{{other, ix, oa.ID}, {tbl, KeyIndexName{TableUUID: "u0", Fields: "1"}, ua.ID}, {tbl, KeyIndexName{TableUUID: "u1", Fields: "1,6"}, fa.ID}} {
		if _, err := s.PutKeys(ctx, w.k, w.ix, []KeyEntry{{Hash: 7, File: w.f, Pos: 9, Entry: []byte("elsewhere")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PutKeys(ctx, tbl, KeyIndexName{TableUUID: "nope", Fields: "1"}, entries[:1]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entries of an index never created: %v, want ErrNotFound", err)
	}
	if err := s.CompleteKeyFile(ctx, tbl, ix, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteKeyFile(ctx, tbl, ix, oa.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("completing another table's file: %v, want ErrNotFound", err)
	}
	files, err := s.KeyFiles(ctx, tbl, ix)
	if err != nil {
		t.Fatal(err)
	}
	if want := []KeyFile{{a.ID, a.Path, 300, 3, true}, {b.ID, b.Path, 100, 1, false}}; !slices.Equal(files, want) {
		t.Fatalf("files %+v, want %+v", files, want)
	}

	lookup := func(hashes ...int64) []KeyEntry {
		t.Helper()
		var out []KeyEntry
		if err := s.LookupKeys(ctx, tbl, ix, hashes, func(e KeyEntry) error {
			out = append(out, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(out, func(x, y KeyEntry) int {
			if x.File != y.File {
				return int(x.File - y.File)
			}
			return int(x.Pos - y.Pos)
		})
		return out
	}
	want := []KeyEntry{entries[0], entries[1], entries[2], {Hash: 7, File: b.ID, Pos: 0, Entry: []byte("b0'")}}
	same := func(x, y KeyEntry) bool {
		return x.Hash == y.Hash && x.File == y.File && x.Pos == y.Pos && bytes.Equal(x.Entry, y.Entry)
	}
	if got := lookup(7, -5, 42); !slices.EqualFunc(got, want, same) {
		t.Fatalf("lookup: %+v, want %+v", got, want)
	}
	var many []int64
	for i := range int64(2*keyBatch + 3) {
		many = append(many, 1000+i)
	}
	if n := len(lookup(many...)); n != 2*keyBatch+3 {
		t.Fatalf("lookup of %d hashes found %d entries", len(many), n)
	}
	// A third segment. Merging a's and c0's leaves two; past a bound of
	// one, two segments are left as they are (merging one into one helps
	// nothing); a fourth past a bound of two merges all but the biggest
	// (b's, of 1,004 entries).
	c0 := add(tbl, ix, "s3://b/t/data/c0.parquet", 1)
	segC, err := s.PutKeys(ctx, tbl, ix, []KeyEntry{{Hash: 7, File: c0.ID, Pos: 0, Entry: []byte("c0")}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.MergeKeySegments(ctx, tbl, ix, nil, 3); err != nil || n != 0 {
		t.Fatalf("merged %d, %v under the bound", n, err)
	}
	if n, err := s.MergeKeySegments(ctx, tbl, ix, []int64{segA, segC}, 3); err != nil || n != 2 {
		t.Fatalf("merged %d, %v; want a's and c0's segments", n, err)
	}
	if n, err := s.MergeKeySegments(ctx, tbl, ix, nil, 1); err != nil || n != 0 {
		t.Fatalf("merged %d, %v; two segments left as they are", n, err)
	}
	if _, err := s.PutKeys(ctx, tbl, ix, []KeyEntry{{Hash: 99, File: c0.ID, Pos: 1, Entry: []byte("c1")}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.MergeKeySegments(ctx, tbl, ix, nil, 2); err != nil || n != 2 {
		t.Fatalf("merged %d, %v; want all but b's", n, err)
	}
	if got := lookup(7, -5, 42); !slices.EqualFunc(got, append(want, KeyEntry{Hash: 7, File: c0.ID, Pos: 0, Entry: []byte("c0")}), same) {
		t.Fatalf("lookup after the merge: %+v", got)
	}
	if n := len(lookup(many...)); n != 2*keyBatch+3 {
		t.Fatalf("lookup after the merge of %d hashes found %d entries", len(many), n)
	}
	if n, err := s.ForgetKeyFiles(ctx, tbl, ix, []int64{c0.ID}); err != nil || n != 1 {
		t.Fatalf("forgot %d, %v", n, err)
	}
	stop := errors.New("stop")
	if err := s.LookupKeys(ctx, tbl, ix, []int64{7}, func(KeyEntry) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("an error from fn: %v", err)
	}

	// Forgetting a (3 rows) leaves b (1 row): dead outnumber live, so the
	// index is swept of a's entries. Then forgetting nothing known is
	// nothing.
	if n, err := s.ForgetKeyFiles(ctx, tbl, ix, []int64{a.ID, oa.ID}); err != nil || n != 1 {
		t.Fatalf("forgot %d, %v; want 1 (another table's file is not this index's)", n, err)
	}
	if n := len(lookup(7, -5)); n != 1 {
		t.Fatalf("after the sweep %d entries of 7 and -5, want b's one", n)
	}
	if n, err := s.ForgetKeyFiles(ctx, tbl, ix, []int64{a.ID}); err != nil || n != 0 {
		t.Fatalf("forgot %d, %v; want 0", n, err)
	}
	// Forgetting one row of a big file leaves it unswept.
	c := add(tbl, ix, "s3://b/t/data/c.parquet", 1)
	if _, err := s.PutKeys(ctx, tbl, ix, []KeyEntry{{Hash: 8, File: c.ID, Pos: 0, Entry: []byte("c0")}}); err != nil {
		t.Fatal(err)
	}
	b2 := add(tbl, ix, "s3://b/t/data/b2.parquet", 10)
	if n, err := s.ForgetKeyFiles(ctx, tbl, ix, []int64{c.ID}); err != nil || n != 1 {
		t.Fatalf("forgot %d, %v", n, err)
	}
	if n := len(lookup(8)); n != 1 {
		t.Fatalf("%d entries of a forgotten file before the sweep, want 1 (swept later)", n)
	}
	if files, _ := s.KeyFiles(ctx, tbl, ix); len(files) != 2 || files[0].ID != b.ID || files[1].ID != b2.ID {
		t.Fatalf("files %+v, want b and b2", files)
	}

	// Dropping all but u1's indexes leaves u1's two and other's.
	if n, err := s.DropKeyIndexes(ctx, tbl, "u1"); err != nil || n != 1 {
		t.Fatalf("dropped %d, %v; want u0's one", n, err)
	}
	if files, err := s.KeyFiles(ctx, tbl, KeyIndexName{TableUUID: "u0", Fields: "1"}); err != nil || len(files) != 0 {
		t.Fatalf("u0's files after the drop: %v %v", files, err)
	}
	if files, err := s.KeyFiles(ctx, other, ix); err != nil || len(files) != 1 {
		t.Fatalf("another table's files: %v %v", files, err)
	}
	if n, err := s.DropKeyIndexes(ctx, tbl, ""); err != nil || n != 2 {
		t.Fatalf("dropped %d, %v; want 2", n, err)
	}
	if n := len(lookup(7, 8)); n != 0 {
		t.Fatalf("%d entries left after dropping every index", n)
	}
}
