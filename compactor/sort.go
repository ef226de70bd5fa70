package compactor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/planner"
)

// The sort, z-order and hilbert strategies read a whole group into memory (its
// decoded size is a few times its Parquet size, and a group is about one
// target file), order the rows, and write them with the group's target.
// Binpack streams instead; that is why it is the default without a sort
// order.

// sortKey is one sort-order column of a group: how to compare two rows.
type sortKey struct {
	name       string
	col        arrow.Array
	desc       bool
	nullsFirst bool
	compare    func(i, j int) int
	zbits      func(i int) uint64 // order-preserving 64-bit image, for z-order and hilbert
}

// sortKeys resolves the table's sort order against the group's columns.
func sortKeys(tbl *table.Table, sc *arrow.Schema, cols []arrow.Array) ([]sortKey, error) {
	order := tbl.SortOrder()
	var keys []sortKey
	for _, f := range order.Fields() {
		if _, ok := f.Transform.(iceberg.IdentityTransform); !ok {
			return nil, fmt.Errorf("%w: sort order field %v uses transform %s; only identity sort fields are supported", planner.ErrStrategy, f.SourceIDs, f.Transform)
		}
		name, ok := tbl.Schema().FindColumnName(f.SourceIDs[0])
		if !ok {
			return nil, fmt.Errorf("%w: sort order names column id %d, which the schema does not have", planner.ErrStrategy, f.SourceIDs[0])
		}
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("%w: sort column %s is nested; only top-level columns are supported", planner.ErrStrategy, name)
		}
		k := sortKey{name: name, col: cols[idx[0]], desc: f.Direction == table.SortDESC, nullsFirst: f.NullOrder == table.NullsFirst}
		var err error
		if k.compare, k.zbits, err = comparer(k.col); err != nil {
			return nil, fmt.Errorf("%w: sort column %s: %v", planner.ErrStrategy, name, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: the table's sort order has no fields", planner.ErrStrategy)
	}
	return keys, nil
}

func ordered[T cmp.Ordered](a interface{ Value(int) T }) func(i, j int) int {
	return func(i, j int) int { return cmp.Compare(a.Value(i), a.Value(j)) }
}

func signedBits(v int64) uint64 { return uint64(v) ^ (1 << 63) }

func floatBits(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func prefixBits(b []byte) uint64 {
	var buf [8]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])
}

// comparer returns a row comparison and an order-preserving 64-bit image
// of the column's values (strings by their first eight bytes).
func comparer(col arrow.Array) (func(i, j int) int, func(i int) uint64, error) {
	switch c := col.(type) {
	case *array.Int8:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.Int16:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.Int32:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.Int64:
		return ordered(c), func(i int) uint64 { return signedBits(c.Value(i)) }, nil
	case *array.Float32:
		return ordered(c), func(i int) uint64 { return floatBits(float64(c.Value(i))) }, nil
	case *array.Float64:
		return ordered(c), func(i int) uint64 { return floatBits(c.Value(i)) }, nil
	case *array.Date32:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.Date64:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.Timestamp:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.Time64:
		return ordered(c), func(i int) uint64 { return signedBits(int64(c.Value(i))) }, nil
	case *array.String:
		return ordered(c), func(i int) uint64 { return prefixBits([]byte(c.Value(i))) }, nil
	case *array.LargeString:
		return ordered(c), func(i int) uint64 { return prefixBits([]byte(c.Value(i))) }, nil
	case *array.Binary:
		return func(i, j int) int { return bytes.Compare(c.Value(i), c.Value(j)) }, func(i int) uint64 { return prefixBits(c.Value(i)) }, nil
	case *array.Boolean:
		b := func(i int) uint64 {
			if c.Value(i) {
				return 1
			}
			return 0
		}
		return func(i, j int) int { return cmp.Compare(b(i), b(j)) }, b, nil
	}
	return nil, nil, fmt.Errorf("type %s is not supported", col.DataType())
}

