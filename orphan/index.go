package orphan

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/icekeeper/icekeeper/internal/state"
)

// The reference index remembers, per table, what each manifest list and
// manifest references (state.RefIndex). Both are immutable once a
// snapshot names them, so a run reads only those it has not seen, and
// an unchanged table costs its metadata file and the listing.
//
// It lives in the state store, not in a file the table owns: the store
// is transactional (a row is written whole or not at all), private to
// icekeeper (no engine or writer reads or trusts it), never listed among
// the table's objects (so removal needs no rule to keep its own index,
// and cannot mistake it for garbage), and leaves nothing to clean up in
// the table's location when the table is dropped.
//
// A row is a cache, never the truth. It is trusted only when it decodes
// (magic, zstd frame checksum, the file it describes, the count) and was
// written for the table's current UUID, so a table recreated under the
// same name never reuses another's rows; any other row is logged and the
// file is read again. Deletion never rests on the index: the re-check
// before deleting reads every manifest list and manifest in full (see
// deleteDue), so a wrong row can at worst mark a file, never delete one.
// A store that cannot be read or written only costs reads.

// refsMagic starts every encoded row: the format and its version.
// Version 2 rows are written only from manifest lists and manifests that
// matched their counts (package verified); a version 1 row may hold what
// a manifest cut short yielded, so it is not trusted and its file is read
// once more.
const refsMagic = "ikr\x02"

// maxDecodedRefs bounds what one row may decode to; a manifest of a
// million files of 200-byte paths stays well under it.
const maxDecodedRefs = 1 << 30

// indexChunk is how many rows a walk looks up at a time, bounding the
// rows held in memory; indexFlush is how many new rows it writes per
// transaction.
const (
	indexChunk = 500
	indexFlush = 256
)

// refCodec encodes and decodes rows; its zstd coders are made once and
// shared by a job's runs (both are safe for concurrent EncodeAll and
// DecodeAll).
type refCodec struct {
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	err  error
}

func (c *refCodec) init() error {
	c.once.Do(func() {
		if c.enc, c.err = zstd.NewWriter(nil, zstd.WithEncoderCRC(true)); c.err != nil {
			return
		}
		c.dec, c.err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxDecodedRefs))
	})
	return c.err
}

// encode is the row of file, which references refs: refsMagic, then a
// zstd frame (with its checksum) of the file's path, the count of
// references and each reference, every string length-prefixed (an
// object name may hold a newline, so a newline list could not carry
// it).
func (c *refCodec) encode(file string, refs []string) ([]byte, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	n := len(file) + 2*binary.MaxVarintLen64
	for _, r := range refs {
		n += len(r) + binary.MaxVarintLen64
	}
	raw := make([]byte, 0, n)
	raw = binary.AppendUvarint(raw, uint64(len(file)))
	raw = append(raw, file...)
	raw = binary.AppendUvarint(raw, uint64(len(refs)))
	for _, r := range refs {
		raw = binary.AppendUvarint(raw, uint64(len(r)))
		raw = append(raw, r...)
	}
	return c.enc.EncodeAll(raw, []byte(refsMagic)), nil
}

// errBadRow is wrapped by every reason a row is not decoded.
var errBadRow = errors.New("undecodable reference index row")

// decode returns the references of file's row b.
func (c *refCodec) decode(file string, b []byte) ([]string, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(b, []byte(refsMagic))
	if !ok {
		return nil, fmt.Errorf("%w: no %q header", errBadRow, refsMagic)
	}
	raw, err := c.dec.DecodeAll(rest, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadRow, err)
	}
	next := func() (string, bool) {
		n, k := binary.Uvarint(raw)
		if k <= 0 || n > uint64(len(raw)-k) {
			return "", false
		}
		s := string(raw[k : k+int(n)])
		raw = raw[k+int(n):]
		return s, true
	}
	if got, ok := next(); !ok || got != file {
		return nil, fmt.Errorf("%w: written for another file", errBadRow)
	}
	count, k := binary.Uvarint(raw)
	// Each reference takes at least its length byte, so a count beyond
	// the bytes left is corrupt: checked before allocating for it.
	if k <= 0 || count > uint64(len(raw)-k) {
		return nil, fmt.Errorf("%w: bad count", errBadRow)
	}
	raw = raw[k:]
	refs := make([]string, 0, count)
	for range count {
		r, ok := next()
		if !ok {
			return nil, fmt.Errorf("%w: truncated after %d of %d references", errBadRow, len(refs), count)
		}
		refs = append(refs, r)
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last reference", errBadRow, len(raw))
	}
	return refs, nil
}

// indexUse is how a walk uses the index.
type indexUse int

const (
	// readAll reads every manifest list and manifest, as the re-check
	// before deleting does.
	readAll indexUse = iota
	// indexOnly takes references from the index but changes nothing in
	// it (a dry run records nothing).
	indexOnly
	// indexAndSave also saves what it read and forgets the rows no
	// snapshot reaches any more.
	indexAndSave
)

