package merge

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// zstdCodec is parquet-go's compress.Codec for zstd, with the encoder set
// as arrow-go's (and so iceberg-go's) is: entropy coding of literals even
// where no matches are found. parquet-go's own codec leaves that off, and
// on the random strings that make up a typical payload column it then
// stores blocks raw: measured on 1 MiB of random 50–200 character strings,
// output/input 1.000 without, 0.763 with. Compacting iceberg-go's files
// through it made them a quarter larger.
type zstdCodec struct {
	level    zstd.EncoderLevel
	encoders sync.Pool
	decoders sync.Pool
}

// newZstdCodec returns the codec at write.parquet.compression-level
// (level ≤ 0: zstd's default, 3), mapped onto the Go encoder's four speeds
// as iceberg-go maps it.
func newZstdCodec(level int) *zstdCodec {
	l := zstd.SpeedDefault
	if level > 0 {
		l = zstd.EncoderLevelFromZstd(level)
	}
	return &zstdCodec{level: l}
}

func (c *zstdCodec) String() string { return "ZSTD" }

func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	e, _ := c.encoders.Get().(*zstd.Encoder)
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(c.level), zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithAllLitEntropyCompression(true))
		if err != nil {
			return nil, err
		}
	}
	defer c.encoders.Put(e)
	return e.EncodeAll(src, dst[:0]), nil
}

func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) {
	d, _ := c.decoders.Get().(*zstd.Decoder)
	if d == nil {
		var err error
		if d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)); err != nil {
			return nil, err
		}
	}
	defer c.decoders.Put(d)
	return d.DecodeAll(src, dst[:0])
}
