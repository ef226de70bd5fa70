// Package tablecheck computes order-independent fingerprints of a table's
// visible rows and the set of files its metadata references. Differential
// tests compare them before and after maintenance: the same multiset of
// rows, and no referenced file gone.
package tablecheck

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
)

// Fingerprint identifies a multiset of rows: its size and two independent
// sums of per-row hashes (a sum is order-independent and counts
// duplicates, unlike a xor).
type Fingerprint struct {
	Rows    int64
	Sum1    uint64
	Sum2    uint64
	Columns []string
}

func (f Fingerprint) String() string {
	return fmt.Sprintf("%d rows, %016x%016x", f.Rows, f.Sum1, f.Sum2)
}

// The seeds are random per process: compare fingerprints within one process.
var seed1, seed2 = maphash.MakeSeed(), maphash.MakeSeed()

// Rows fingerprints the visible rows of tbl at the given snapshot (the
// current one when snapshotID is 0), with deletes applied by iceberg-go's
// scanner. Columns are matched by name in sorted order, so the same rows
// written in a different column order fingerprint the same.
func Rows(ctx context.Context, tbl *table.Table, snapshotID int64) (Fingerprint, error) {
	var opts []table.ScanOption
	if snapshotID != 0 {
		opts = append(opts, table.WithSnapshotID(snapshotID))
	}
	_, it, err := tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return Fingerprint{}, fmt.Errorf("scan %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	var fp Fingerprint
	for rec, err := range it {
		if err != nil {
			return Fingerprint{}, fmt.Errorf("scan %s: %w", strings.Join(tbl.Identifier(), "."), err)
		}
		fp.AddRecord(rec)
		rec.Release()
	}
	return fp, nil
}

// AddRecord adds the rows of rec to f, as Rows would fingerprint them once
// written: a writer keeps the fingerprint of what it committed, and a test
// compares the table's with the sum.
func (f *Fingerprint) AddRecord(rec arrow.RecordBatch) { f.AddRows(rec, nil) }

// AddRows adds the rows of rec for which keep is true (all when keep is
// nil): the expected rows of a job that removes some.
func (f *Fingerprint) AddRows(rec arrow.RecordBatch, keep func(row int) bool) {
	var h1, h2 maphash.Hash
	h1.SetSeed(seed1)
	h2.SetSeed(seed2)
	cols := sortedColumns(rec.Schema())
	if f.Columns == nil {
		f.Columns = make([]string, len(cols))
		for i, c := range cols {
			f.Columns[i] = rec.Schema().Field(c).Name
		}
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		if keep != nil && !keep(r) {
			continue
		}
		h1.Reset()
		h2.Reset()
		for _, c := range cols {
			col := rec.Column(c)
			v := "\x00null"
			if col.IsValid(r) {
				v = col.ValueStr(r)
			}
			name := rec.Schema().Field(c).Name
			for _, h := range []*maphash.Hash{&h1, &h2} {
				h.WriteString(name)
				h.WriteByte(0)
				h.WriteString(v)
				h.WriteByte(1)
			}
		}
		f.Sum1 += h1.Sum64()
		f.Sum2 += h2.Sum64()
		f.Rows++
	}
}

// Add adds the multiset g to f.
func (f *Fingerprint) Add(g Fingerprint) {
	f.Rows += g.Rows
	f.Sum1 += g.Sum1
	f.Sum2 += g.Sum2
	if f.Columns == nil {
		f.Columns = g.Columns
	}
}

func sortedColumns(sc *arrow.Schema) []int {
	idx := make([]int, sc.NumFields())
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(sc.Field(a).Name, sc.Field(b).Name) })
	return idx
}

// Equal reports whether two fingerprints describe the same multiset.
func (f Fingerprint) Equal(g Fingerprint) bool {
	return f.Rows == g.Rows && f.Sum1 == g.Sum1 && f.Sum2 == g.Sum2
}
