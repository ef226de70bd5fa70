package rowdigest

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/cespare/xxhash/v2"
)

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
)

func record(t *testing.T, ids []int64, names []string, valid []bool) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(names, valid)
	return b.NewRecordBatch()
}

func digestOf(t *testing.T, recs ...arrow.RecordBatch) Digest {
	t.Helper()
	h := NewHasher(schema)
	for _, r := range recs {
		if err := h.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return h.Digest()
}

// The README's worked example, step by step with the hash itself: the row
// (id 1, name "a") of fields 1 (long) and 2 (string).
func TestWorkedExample(t *testing.T) {
	// XXH64's published vector: the empty input with seed 0.
	if got := xxhash.Sum64(nil); got != 0xef46db3751d8e999 {
		t.Fatalf("XXH64 of nothing = %016x", got)
	}
	x := xxhash.New()
	x.ResetWithSeed(1)
	x.Write([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	h1 := x.Sum64()
	x.ResetWithSeed(2)
	x.Write([]byte("a"))
	h2 := x.Sum64()
	row := Fmix64(h1 + h2)
	got := digestOf(t, record(t, []int64{1}, []string{"a"}, nil))
	if got != (Digest{Count: 1, Sum: row, Xor: row}) {
		t.Fatalf("digest %v, by hand 1:%016x:%016x", got, row, row)
	}
	t.Logf("h(1, 1) = %016x, h(2, \"a\") = %016x, row = %016x, digest %v", h1, h2, row, got)
	if got.String() != "1:21683ec836c85cf4:21683ec836c85cf4" {
		t.Fatalf("the README's worked example says 1:21683ec836c85cf4:21683ec836c85cf4, the code %v", got)
	}
	back, err := Parse(got.String())
	if err != nil || back != got {
		t.Fatalf("parse %v: %v, %v", got, back, err)
	}
}

// Rows in any order, in any batches, give one digest; a lost, added,
// duplicated or altered row, or two rows exchanging a value, another.
func TestMultiset(t *testing.T) {
	base := digestOf(t, record(t, []int64{1, 2, 3}, []string{"a", "b", ""}, []bool{true, true, false}))
	same := digestOf(t, record(t, []int64{3}, []string{""}, []bool{false}), record(t, []int64{2, 1}, []string{"b", "a"}, nil))
	if base != same {
		t.Fatalf("order or batching changed the digest: %v, %v", base, same)
	}
	for name, d := range map[string]Digest{
		"lost":          digestOf(t, record(t, []int64{1, 2}, []string{"a", "b"}, nil)),
		"duplicated":    digestOf(t, record(t, []int64{1, 2, 3, 3}, []string{"a", "b", "", ""}, []bool{true, true, false, false})),
		"altered":       digestOf(t, record(t, []int64{1, 2, 3}, []string{"a", "c", ""}, []bool{true, true, false})),
		"exchanged":     digestOf(t, record(t, []int64{1, 2, 3}, []string{"b", "a", ""}, []bool{true, true, false})),
		"null to empty": digestOf(t, record(t, []int64{1, 2, 3}, []string{"a", "b", ""}, nil)),
	} {
		if d == base {
			t.Errorf("%s: the digest did not change", name)
		}
	}
	// Two copies of a row cancel in the xor but not in the sum or count.
	two := digestOf(t, record(t, []int64{1, 1}, []string{"a", "a"}, nil))
	if two.Xor != 0 || two.Count != 2 || two.Sum == 0 {
		t.Fatalf("two equal rows: %v", two)
	}
	if _, err := Parse("1:00:00"); err == nil {
		t.Fatal("a short digest parsed")
	}
}

func TestDecimalBytes(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0}}, {1, []byte{1}}, {127, []byte{0x7f}}, {128, []byte{0, 0x80}}, {256, []byte{1, 0}},
		{-1, []byte{0xff}}, {-128, []byte{0x80}}, {-129, []byte{0xff, 0x7f}}, {-256, []byte{0xff, 0}},
	} {
		if got := decimalBytes(nil, big.NewInt(c.v)); !bytes.Equal(got, c.want) {
			t.Errorf("%d: %x, want %x", c.v, got, c.want)
		}
	}
}

// A nested column is not covered: records with one digest as without it,
// and Covered leaves it out.
func TestNestedNotCovered(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "tags", Type: &iceberg.ListType{ElementID: 4, Element: iceberg.PrimitiveTypes.String}},
	)
	if got := Covered(sc); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("covered %v", got)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	lb := b.Field(2).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).Append("x")
	lb.AppendNull()
	rec := b.NewRecordBatch()
	h := NewHasher(sc)
	if err := h.Add(rec); err != nil {
		t.Fatal(err)
	}
	if want := digestOf(t, record(t, []int64{1, 2}, []string{"a", "b"}, nil)); h.Digest() != want {
		t.Fatalf("with a list column %v, without %v", h.Digest(), want)
	}
}
