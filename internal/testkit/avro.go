package testkit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// AvroBlock is one data block of an Avro object container file: its
// record count and where it starts and ends (after its sync marker).
type AvroBlock struct {
	Records    int64
	Start, End int
	countEnd   int // end of the record count varint
}

// AvroBlocks parses the header of the Avro object container file b and
// returns its data blocks, so that a test can damage a manifest the way
// a partial copy or a crash does.
func AvroBlocks(b []byte) ([]AvroBlock, error) {
	if !bytes.HasPrefix(b, []byte("Obj\x01")) {
		return nil, errors.New("not an Avro object container file")
	}
	pos := 4
	long := func() (int64, error) {
		v, n := binary.Varint(b[pos:])
		if n <= 0 {
			return 0, fmt.Errorf("bad varint at byte %d", pos)
		}
		pos += n
		return v, nil
	}
	skip := func() error { // a string or bytes value
		n, err := long()
		if err != nil {
			return err
		}
		if n < 0 || pos+int(n) > len(b) {
			return fmt.Errorf("bad length at byte %d", pos)
		}
		pos += int(n)
		return nil
	}
	for { // the metadata map, in blocks
		count, err := long()
		if err != nil {
			return nil, err
		}
		if count == 0 {
			break
		}
		if count < 0 {
			count = -count
			if _, err := long(); err != nil { // the block's byte size
				return nil, err
			}
		}
		for range count {
			if err := skip(); err != nil {
				return nil, err
			}
			if err := skip(); err != nil {
				return nil, err
			}
		}
	}
	if pos+16 > len(b) {
		return nil, errors.New("no sync marker")
	}
	sync := b[pos : pos+16]
	pos += 16
	var blocks []AvroBlock
	for pos < len(b) {
		blk := AvroBlock{Start: pos}
		count, err := long()
		if err != nil {
			return nil, err
		}
		blk.Records, blk.countEnd = count, pos
		size, err := long()
		if err != nil {
			return nil, err
		}
		pos += int(size)
		if pos+16 > len(b) || !bytes.Equal(b[pos:pos+16], sync) {
			return nil, fmt.Errorf("block at byte %d does not end in the sync marker", blk.Start)
		}
		pos += 16
		blk.End = pos
		blocks = append(blocks, blk)
	}
	return blocks, nil
}

// CutAfterBlocks returns the Avro file b cut exactly after its first n
// data blocks: a file that decodes without an error and with fewer
// records.
func CutAfterBlocks(b []byte, n int) ([]byte, error) {
	blocks, err := AvroBlocks(b)
	if err != nil {
		return nil, err
	}
	if n >= len(blocks) {
		return nil, fmt.Errorf("the file has %d blocks, cannot keep %d and lose some", len(blocks), n)
	}
	if n == 0 {
		return bytes.Clone(b[:blocks[0].Start]), nil
	}
	return bytes.Clone(b[:blocks[n-1].End]), nil
}

// CutMidBlock returns the Avro file b cut in the middle of its data block
// n (from 0): a file whose last block does not decode.
func CutMidBlock(b []byte, n int) ([]byte, error) {
	blocks, err := AvroBlocks(b)
	if err != nil {
		return nil, err
	}
	if n >= len(blocks) {
		return nil, fmt.Errorf("the file has %d blocks, no block %d", len(blocks), n)
	}
	return bytes.Clone(b[:(blocks[n].Start+blocks[n].End)/2]), nil
}

// LowerBlockCount returns b with the record count of its last data block
// lowered by by: the block still holds every record, but a reader that
// trusts the count stops early.
func LowerBlockCount(b []byte, by int64) ([]byte, error) {
	blocks, err := AvroBlocks(b)
	if err != nil {
		return nil, err
	}
	last := blocks[len(blocks)-1]
	if last.Records <= by {
		return nil, fmt.Errorf("the last block holds %d records", last.Records)
	}
	out := bytes.Clone(b[:last.Start])
	out = binary.AppendVarint(out, last.Records-by)
	return append(out, b[last.countEnd:]...), nil
}
