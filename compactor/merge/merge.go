// Package merge is compaction's fast rewrite path for the common case of a
// streaming writer's output: delete-free Parquet files that all carry the
// table's current schema. Their pages are decoded column by column with
// parquet-go and re-encoded into row groups sized by the table's write
// properties — no Arrow record is built and no row is assembled. Each
// output's metrics come from its own footer and the inputs' bounds. On
// format version 3 every output row's lineage is written out (lineage.go).
//
// Everything else (row-level deletes, older schemas or specs, nested
// columns, files larger than the target, write properties the merge does
// not implement) is for iceberg-go's ExecuteCompactionGroup: Check says so
// from metadata, and Group says so when the files' own schemas differ.
package merge

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/icekeeper/icekeeper/internal/objects"
	"github.com/icekeeper/icekeeper/internal/rowdigest"
	"github.com/icekeeper/icekeeper/internal/s3write"
)

// ErrNotMergeable says a group must take iceberg-go's general path; it is
// never a failure of the run.
var ErrNotMergeable = errors.New("not mergeable column by column")

// Check reports, from metadata alone, whether a group can take the merge
// path (nil) or not (an error wrapping ErrNotMergeable that says why); the
// files' own schemas are checked again as Group reads them.
func Check(meta table.Metadata, tasks []table.FileScanTask, target int64) error {
	if _, err := mergeSettingsOf(meta.Properties(), nil); err != nil {
		return err
	}
	lineage := meta.Version() >= 3
	sc := meta.CurrentSchema()
	for _, f := range sc.Fields() {
		if _, ok := boundKinds[f.Type.String()]; !ok {
			return fmt.Errorf("%w: column %s has type %s", ErrNotMergeable, f.Name, f.Type)
		}
	}
	for _, t := range tasks {
		df := t.File
		switch {
		case len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) > 0:
			return fmt.Errorf("%w: %s has row-level deletes", ErrNotMergeable, df.FilePath())
		case df.FileFormat() != iceberg.ParquetFile:
			return fmt.Errorf("%w: %s is %s", ErrNotMergeable, df.FilePath(), df.FileFormat())
		case int(df.SpecID()) != meta.DefaultPartitionSpec():
			return fmt.Errorf("%w: %s has an older partition spec", ErrNotMergeable, df.FilePath())
		case df.FileSizeBytes() > target:
			// Input row groups are never split, so a file over the
			// target is left to the general path, which can.
			return fmt.Errorf("%w: %s is larger than the target", ErrNotMergeable, df.FilePath())
		case lineage && t.FirstRowID == nil:
			// Its rows have no row IDs to keep (a file from before the
			// upgrade to v3, not yet given its first_row_id).
			return fmt.Errorf("%w: %s has no first_row_id", ErrNotMergeable, df.FilePath())
		case lineage && t.DataSequenceNumber == nil:
			return fmt.Errorf("%w: %s has no data sequence number", ErrNotMergeable, df.FilePath())
		}
		// Metrics name the columns a file holds: other columns mean an
		// older schema, caught here before anything is read. On v3 a
		// file may also hold the row-lineage columns.
		vc := df.ValueCounts()
		n := len(vc)
		if lineage {
			for _, id := range lineageIDs() {
				if _, ok := vc[id]; ok {
					n--
				}
			}
		}
		if n != len(sc.Fields()) {
			return fmt.Errorf("%w: %s has metrics for other columns than the schema's", ErrNotMergeable, df.FilePath())
		}
		for _, f := range sc.Fields() {
			if _, ok := vc[f.ID]; !ok {
				return fmt.Errorf("%w: %s has no column %s", ErrNotMergeable, df.FilePath(), f.Name)
			}
		}
	}
	return nil
}

