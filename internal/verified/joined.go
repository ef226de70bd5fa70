package verified

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/klauspost/compress/flate"

	"github.com/icekeeper/icekeeper/internal/avrofile"
)

// joinMax is the largest manifest ReadAhead reads whole to join with
// others: a streaming writer's manifests are a few KB each.
const joinMax = 1 << 20

// joinable says whether ReadAhead may read m whole and decode it joined
// with others. iceberg-go's reader hands first row IDs out from the one
// manifest it was opened with, so manifests that pass them on to their
// entries (a format-version-3 list's data manifests) are read alone.
func joinable(m iceberg.ManifestFile) bool {
	return m.Length() <= joinMax && m.FirstRowID() == nil
}

// whole is a manifest read whole and split into its Avro blocks.
type whole struct {
	iceberg.ManifestFile
	data []byte
	file avrofile.File
}

// readWhole reads m whole, checked against its recorded length, and
// splits it into its blocks. Any failure sends m to FetchEntries, which
// names it as Entries does.
func readWhole(fs icebergio.IO, m iceberg.ManifestFile) (whole, error) {
	f, err := IO(fs, []iceberg.ManifestFile{m}).Open(m.FilePath())
	if err != nil {
		return whole{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return whole{}, err
	}
	if int64(len(data)) != m.Length() {
		return whole{}, &LengthError{File: m.FilePath(), Recorded: m.Length(), Stored: int64(len(data))}
	}
	file, err := avrofile.Split(data)
	if err != nil {
		return whole{}, err
	}
	return whole{m, data, file}, nil
}

// joins says whether b can be decoded in one stream with a: the same
// header metadata, byte for byte (schema, partition spec, format version,
// content, codec; writers put the keys in any order), under list entries
// of the same format version and content.
func (a whole) joins(b whole) bool {
	return a.Version() == b.Version() && a.ManifestContent() == b.ManifestContent() &&
		maps.EqualFunc(a.file.Metadata, b.file.Metadata, bytes.Equal)
}

// current is the manifest a joined stream is in: iceberg-go's reader asks
// the manifest it was opened with for the snapshot ID, sequence numbers
// and partition spec an entry inherits, as it decodes each entry.
type current struct{ iceberg.ManifestFile }

// readJoined decodes the entries of ms, which join (whole.joins), as one
// Avro stream: their common header once, then each one's blocks behind
// it. Parsing a manifest's schema costs more than decoding a streaming
// writer's few entries, and a table holds hundreds of such manifests.
//
// Deflated runs up to inflateRunMax are inflated first (inflated), into
// blocks of up to joinAt bytes; joinAt ≤ 0 leaves every run deflated.
//
// Each entry inherits from its own manifest, and each manifest's entries
// are counted against its list entry as Entries counts them. Any error
// is the caller's cue to read the manifests one by one, so that the
// damaged one is named as Entries names it.
func readJoined(ms []whole, discardDeleted bool, joinAt int) ([][]iceberg.ManifestEntry, error) {
	var stream []byte
	deflated := 0
	for _, m := range ms {
		deflated += len(m.data)
	}
	if string(ms[0].file.Metadata["avro.codec"]) == "deflate" && deflated <= inflateRunMax && joinAt > 0 {
		var err error
		if stream, err = inflated(ms, joinAt); err != nil {
			return nil, err
		}
	} else {
		size := ms[0].file.HeaderEnd + avrofile.SyncSize
		for _, m := range ms {
			size += len(m.data) - m.file.HeaderEnd
		}
		sync := ms[0].file.Sync
		stream = make([]byte, 0, size)
		stream = append(append(stream, ms[0].data[:ms[0].file.HeaderEnd]...), sync...)
		for _, m := range ms {
			for _, b := range m.file.Blocks {
				stream = append(append(stream, m.data[b.Start:b.End-avrofile.SyncSize]...), sync...)
			}
		}
	}
	cur := &current{ms[0].ManifestFile}
	rd, err := iceberg.NewManifestReader(cur, bytes.NewReader(stream))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	out := make([][]iceberg.ManifestEntry, len(ms))
	for i, m := range ms {
		cur.ManifestFile = m.ManifestFile
		var n [3]int64 // by status, as Entries counts
		for range m.file.Records() {
			e, err := rd.ReadEntry()
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			st := e.Status()
			if int(st) >= 0 && int(st) < len(n) {
				n[st]++
			}
			if !discardDeleted || st != iceberg.EntryStatusDELETED {
				out[i] = append(out[i], e)
			}
		}
		if err := checkManifest(m, n); err != nil {
			return nil, err
		}
	}
	if _, err := rd.ReadEntry(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("joined manifests hold more than their blocks count: %v", err)
	}
	return out, nil
}

// Bounds of inflated: runs of manifests of up to inflateRunMax bytes
// (a streaming writer's, a few KiB each) are inflated whole, larger ones
// a block at a time by the Avro reader, whose inflater per block is then
// amortised; no block inflates past maxInflatedBlock (the Avro reader's
// own default cap), and blocks are joined up to joinedBlock.
const (
	inflateRunMax    = 1 << 20
	maxInflatedBlock = 64 << 20
	joinedBlock      = 4 << 20
)

// inflated is the stream of ms, whose blocks are deflated, inflated with
// one inflater and joined into blocks of up to joinAt bytes (or one
// block larger alone), under their header with avro.codec null. The Avro
// reader would set up an inflater, with its window and tables, for each
// block: each small manifest's one.
func inflated(ms []whole, joinAt int) ([]byte, error) {
	f := ms[0].file
	stream := append([]byte("Obj\x01"), avrofile.AppendLong(nil, int64(len(f.Metadata)))...)
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		v := f.Metadata[k]
		if k == "avro.codec" {
			v = []byte("null")
		}
		stream = avrofile.AppendBytes(avrofile.AppendBytes(stream, []byte(k)), v)
	}
	stream = append(avrofile.AppendLong(stream, 0), f.Sync...)
	inflater := flate.NewReader(nil)
	defer inflater.Close()
	var block []byte
	var records int64
	flush := func() {
		if records > 0 {
			stream = avrofile.AppendLong(avrofile.AppendLong(stream, records), int64(len(block)))
			stream = append(append(stream, block...), f.Sync...)
		}
		block, records = block[:0], 0
	}
	for _, m := range ms {
		for _, b := range m.file.Blocks {
			n := len(block)
			if err := inflater.(flate.Resetter).Reset(bytes.NewReader(m.data[b.DataStart:b.End-avrofile.SyncSize]), nil); err != nil {
				return nil, fmt.Errorf("inflate a block of manifest %s: %w", m.FilePath(), err)
			}
			buf := bytes.NewBuffer(block)
			k, err := buf.ReadFrom(io.LimitReader(inflater, maxInflatedBlock+1))
			if err != nil {
				return nil, fmt.Errorf("inflate a block of manifest %s: %w", m.FilePath(), err)
			}
			if k > maxInflatedBlock {
				return nil, fmt.Errorf("a block of manifest %s inflates past %d bytes", m.FilePath(), maxInflatedBlock)
			}
			block, records = buf.Bytes(), records+b.Records
			if len(block) >= joinAt && n > 0 {
				// The block that crossed the bound starts the next one.
				last := slices.Clone(block[n:])
				block, records = block[:n], records-b.Records
				flush()
				block, records = append(block, last...), b.Records
			}
		}
	}
	flush()
	return stream, nil
}
