package compactor

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
)

// BenchmarkZstdBound is the codec's share of a rewrite, as a bound on
// compaction's speed: BenchmarkCompaction's small-files input (200 files of
// 4,800 rows, zstd), every page of it decompressed and compressed again
// with the merge path's zstd settings, on one goroutine and nothing else —
// no Parquet decoding or encoding, no I/O. The input's file bytes over the
// time it takes are the most input a CPU-second can rewrite when every page
// is re-encoded.
//
//	go test -run '^$' -bench ZstdBound -benchtime 5x ./compactor
func BenchmarkZstdBound(b *testing.B) {
	ctx := context.Background()
	home := b.TempDir()
	cfg := configs.Embedded(home)
	reg := cfg.Registry()
	defer reg.Close()
	bk, _ := reg.Bucket("local")
	inputBytes, err := buildBenchTables(ctx, bk, []string{"bound"}, 200, 4800, false, "zstd", nil)
	if err != nil {
		b.Fatal(err)
	}
	pages, err := zstdPages(ctx, bk)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	// The merge path's encoder (compactor/merge/codec.go).
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		b.Fatal(err)
	}
	var raw, out []byte
	var plain int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plain = 0
		for _, p := range pages {
			if raw, err = dec.DecodeAll(p, raw[:0]); err != nil {
				b.Fatal(err)
			}
			plain += int64(len(raw))
			out = enc.EncodeAll(raw, out[:0])
		}
	}
	mib := float64(inputBytes) / (1 << 20)
	b.ReportMetric(mib, "input-MiB")
	b.ReportMetric(float64(plain)/(1<<20), "decompressed-MiB")
	b.ReportMetric(float64(len(pages)), "pages")
	b.ReportMetric(mib/(b.Elapsed().Seconds()/float64(b.N)), "input-MiB/CPU-s")
}

// zstdPages returns the compressed payload of every zstd page of the
// table bench.bound's data files.
func zstdPages(ctx context.Context, bk *bucket.Bucket) ([][]byte, error) {
	tbl, err := bk.LoadTable(ctx, bucket.TableID{Namespace: []string{"bench"}, Name: "bound"})
	if err != nil {
		return nil, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	var pages [][]byte
	for _, t := range tasks {
		data, err := os.ReadFile(strings.TrimPrefix(t.File.FilePath(), "file://"))
		if err != nil {
			return nil, err
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, err
		}
		for _, rg := range pf.Metadata().RowGroups {
			for _, c := range rg.Columns {
				m := c.MetaData
				start := m.DataPageOffset
				if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
					start = m.DictionaryPageOffset
				}
				ps, err := chunkPages(data[start : start+m.TotalCompressedSize])
				if err != nil {
					return nil, err
				}
				pages = append(pages, ps...)
			}
		}
	}
	return pages, nil
}

// chunkPages cuts a column chunk into its pages' compressed payloads
// (after a v2 data page's levels, which are not compressed).
func chunkPages(chunk []byte) ([][]byte, error) {
	r := bufio.NewReader(bytes.NewReader(chunk))
	dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r))
	var out [][]byte
	for {
		var h format.PageHeader
		if err := dec.Decode(&h); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		body := make([]byte, h.CompressedPageSize)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		if v2 := h.DataPageHeaderV2.V; h.Type == format.DataPageV2 {
			if c, ok := v2.IsCompressed.Get(); ok && !c {
				continue
			}
			body = body[v2.RepetitionLevelsByteLength+v2.DefinitionLevelsByteLength:]
		}
		out = append(out, body)
	}
}