// Merger rewrites groups by merging their files' columns. One Merger
// serves a run's groups, so that they share compressors: a zstd encoder
// holds megabytes of match tables, and a pool of them per group made a run
// over many small partitions peak 120 MiB higher than with one pool.
type Merger struct {
	// WholeFileBytes is the size up to which an input is read in one
	// request (0: 16 MiB).
	WholeFileBytes int64
	// CheckRows proves every output's rows before Group returns it: the
	// rows of the row groups it re-encodes are hashed as they are decoded
	// (row digest, package rowdigest) and must be what the output, read
	// back from storage, holds; the row groups it copies are hashed by
	// their bytes on both sides. Group's Report then carries the claim.
	CheckRows bool
	// NoStorageCopies makes the healthy row groups of inputs read and
	// written by icekeeper, as before storage copies (S3 part copies,
	// copy_file_range): for stores where a copy costs more than the
	// bytes, and to measure one path beside the other.
	NoStorageCopies bool

	// beforeProve, when set (tests only), runs on an output written and
	// not yet read back (fault injection).
	beforeProve func(path string) error

	mu     sync.Mutex
	zstd   map[int]*zstdCodec // by write.parquet.compression-level
	copies *s3write.Copies    // what the run knows of its stores' part copies
}

// storageCopies is the run's s3write.Copies, shared by its groups so that
// a store that refuses part copies is asked once.
func (m *Merger) storageCopies() *s3write.Copies {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.copies == nil {
		m.copies = &s3write.Copies{Off: m.NoStorageCopies}
	}
	return m.copies
}

func (m *Merger) zstdCodec(level int) *zstdCodec {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.zstd == nil {
		m.zstd = map[int]*zstdCodec{}
	}
	c, ok := m.zstd[level]
	if !ok {
		c = newZstdCodec(level)
		m.zstd[level] = c
	}
	return c
}

// Report is what Group did besides its result: what it did with the
// inputs' row groups, and with CheckRows the group's claim.
type Report struct {
	RowGroups RowGroupCounts
	Rows      *rowdigest.Claim
	// ProvenAsSent counts the outputs proven from the bytes sent, which
	// the store acknowledged (sentCopy), instead of read back from it.
	ProvenAsSent int
}

// Group rewrites a group by merging its files into files of about target
// bytes, beside the first input, and says what it did with their row
// groups. It returns an error
// wrapping ErrNotMergeable when the group must take the general path; an
// output it had begun is never returned, and the caller removes it with its
// other uncommitted files.
func (m *Merger) Group(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target int64) (table.CompactionGroupResult, Report, error) {
	var rep Report
	if m.CheckRows {
		rep.Rows = &rowdigest.Claim{}
	}
	res, err := m.group(ctx, tbl, tasks, target, &rep)
	return res, rep, err
}

