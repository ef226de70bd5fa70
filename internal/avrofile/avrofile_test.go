package avrofile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// ocfOf builds an object container file of longs by hand: the metadata
// map in one block, then a block per element of blocks.
func ocfOf(sync []byte, blocks ...[]int64) []byte {
	b := []byte("Obj\x01")
	b = binary.AppendVarint(b, 2)
	for _, kv := range [][2]string{{"avro.schema", `"long"`}, {"avro.codec", "null"}} {
		for _, s := range kv {
			b = binary.AppendVarint(b, int64(len(s)))
			b = append(b, s...)
		}
	}
	b = binary.AppendVarint(b, 0)
	b = append(b, sync...)
	for _, blk := range blocks {
		var data []byte
		for _, v := range blk {
			data = binary.AppendVarint(data, v)
		}
		b = binary.AppendVarint(b, int64(len(blk)))
		b = binary.AppendVarint(b, int64(len(data)))
		b = append(append(b, data...), sync...)
	}
	return b
}

func TestSplit(t *testing.T) {
	sync := bytes.Repeat([]byte{0xA5}, SyncSize)
	good := ocfOf(sync, []int64{1, 2, 3}, []int64{4}, nil)
	f, err := Split(good)
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Metadata["avro.schema"]) != `"long"` || string(f.Metadata["avro.codec"]) != "null" || len(f.Metadata) != 2 {
		t.Fatalf("metadata %q", f.Metadata)
	}
	if !bytes.Equal(f.Sync, sync) || len(f.Blocks) != 3 || f.Records() != 4 || f.Blocks[2].End != len(good) {
		t.Fatalf("framing %+v", f)
	}
	if !bytes.Equal(good[f.Blocks[0].End-SyncSize:f.Blocks[0].End], sync) || f.Blocks[1].Start != f.Blocks[0].End {
		t.Fatalf("blocks do not tile the file: %+v", f.Blocks)
	}
	if f, err := Split(good[:f.Blocks[0].Start]); err != nil || len(f.Blocks) != 0 {
		t.Fatalf("a file of no blocks: %+v, %v", f, err)
	}

	other := bytes.Repeat([]byte{0x5A}, SyncSize)
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"no magic", good[1:]},
		{"cut in the header", good[:10]},
		{"cut in the sync marker", good[:f.Blocks[0].Start-3]},
		{"cut mid-block", good[:f.Blocks[0].End-SyncSize-1]},
		{"cut in a block's sync marker", good[:f.Blocks[0].End-1]},
		{"a block ending in another sync marker", append(bytes.Clone(good[:f.Blocks[1].End-SyncSize]), other...)},
		{"a block's size past the end", append(bytes.Clone(good[:f.Blocks[2].End]), 0x02, 0x7e)},
		{"a negative record count", append(bytes.Clone(good[:f.Blocks[2].End]), append([]byte{0x01, 0x00}, sync...)...)},
		{"a negative byte size", append(bytes.Clone(good[:f.Blocks[2].End]), append([]byte{0x00, 0x01}, sync...)...)},
		{"a metadata length past the end", append([]byte("Obj\x01\x02\xfe\xff\x03"), good[4:]...)},
	} {
		if _, err := Split(c.b); !errors.Is(err, ErrFraming) {
			t.Errorf("%s: %v, want ErrFraming", c.name, err)
		}
	}
}
