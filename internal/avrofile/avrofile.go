// Package avrofile reads the framing of an Avro object container file:
// its header, its sync marker and where each data block lies, without
// decoding a record, and appends the two encodings a header is written
// in. The manifest reader joins manifests of one header into one stream
// with it, and the tests damage manifests the way a partial copy or a
// crash does.
package avrofile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrFraming is wrapped by every error Split returns.
var ErrFraming = errors.New("not a whole Avro object container file")

// SyncSize is the length of the sync marker that ends the header and
// every block.
const SyncSize = 16

// Block is one data block: its record count, and where it lies in the
// file.
type Block struct {
	Records int64
	// Start is the offset of its record count, CountEnd just after it,
	// DataStart of its data (after its byte size), End just after its
	// sync marker.
	Start, CountEnd, DataStart, End int
}

// File is the framing of an Avro object container file.
type File struct {
	// Metadata is the header's metadata (avro.schema, avro.codec and the
	// writer's own keys), its values slices of the file's bytes.
	Metadata map[string][]byte
	// HeaderEnd is where the magic and the metadata map end; the file's
	// sync marker follows.
	HeaderEnd int
	Sync      []byte
	Blocks    []Block
}

// Records is the number of records the blocks count.
func (f File) Records() int64 {
	var n int64
	for _, b := range f.Blocks {
		n += b.Records
	}
	return n
}

// Split reads the framing of b: the header's metadata map, then blocks
// up to the end of b, each of a non-negative record count and byte size
// and ending in the header's sync marker.
func Split(b []byte) (File, error) {
	if !bytes.HasPrefix(b, []byte("Obj\x01")) {
		return File{}, fmt.Errorf("%w: no magic", ErrFraming)
	}
	pos := 4
	long := func() (int64, error) {
		v, n := binary.Varint(b[pos:])
		if n <= 0 {
			return 0, fmt.Errorf("%w: bad varint at byte %d", ErrFraming, pos)
		}
		pos += n
		return v, nil
	}
	value := func() ([]byte, error) { // a string or bytes value
		n, err := long()
		if err != nil {
			return nil, err
		}
		if n < 0 || n > int64(len(b)-pos) {
			return nil, fmt.Errorf("%w: bad length at byte %d", ErrFraming, pos)
		}
		pos += int(n)
		return b[pos-int(n) : pos], nil
	}
	meta := map[string][]byte{}
	for { // the metadata map, in blocks
		count, err := long()
		if err != nil {
			return File{}, err
		}
		if count == 0 {
			break
		}
		if count < 0 {
			count = -count
			if _, err := long(); err != nil { // the block's byte size
				return File{}, err
			}
		}
		for range count {
			k, err := value()
			if err != nil {
				return File{}, err
			}
			v, err := value()
			if err != nil {
				return File{}, err
			}
			meta[string(k)] = v
		}
	}
	f := File{Metadata: meta, HeaderEnd: pos}
	if pos+SyncSize > len(b) {
		return File{}, fmt.Errorf("%w: no sync marker after the header", ErrFraming)
	}
	f.Sync = b[pos : pos+SyncSize]
	pos += SyncSize
	for pos < len(b) {
		blk := Block{Start: pos}
		count, err := long()
		if err != nil {
			return File{}, err
		}
		blk.Records, blk.CountEnd = count, pos
		size, err := long()
		if err != nil {
			return File{}, err
		}
		if count < 0 || size < 0 || size > int64(len(b)-pos-SyncSize) {
			return File{}, fmt.Errorf("%w: block at byte %d counts %d records in %d bytes, %d left", ErrFraming, blk.Start, count, size, len(b)-pos)
		}
		blk.DataStart = pos
		pos += int(size)
		if !bytes.Equal(b[pos:pos+SyncSize], f.Sync) {
			return File{}, fmt.Errorf("%w: block at byte %d does not end in the sync marker", ErrFraming, blk.Start)
		}
		pos += SyncSize
		blk.End = pos
		f.Blocks = append(f.Blocks, blk)
	}
	return f, nil
}

// AppendLong appends v as Avro encodes a long: zig-zag, then a varint.
func AppendLong(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// AppendBytes appends v as Avro encodes bytes and strings: its length,
// then v.
func AppendBytes(b, v []byte) []byte { return append(AppendLong(b, int64(len(v))), v...) }