func (m *Merger) group(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, target int64, rep *Report) (table.CompactionGroupResult, error) {
	counts := &rep.RowGroups
	wholeFileBytes := m.WholeFileBytes
	if wholeFileBytes <= 0 {
		wholeFileBytes = defaultWholeFileBytes
	}
	res := table.CompactionGroupResult{}
	meta := tbl.Metadata()
	if err := Check(meta, tasks, target); err != nil {
		return res, err
	}
	set, err := mergeSettingsOf(meta.Properties(), m)
	if err != nil {
		return res, err
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return res, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return res, fmt.Errorf("the file system of %s cannot write", tbl.Location())
	}
	wfs = s3write.Wrap(ctx, wfs, tbl.Location())
	spec := meta.PartitionSpec()
	sc := meta.CurrentSchema()
	lineage := meta.Version() >= 3
	ids := make([]int, len(sc.Fields()))
	kinds := make([]boundKind, len(sc.Fields()))
	for i, f := range sc.Fields() {
		ids[i] = f.ID
		kinds[i] = boundKinds[f.Type.String()]
	}
	// Outputs go beside the first input, in its partition's directory.
	// (path.Dir would collapse the "//" of a URL.)
	first := tasks[0].File.FilePath()
	dir := first[:strings.LastIndexByte(first, '/')]

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files := prefetch(ctx, fsys, tbl.Location(), tasks, wholeFileBytes, rangesFrom(set, tbl.Location()))
	defer func() {
		cancel()
		for f := range files { // release what was read ahead
			f.close()
		}
	}()

	var out *mergeOutput
	defer func() {
		if out != nil { // abandoned by an error
			out.file.Close()
			out.counter.sent.close()
		}
	}()
	var schema, outSchema *parquet.Schema
	var inputs []iceberg.DataFile
	finish := func() error {
		if out == nil {
			return nil
		}
		df, err := out.close(spec, sc, inputs)
		counts.Copied += out.counts.Copied
		counts.Reencoded += out.counts.Reencoded
		counts.ByStorage += out.counts.ByStorage
		counts.KeptPages += out.counts.KeptPages
		counts.OwnPages += out.counts.OwnPages
		proof, file, sent := out.proof, out.file, out.counter.sent
		out, inputs = nil, nil
		if err != nil {
			sent.close()
			return err
		}
		if proof != nil {
			if m.beforeProve != nil {
				if err := m.beforeProve(df.FilePath()); err != nil {
					sent.close()
					return err
				}
			}
			in, fromSent := openOutput(ctx, fsys, tbl.Location(), df, file, sent, wholeFileBytes)
			claim, err := proof.prove(in)
			if err != nil {
				return err
			}
			rep.Rows.Merge(claim)
			if fromSent {
				rep.ProvenAsSent++
			}
		}
		res.NewDataFiles = append(res.NewDataFiles, df)
		return nil
	}
	for f := range files {
		if f.err != nil {
			return res, f.err
		}
		// Every input must be the table's schema (names, field IDs,
		// types) and the same Parquet schema as the first (optionality,
		// logical types); on v3 it may hold the row-lineage columns too.
		lin, err := matchSchema(sc, f.pf.Schema(), lineage)
		if err != nil {
			f.close()
			return res, fmt.Errorf("%s: %w", f.df.FilePath(), err)
		}
		if lineage {
			lin.firstRowID, lin.seq = *f.task.FirstRowID, *f.task.DataSequenceNumber
		}
		if err := readableCodecs(f.pf); err != nil {
			f.close()
			return res, fmt.Errorf("%w: %s: %v", ErrNotMergeable, f.df.FilePath(), err)
		}
		if schema == nil {
			schema = f.pf.Schema()
			outSchema = outputSchema(schema, len(sc.Fields()), lineage, set)
		} else if !equalColumns(schema, f.pf.Schema(), len(sc.Fields())) {
			f.close()
			return res, fmt.Errorf("%w: %s has another Parquet schema than %s", ErrNotMergeable, f.df.FilePath(), tasks[0].File.FilePath())
		}
		// Roll like iceberg-go's writer does, once the file has reached
		// the target: the planner's groups spill over it by one file.
		if out != nil && out.inputBytes >= target {
			if err := finish(); err != nil {
				f.close()
				return res, err
			}
		}
		if out == nil {
			name := dir + "/" + uuid.NewString() + ".parquet"
			if out, err = newMergeOutput(wfs, name, outSchema, set, kinds, lineage, m.CheckRows); err != nil {
				f.close()
				return res, err
			}
			if m.CheckRows {
				out.proof = newRowProof(ids)
			}
		}
		err = out.copyFile(f.pf, f.src, lin)
		f.close()
		if err != nil {
			return res, fmt.Errorf("merge %s: %w", f.df.FilePath(), err)
		}
		out.inputBytes += f.df.FileSizeBytes()
		inputs = append(inputs, f.df)
		res.OldDataFiles = append(res.OldDataFiles, f.df)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.OldDataFiles) != len(tasks) {
		return res, fmt.Errorf("merge read %d of the group's %d files", len(res.OldDataFiles), len(tasks))
	}
	if err := finish(); err != nil {
		return res, err
	}
	return res, nil
}

// rangesFrom is the row group size from which an input is read in ranges
// whatever its size (prefetch): a row group the storage may copy, one
// full enough to copy (half the table's row-group size) and large enough
// for an S3 part; 0 when the storage copies nothing (storage copies off,
// or the store at location refused them earlier in the run).
func rangesFrom(set mergeSettings, location string) int64 {
	if !set.storageCopies {
		return 0
	}
	if bucket, ok := objects.Bucket(location); ok && set.copies != nil && set.copies.Refused(bucket) {
		return 0
	}
	return max(set.copyBytes, s3write.MinPartBytes)
}

// readableCodecs refuses inputs whose pages parquet-go v0.32.0 cannot
// decode as arrow-go wrote them: LZ4_RAW pages of iceberg-go's writer fail
// with "too short to contain a PLAIN encoded byte array value".
func readableCodecs(pf *parquet.File) error {
	for _, rg := range pf.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData.Codec == format.Lz4Raw {
				return fmt.Errorf("column %s is LZ4_RAW", strings.Join(cc.MetaData.PathInSchema, "."))
			}
		}
	}
	return nil
}

