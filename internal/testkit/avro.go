package testkit

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/icekeeper/icekeeper/internal/avrofile"
)

// AvroBlocks returns the data blocks of the Avro object container file
// b, so that a test can damage a manifest the way a partial copy or a
// crash does.
func AvroBlocks(b []byte) ([]avrofile.Block, error) {
	f, err := avrofile.Split(b)
	return f.Blocks, err
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
	return append(out, b[last.CountEnd:]...), nil
}