// sortPermutation orders rows by the keys, each with its direction and
// null order.
func sortPermutation(n int, keys []sortKey) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(i, j int) int {
		for _, k := range keys {
			ni, nj := k.col.IsNull(i), k.col.IsNull(j)
			switch {
			case ni && nj:
				continue
			case ni != nj:
				if ni == k.nullsFirst {
					return -1
				}
				return 1
			}
			c := k.compare(i, j)
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	return perm
}

// zorderPermutation orders rows along a Z-curve over the keys: the bits of
// the keys' order-preserving images are interleaved, most significant
// first, so rows close in every key end up close in the file. Nulls take
// the smallest image.
func zorderPermutation(n int, keys []sortKey) ([]int, curveCodes) {
	return curvePermutation(n, keys, func([]uint64) {})
}

// hilbertPermutation orders rows along a Hilbert curve over the keys'
// order-preserving images. Unlike the Z-curve, consecutive cells of a
// Hilbert curve are neighbours, so a run of rows (an output file) covers
// a compact box of the key space and its bounds overlap fewer files'.
// Nulls take the smallest image.
func hilbertPermutation(n int, keys []sortKey) ([]int, curveCodes) {
	return curvePermutation(n, keys, hilbertTranspose)
}

// curveCodes are rows' positions along a curve, width bytes each.
type curveCodes struct {
	codes []byte
	width int
}

// split is how many leading bits the codes of rows i and j share: the
// fewer, the larger the block of the curve a cut between them closes.
func (c curveCodes) split(i, j int) int {
	a, b := c.codes[i*c.width:(i+1)*c.width], c.codes[j*c.width:(j+1)*c.width]
	for k := range a {
		if x := a[k] ^ b[k]; x != 0 {
			return 8*k + bits.LeadingZeros8(x)
		}
	}
	return 8 * c.width
}

// curvePermutation orders rows by a space-filling curve: each row's key
// images, turned by transform, interleaved into one code.
func curvePermutation(n int, keys []sortKey, transform func([]uint64)) ([]int, curveCodes) {
	width := 8 * len(keys)
	codes := make([]byte, n*width)
	x := make([]uint64, len(keys))
	for r := 0; r < n; r++ {
		for k, key := range keys {
			x[k] = 0
			if !key.col.IsNull(r) {
				x[k] = key.zbits(r)
			}
		}
		transform(x)
		interleave(codes[r*width:(r+1)*width], x)
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	slices.SortStableFunc(perm, func(i, j int) int {
		return bytes.Compare(codes[i*width:(i+1)*width], codes[j*width:(j+1)*width])
	})
	return perm, curveCodes{codes: codes, width: width}
}

// interleave writes the bits of x into out, most significant first and
// x[0]'s bit before x[1]'s at each level: one big-endian number.
func interleave(out []byte, x []uint64) {
	clear(out)
	for bit := 0; bit < 64; bit++ {
		for k, v := range x {
			if v>>(63-bit)&1 == 1 {
				pos := bit*len(x) + k
				out[pos/8] |= 1 << (7 - pos%8)
			}
		}
	}
}

// hilbertTranspose turns the coordinates x, 64 bits each, into their
// Hilbert index in transposed form, in place: interleaved (interleave),
// the bits are the point's distance along the curve. It is John
// Skilling's method ("Programming the Hilbert curve", AIP Conference
// Proceedings 707, 2004): from the top bit down, each level's lower bits
// are reflected or exchanged so that the sub-cube is entered in the
// curve's orientation, and the result is Gray-decoded into a distance.
func hilbertTranspose(x []uint64) {
	const top = uint64(1) << 63
	n := len(x)
	for q := top; q > 1; q >>= 1 {
		p := q - 1
		for i := range n {
			if x[i]&q != 0 {
				x[0] ^= p // reflect
			} else {
				t := (x[0] ^ x[i]) & p // exchange the lower bits of x[0] and x[i]
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	for i := 1; i < n; i++ {
		x[i] ^= x[i-1]
	}
	var t uint64
	for q := top; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := range x {
		x[i] ^= t
	}
}

// sortedGroup rewrites one group with its rows in the table's sort order,
// or along a Z-curve or a Hilbert curve over the sort-order columns (path
// planner.PathSort, PathZOrder or PathHilbert).
func sortedGroup(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target int64, path string) (table.CompactionGroupResult, error) {
	var res table.CompactionGroupResult
	sc, it, err := tbl.Scan().ReadTasks(ctx, tasks)
	if err != nil {
		return res, fmt.Errorf("read group: %w", err)
	}
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for rec, err := range it {
		if err != nil {
			return res, fmt.Errorf("read group: %w", err)
		}
		batches = append(batches, rec)
	}
	for _, t := range tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	res.SafePosDeletes = table.CollectSafePositionDeletes(tasks)
	res.SafeDeletionVectors = table.CollectSafeDeletionVectors(tasks)
	if len(batches) == 0 {
		return res, nil // every row was deleted: the files go, nothing replaces them
	}
	cols := make([]arrow.Array, sc.NumFields())
	n := 0
	for c := range cols {
		parts := make([]arrow.Array, len(batches))
		for i, b := range batches {
			parts[i] = b.Column(c)
		}
		if cols[c], err = array.Concatenate(parts, memory.DefaultAllocator); err != nil {
			return res, err
		}
		defer cols[c].Release()
		n = cols[c].Len()
	}
	keys, err := sortKeys(tbl, sc, cols)
	if err != nil {
		return res, err
	}
	var perm []int
	var curve *curveCodes
	switch path {
	case planner.PathZOrder, planner.PathHilbert:
		var c curveCodes
		if path == planner.PathZOrder {
			perm, c = zorderPermutation(n, keys)
		} else {
			perm, c = hilbertPermutation(n, keys)
		}
		curve = &c
	default:
		perm = sortPermutation(n, keys)
	}
	idxB := array.NewInt64Builder(memory.DefaultAllocator)
	for _, p := range perm {
		idxB.Append(int64(p))
	}
	idx := idxB.NewArray()
	idxB.Release()
	defer idx.Release()
	sorted := make([]arrow.Array, len(cols))
	for c, col := range cols {
		if sorted[c], err = compute.TakeArray(ctx, col, idx); err != nil {
			return res, fmt.Errorf("reorder column %s: %w", sc.Field(c).Name, err)
		}
		defer sorted[c].Release()
	}
	rec := array.NewRecordBatch(sc, sorted, int64(n))
	defer rec.Release()
	// iceberg-go's writer rolls to a new file only once a file's flushed
	// row groups reach the target, so one batch is one file: write the
	// rows in runs of about a target each (by the inputs' Parquet bytes
	// per row), one file per run, so that a group of several targets, as
	// the clustering rule plans, is written as files of the target's size.
	var inBytes int64
	for _, t := range tasks {
		inBytes += t.File.FileSizeBytes()
	}
	run := n
	if inBytes > target {
		run = max(1, int(int64(n)*target/inBytes))
	}
	// A curve's cut moves by up to a quarter of a run, to where the curve
	// closes its largest block (curveCut).
	var cuts []int
	for at := run; at < n; at += run {
		if curve != nil {
			at = curveCut(*curve, perm, at, run/4, n)
		}
		cuts = append(cuts, at)
	}
	cuts = append(cuts, n)
	// iceberg-go's writer sorts each batch by the table's sort order
	// itself; write through a view of the table without one, so that the
	// order written is the order computed here (a Z-curve would otherwise
	// be sorted away).
	wtbl, err := unsortedView(tbl)
	if err != nil {
		return res, err
	}
	from := 0
	for _, to := range cuts {
		part := rec.NewSlice(int64(from), int64(to))
		from = to
		one := func(yield func(arrow.RecordBatch, error) bool) { yield(part, nil) }
		for df, err := range table.WriteRecords(ctx, wtbl, sc, one, table.WithClusteredWrite(), table.WithTargetFileSize(target)) {
			if err != nil {
				return res, fmt.Errorf("write sorted files: %w", err)
			}
			res.NewDataFiles = append(res.NewDataFiles, df)
		}
	}
	return res, nil
}

// curveCut moves a cut between output files from row at to the row
// within slack of it where the curve closes its largest block, so that a
// file holds whole blocks of the key space and its bounds' box overlaps
// fewer of its neighbours'.
func curveCut(c curveCodes, perm []int, at, slack, n int) int {
	best, bestSplit := at, c.split(perm[at-1], perm[at])
	for i := max(1, at-slack); i <= min(n-1, at+slack); i++ {
		if s := c.split(perm[i-1], perm[i]); s < bestSplit || s == bestSplit && abs(i-at) < abs(best-at) {
			best, bestSplit = i, s
		}
	}
	return best
}

func abs[T int | int64](v T) T {
	if v < 0 {
		return -v
	}
	return v
}

// unsortedView is tbl with no default sort order, for writing only.
func unsortedView(tbl *table.Table) (*table.Table, error) {
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetDefaultSortOrderID(table.UnsortedSortOrderID); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil), nil
}

// repartitionGroup rewrites files written under an older partition spec
// into the current one. Their rows are not clustered by the current
// partitions, so they go through iceberg-go's fan-out writer, which keeps
// a file open per partition, instead of the clustered writer binpack uses.
func repartitionGroup(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target int64) (table.CompactionGroupResult, error) {
	var res table.CompactionGroupResult
	sc, it, err := tbl.Scan().ReadTasks(ctx, tasks)
	if err != nil {
		return res, fmt.Errorf("read group: %w", err)
	}
	for df, err := range table.WriteRecords(ctx, tbl, sc, it, table.WithTargetFileSize(target)) {
		if err != nil {
			return res, fmt.Errorf("write re-partitioned files: %w", err)
		}
		res.NewDataFiles = append(res.NewDataFiles, df)
	}
	for _, t := range tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	res.SafePosDeletes = table.CollectSafePositionDeletes(tasks)
	res.SafeDeletionVectors = table.CollectSafeDeletionVectors(tasks)
	return res, nil
}