// indexStats are a walk's dealings with the index, for the figures.
type indexStats struct {
	// Rejected counts rows found but not trusted (undecodable, or written
	// for another table UUID): their files were read again.
	Rejected int
	// Unsaved counts rows that could not be written.
	Unsaved int
	// Forgotten counts rows removed because no snapshot reaches them.
	Forgotten int
}

// runIndex is one walk's use of the index; a nil *runIndex reads
// everything. Its methods are safe for concurrent use.
type runIndex struct {
	store  state.RefIndex
	codec  *refCodec
	key    state.TableKey
	uuid   string
	save   bool
	logger *slog.Logger

	mu          sync.Mutex
	pending     []state.IndexRow
	broken      bool // a write failed: this walk writes no more
	foreign     int  // rows of another table UUID
	undecodable int
	stats       indexStats
}

// lookup returns the rows of paths the index holds; a store that cannot
// be read gives none, and the files are read.
func (x *runIndex) lookup(ctx context.Context, paths []string) map[string]state.IndexRow {
	if x == nil || len(paths) == 0 {
		return nil
	}
	rows, err := x.store.IndexedRefs(ctx, x.key, paths)
	if err != nil {
		if ctx.Err() == nil {
			x.logger.Warn("reference index not read; reading the files", "table", x.key.String(), "err", err)
		}
		return nil
	}
	return rows
}

// refs returns what file references according to its row in rows, and
// whether the row may be trusted: it exists, was written for the
// table's current UUID, and decodes.
func (x *runIndex) refs(rows map[string]state.IndexRow, file string) ([]string, bool) {
	row, ok := rows[file]
	if x == nil || !ok {
		return nil, false
	}
	if row.TableUUID != x.uuid {
		// A table dropped and created again under its name has a row for
		// every file of its predecessor: one line says so.
		if x.reject(&x.foreign) == 1 {
			x.logger.Info("reference index rows of another table UUID; reading their files", "table", x.key.String(), "file", file,
				"rowUUID", row.TableUUID, "tableUUID", x.uuid)
		}
		return nil, false
	}
	refs, err := x.codec.decode(file, row.Refs)
	if err != nil {
		if x.reject(&x.undecodable) <= maxLoggedRows {
			x.logger.Warn("reference index row not decoded; reading the file", "table", x.key.String(), "file", file, "err", err)
		}
		return nil, false
	}
	return refs, true
}

// maxLoggedRows bounds the undecodable rows a walk logs one by one; the
// figures count them all.
const maxLoggedRows = 10

// reject counts a row not trusted, and one more of its kind in kind,
// and returns how many of that kind there are now.
func (x *runIndex) reject(kind *int) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stats.Rejected++
	*kind++
	return *kind
}

// saving reports whether add keeps what it is given.
func (x *runIndex) saving() bool { return x != nil && x.save }

// add records that file, read in full, references refs; rows are
// written in batches.
func (x *runIndex) add(ctx context.Context, file string, refs []string) {
	if !x.saving() {
		return
	}
	b, err := x.codec.encode(file, refs)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		x.stats.Unsaved++
		x.logger.Warn("reference index row not encoded", "table", x.key.String(), "file", file, "err", err)
		return
	}
	x.pending = append(x.pending, state.IndexRow{Path: file, TableUUID: x.uuid, Refs: b})
	if len(x.pending) >= indexFlush {
		x.flushLocked(ctx)
	}
}

// flush writes the rows not yet written.
func (x *runIndex) flush(ctx context.Context) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.flushLocked(ctx)
}

func (x *runIndex) flushLocked(ctx context.Context) {
	if len(x.pending) == 0 {
		return
	}
	if !x.broken {
		err := x.store.PutIndexedRefs(ctx, x.key, x.pending)
		if err == nil {
			x.pending = x.pending[:0]
			return
		}
		// Not fatal: the run has what it read; the next run reads those
		// files again.
		x.broken = true
		x.logger.Warn("reference index not saved; the next run reads these files again", "table", x.key.String(), "err", err)
	}
	x.stats.Unsaved += len(x.pending)
	x.pending = x.pending[:0]
}

// forget removes the rows of files no current snapshot reaches (keep
// are those it reaches), and rows of another table UUID.
func (x *runIndex) forget(ctx context.Context, keep []string) {
	if !x.saving() {
		return
	}
	n, err := x.store.ForgetIndexedRefs(ctx, x.key, x.uuid, keep)
	if err != nil {
		x.logger.Warn("reference index rows not forgotten", "table", x.key.String(), "err", err)
	}
	x.mu.Lock()
	x.stats.Forgotten += n
	x.mu.Unlock()
}

func (x *runIndex) result() indexStats {
	if x == nil {
		return indexStats{}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats
}
