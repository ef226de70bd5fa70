// Package verified reads manifest lists and manifests and checks that each
// is the file the metadata above it describes: a manifest has the size its
// manifest-list entry records (manifest_length) and holds the ADDED,
// EXISTING and DELETED entries that entry counts; a manifest list holds
// the live data and delete files its snapshot summary totals.
//
// An Avro object container file cut off exactly after a block's sync
// marker decodes without an error and with fewer records; so does a block
// whose record count was lowered. Every decision icekeeper takes from a
// manifest (what is unreferenced, which delete files are dangling, what a
// rewritten manifest keeps) would silently lose the missing entries, so
// every reader that decides goes through this package, and a shortfall or
// surplus is an error naming the file and both figures.
//
// The length is the check that always applies: manifest_length is
// required in every format version, and the stored size comes with the
// read itself (the GET's Content-Length on S3, fstat on a local file), so
// it costs no request. Counts may be missing: a format-version-1 manifest
// list may leave them null (old writers do). Then the live entries of the
// manifests without counts are read and counted, and the sum compared
// with the summary's totals, so that a list cut at a block boundary is
// caught too. What is left unverifiable is a list with null counts under
// a summary without totals: its manifests are still checked by length,
// but a list that lost whole manifests reads as it is.
package verified

import (
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// ErrDamaged is wrapped by every error that says a manifest list or
// manifest holds other than the metadata above it counts.
var ErrDamaged = errors.New("damaged table metadata")

// CountError is a manifest or manifest list that yielded other than the
// counted number of entries.
type CountError struct {
	// File is the manifest or manifest list.
	File string
	// What names the entries counted ("ADDED entries", "live data files").
	What string
	// Counted is what the metadata above File says; Read what File gave.
	Counted, Read int64
	// By names where Counted comes from.
	By string
}

func (e *CountError) Error() string {
	return fmt.Sprintf("%v: %s holds %d %s, %s counts %d: the file is cut short, altered or replaced",
		ErrDamaged, e.File, e.Read, e.What, e.By, e.Counted)
}

// Unwrap makes errors.Is(err, ErrDamaged) hold.
func (e *CountError) Unwrap() error { return ErrDamaged }

// LengthError is a manifest whose stored size is not the length its
// manifest list records: not the file the snapshot wrote.
type LengthError struct {
	// File is the manifest.
	File string
	// Recorded is its manifest-list entry's manifest_length; Stored the
	// size of the object or file read.
	Recorded, Stored int64
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("%v: manifest %s is %d bytes in storage, its manifest list records %d (manifest_length): the file is cut short, altered or replaced",
		ErrDamaged, e.File, e.Stored, e.Recorded)
}

// Unwrap makes errors.Is(err, ErrDamaged) hold.
func (e *LengthError) Unwrap() error { return ErrDamaged }

// IO returns fs, except that opening one of manifests checks the opened
// file's size against its recorded length first and fails with a
// *LengthError on a difference. It is for readers this package does not
// drive (iceberg-go's scan planning), so that they read no manifest
// unverified; only Open is passed through.
func IO(fs icebergio.IO, manifests []iceberg.ManifestFile) icebergio.IO {
	lengths := make(map[string]int64, len(manifests))
	for _, m := range manifests {
		lengths[m.FilePath()] = m.Length()
	}
	return checkedIO{fs: fs, lengths: lengths}
}

type checkedIO struct {
	fs      icebergio.IO
	lengths map[string]int64
}

func (c checkedIO) Open(name string) (icebergio.File, error) {
	f, err := c.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if want, ok := c.lengths[name]; ok {
		if err := checkLength(f, name, want); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (c checkedIO) Remove(name string) error {
	return fmt.Errorf("remove %s: the verified manifest reader does not delete", name)
}

// checkLength compares the size of the open manifest f with recorded.
func checkLength(f icebergio.File, path string, recorded int64) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("size of manifest %s: %w", path, err)
	}
	if info.Size() != recorded {
		return &LengthError{File: path, Recorded: recorded, Stored: info.Size()}
	}
	return nil
}

// Summary totals this package checks a manifest list against.
const (
	totalDataFiles   = "total-data-files"
	totalDeleteFiles = "total-delete-files"
)

// Manifests reads snap's manifest list and checks it against the
// snapshot summary: the ADDED and EXISTING files of its data manifests
// must add up to total-data-files, those of its delete manifests to
// total-delete-files, where the summary has the total and every manifest
// its counts.
func Manifests(fs icebergio.IO, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	list, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list %s of snapshot %d: %w", snap.ManifestList, snap.SnapshotID, err)
	}
	if err := checkList(fs, snap, list); err != nil {
		return nil, err
	}
	return list, nil
}

func checkList(fs icebergio.IO, snap *table.Snapshot, list []iceberg.ManifestFile) error {
	for _, c := range []struct {
		content iceberg.ManifestContent
		key     string
		what    string
	}{
		{iceberg.ManifestContentData, totalDataFiles, "live data files"},
		{iceberg.ManifestContentDeletes, totalDeleteFiles, "live delete files"},
	} {
		want, ok := SummaryTotal(snap, c.key)
		if !ok {
			continue
		}
		got, err := liveFiles(fs, list, c.content)
		if err != nil {
			return fmt.Errorf("count the %s of manifest list %s: %w", c.what, snap.ManifestList, err)
		}
		if got != want {
			return &CountError{File: snap.ManifestList, What: c.what, Counted: want, Read: got,
				By: fmt.Sprintf("the summary of snapshot %d (%s)", snap.SnapshotID, c.key)}
		}
	}
	return nil
}