// matchSchema checks that a file's Parquet schema is the table's current
// schema, flat: one top-level column per field, same field IDs, names and
// physical types, in order. When lineage is on (format version 3) the
// file may hold the row-lineage columns after them, which it returns.
func matchSchema(sc *iceberg.Schema, ps *parquet.Schema, lineage bool) (lineageSource, error) {
	lin := lineageSource{rowIDCol: -1, seqCol: -1}
	fields := sc.Fields()
	cols := ps.Fields()
	extra := len(cols) - len(fields)
	if extra < 0 || extra > 0 && !lineage || extra > len(lineageIDs()) {
		return lin, fmt.Errorf("%w: the file has %d columns, the schema %d", ErrNotMergeable, len(cols), len(fields))
	}
	for i, f := range fields {
		c := cols[i]
		if !c.Leaf() || c.Repeated() || c.ID() != f.ID || c.Name() != f.Name {
			return lin, fmt.Errorf("%w: column %d of the file is %q (id %d), the schema's is %q (id %d)", ErrNotMergeable, i, c.Name(), c.ID(), f.Name, f.ID)
		}
		if want := boundKinds[f.Type.String()].kind; c.Type().Kind() != want {
			return lin, fmt.Errorf("%w: column %s is %v in the file, %s in the schema", ErrNotMergeable, f.Name, c.Type().Kind(), f.Type)
		}
	}
	for i := len(fields); i < len(cols); i++ {
		c := cols[i]
		col := &lin.rowIDCol
		if c.ID() == iceberg.LastUpdatedSequenceNumberFieldID {
			col = &lin.seqCol
		} else if c.ID() != iceberg.RowIDFieldID {
			return lin, fmt.Errorf("%w: column %d of the file is %q (id %d), not in the schema", ErrNotMergeable, i, c.Name(), c.ID())
		}
		if *col >= 0 || !c.Leaf() || c.Repeated() || c.Type().Kind() != parquet.Int64 {
			return lin, fmt.Errorf("%w: the file's row-lineage column %q (id %d) is not one long", ErrNotMergeable, c.Name(), c.ID())
		}
		*col = i
	}
	return lin, nil
}

// equalColumns reports whether the first n columns of two files' schemas
// are the same Parquet columns (optionality, physical and logical types).
func equalColumns(a, b *parquet.Schema, n int) bool {
	fa, fb := a.Fields(), b.Fields()
	if len(fa) < n || len(fb) < n {
		return false
	}
	for i := range n {
		if !parquet.EqualNodes(fa[i], fb[i]) {
			return false
		}
	}
	return true
}

// outputSchema is the inputs' schema with the table's codec in place of
// the inputs' own: parquet-go gives a file's schema the codec and encoding
// of its column chunks, and a writer would keep them. Each column keeps
// the encoding its first input was written with — dictionary or not, the
// writer that saw the data chose — except that a dictionary is used only
// when the table allows them. The columns keep the inputs' order
// (parquet.Group would sort them by name).
//
// With lineage (format version 3) the row-lineage columns follow the n
// columns of the table, as iceberg-go's writer places them.
func outputSchema(in *parquet.Schema, n int, lineage bool, set mergeSettings) *parquet.Schema {
	cols := in.Fields()[:n]
	fields := make([]parquet.Field, len(cols), len(cols)+len(lineageIDs()))
	for i, c := range cols {
		enc := c.Encoding()
		switch {
		case enc == nil:
			enc = &parquet.Plain
		case enc.Encoding() == format.RLEDictionary || enc.Encoding() == format.PlainDictionary:
			enc = &parquet.RLEDictionary
			if !set.dictionary {
				enc = &parquet.Plain
			}
		}
		fields[i] = outputColumn{Node: parquet.Compressed(parquet.Encoded(c, enc), set.codec), name: c.Name()}
	}
	if lineage {
		fields = append(fields, lineageColumns(set)...)
	}
	return parquet.NewSchema(in.Name(), orderedGroup{fields: fields})
}

// orderedGroup is a group node whose fields keep the order given.
type orderedGroup struct {
	parquet.Group // the other methods of a group node
	fields        []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

// outputColumn names a re-encoded column. Its values are written column
// by column, never taken from Go values, so Value is never called.
type outputColumn struct {
	parquet.Node
	name string
}

func (c outputColumn) Name() string { return c.name }

func (c outputColumn) Value(reflect.Value) reflect.Value { return reflect.Value{} }
