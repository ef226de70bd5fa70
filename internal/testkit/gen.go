package testkit

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
)

// RandomRecord builds n rows for sc. The int64 column named "id" counts up
// from firstID, so every row of a generated table is unique and tests can
// reason about which rows were deleted; every other column is random, with
// about one null in eight where the field is nullable. A string column
// named "payload" holds 50–200 random characters.
func RandomRecord(sc *arrow.Schema, n int, firstID int64, rng *rand.Rand) arrow.RecordBatch {
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	for r := 0; r < n; r++ {
		for i, f := range sc.Fields() {
			if f.Name == "id" {
				bld.Field(i).(*array.Int64Builder).Append(firstID + int64(r))
				continue
			}
			appendRandom(bld.Field(i), f, rng)
		}
	}
	return bld.NewRecordBatch()
}

func appendRandom(b array.Builder, f arrow.Field, rng *rand.Rand) {
	if f.Nullable && rng.IntN(8) == 0 {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int32Builder:
		bb.Append(rng.Int32N(1000))
	case *array.Int64Builder:
		bb.Append(rng.Int64N(1_000_000))
	case *array.Float64Builder:
		bb.Append(float64(rng.IntN(1_000_000)) / 100)
	case *array.Float32Builder:
		// Negative values too: bounds must compare signed.
		bb.Append(float32(rng.IntN(2000)-1000) / 8)
	case *array.BinaryBuilder:
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		bb.Append(b)
	case *array.Time64Builder:
		bb.Append(arrow.Time64(rng.Int64N(86_400_000_000)))
	case *array.BooleanBuilder:
		bb.Append(rng.IntN(2) == 0)
	case *array.StringBuilder:
		if f.Name == "cat" {
			// A category: three values, for identity partitions.
			bb.Append(string(rune('a' + rng.IntN(3))))
			break
		}
		if f.Name == "payload" {
			// A row's body: 50–200 random printable characters, which
			// no codec shrinks much, so files reach a writer's sizes.
			b := make([]byte, 50+rng.IntN(151))
			for i := range b {
				b[i] = byte(' ' + rng.IntN(95))
			}
			bb.Append(string(b))
			break
		}
		// A low-cardinality prefix (for truncate partitions) and a
		// random tail.
		bb.Append(fmt.Sprintf("%c%c-%d", 'a'+rune(rng.IntN(3)), 'a'+rune(rng.IntN(3)), rng.IntN(100000)))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(20000 + rng.IntN(5)))
	case *array.TimestampBuilder:
		// Spread over five days so day partitions get several values.
		bb.Append(arrow.Timestamp(int64(20000+rng.IntN(5))*86_400_000_000 + rng.Int64N(86_400_000_000)))
	case *array.StructBuilder:
		bb.Append(true)
		st := f.Type.(*arrow.StructType)
		for i := 0; i < bb.NumField(); i++ {
			appendRandom(bb.FieldBuilder(i), st.Field(i), rng)
		}
	case *array.ListBuilder:
		bb.Append(true)
		lt := f.Type.(*arrow.ListType)
		for k := rng.IntN(3); k > 0; k-- {
			appendRandom(bb.ValueBuilder(), lt.ElemField(), rng)
		}
	default:
		panic(fmt.Sprintf("testkit: no generator for %s", f.Type))
	}
}

// AppendRandom appends n generated rows with ids from firstID to tbl.
func AppendRandom(ctx context.Context, tbl *table.Table, n int, firstID int64, rng *rand.Rand) (*table.Table, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, err
	}
	rec := RandomRecord(sc, n, firstID, rng)
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	return tbl.Append(ctx, rdr, nil)
}

// AppendCommits makes commits appends of n generated rows each, ids from
// firstID, in one catalog commit: every append is its own snapshot with its
// own data file and manifest, as a writer's commits are, without a catalog
// round trip and a metadata file per append.
func AppendCommits(ctx context.Context, tbl *table.Table, commits, n int, firstID int64, rng *rand.Rand) (*table.Table, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, err
	}
	tx := tbl.NewTransaction()
	for i := 0; i < commits; i++ {
		rec := RandomRecord(sc, n, firstID+int64(i*n), rng)
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			return nil, err
		}
		err = tx.Append(ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			return nil, fmt.Errorf("append %d of %d: %w", i+1, commits, err)
		}
	}
	return tx.Commit(ctx)
}