// liveFiles is the number of ADDED and EXISTING files in the manifests of
// content in list: what each manifest's list entry counts, or where the
// counts are null, what the manifest holds, read and verified by length.
func liveFiles(fs icebergio.IO, list []iceberg.ManifestFile, content iceberg.ManifestContent) (int64, error) {
	var n int64
	for _, m := range list {
		if m.ManifestContent() != content {
			continue
		}
		if a, e := m.AddedDataFiles(), m.ExistingDataFiles(); a >= 0 && e >= 0 {
			n += int64(a) + int64(e)
			continue
		}
		for _, err := range Entries(fs, m, true) {
			if err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, nil
}

// SummaryTotal returns the summary total key of snap, if it has one.
func SummaryTotal(snap *table.Snapshot, key string) (int64, bool) {
	if snap == nil || snap.Summary == nil {
		return 0, false
	}
	v, err := strconv.ParseInt(snap.Summary.Properties[key], 10, 64)
	return v, err == nil && v >= 0
}

// LiveFiles is the number of ADDED and EXISTING files the manifests of
// content in list count, and whether every one of them has its counts.
func LiveFiles(list []iceberg.ManifestFile, content iceberg.ManifestContent) (int64, bool) {
	var n int64
	for _, m := range list {
		if m.ManifestContent() != content {
			continue
		}
		a, e := m.AddedDataFiles(), m.ExistingDataFiles()
		if a < 0 || e < 0 {
			return 0, false
		}
		n += int64(a) + int64(e)
	}
	return n, true
}

// Entries yields m's entries (its live ones with discardDeleted), none if
// the manifest's stored size is not its recorded length, and after the
// last an error if the manifest held other than its manifest-list entry
// counts of ADDED, EXISTING or DELETED entries. A consumer acts on what it
// was given only once the sequence ended without an error.
func Entries(fs icebergio.IO, m iceberg.ManifestFile, discardDeleted bool) iter.Seq2[iceberg.ManifestEntry, error] {
	return func(yield func(iceberg.ManifestEntry, error) bool) {
		var n [3]int64 // by status: EXISTING, ADDED, DELETED
		for e, err := range m.Entries(IO(fs, []iceberg.ManifestFile{m}), false) {
			if err != nil {
				yield(nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err))
				return
			}
			st := e.Status()
			if int(st) >= 0 && int(st) < len(n) {
				n[st]++
			}
			if discardDeleted && st == iceberg.EntryStatusDELETED {
				continue
			}
			if !yield(e, nil) {
				return
			}
		}
		if err := checkManifest(m, n); err != nil {
			yield(nil, err)
		}
	}
}

func checkManifest(m iceberg.ManifestFile, n [3]int64) error {
	for _, c := range []struct {
		counted int32
		read    int64
		what    string
	}{
		{m.AddedDataFiles(), n[iceberg.EntryStatusADDED], "ADDED entries"},
		{m.ExistingDataFiles(), n[iceberg.EntryStatusEXISTING], "EXISTING entries"},
		{m.DeletedDataFiles(), n[iceberg.EntryStatusDELETED], "DELETED entries"},
	} {
		if c.counted >= 0 && int64(c.counted) != c.read {
			return &CountError{File: m.FilePath(), What: c.what, Counted: int64(c.counted), Read: c.read, By: "its manifest list"}
		}
	}
	return nil
}

// FetchEntries is Entries collected: all of them, or an error.
func FetchEntries(fs icebergio.IO, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	var out []iceberg.ManifestEntry
	if a, e := m.AddedDataFiles(), m.ExistingDataFiles(); a >= 0 && e >= 0 {
		out = make([]iceberg.ManifestEntry, 0, int(a)+int(e))
	}
	for e, err := range Entries(fs, m, discardDeleted) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// LiveDataFiles checks that a scan planned on snap found read distinct
// live data files: the summary's total-data-files, or where the summary
// has none, what snap's manifest list counts (read for it). A scan reads
// its manifests through iceberg-go, past this package; its result is
// checked instead, and on a mismatch every manifest is read again to name
// the one that is damaged.
func LiveDataFiles(fs icebergio.IO, snap *table.Snapshot, read int) error {
	err := liveDataFiles(fs, snap, read)
	if err == nil {
		return nil
	}
	if culprit := Snapshot(fs, snap); culprit != nil {
		return culprit
	}
	return err
}

// Snapshot reads snap's manifest list and every manifest it names, and
// returns the first error: the damaged file, by name.
func Snapshot(fs icebergio.IO, snap *table.Snapshot) error {
	list, err := Manifests(fs, snap)
	if err != nil {
		return err
	}
	for _, m := range list {
		for _, err := range Entries(fs, m, false) {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func liveDataFiles(fs icebergio.IO, snap *table.Snapshot, read int) error {
	if snap == nil {
		if read != 0 {
			return fmt.Errorf("%w: a table without a current snapshot planned %d data files", ErrDamaged, read)
		}
		return nil
	}
	if want, ok := SummaryTotal(snap, totalDataFiles); ok {
		if want != int64(read) {
			return &CountError{File: snap.ManifestList, What: "live data files in its manifests", Counted: want, Read: int64(read),
				By: fmt.Sprintf("the summary of snapshot %d (%s)", snap.SnapshotID, totalDataFiles)}
		}
		return nil
	}
	list, err := Manifests(fs, snap)
	if err != nil {
		return err
	}
	if want, known := LiveFiles(list, iceberg.ManifestContentData); known && want != int64(read) {
		return &CountError{File: snap.ManifestList, What: "live data files in its manifests", Counted: want, Read: int64(read), By: "the manifest list"}
	}
	return nil
}
