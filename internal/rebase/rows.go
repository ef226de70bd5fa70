package rebase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
)

// ErrNotRewrite is a snapshot with no parent to compare it with.
var ErrNotRewrite = errors.New("not a rewrite")

// Change is what one commit did to a table's visible rows, recomputed from
// storage: the rows of the data files it replaced or whose deletes it
// changed, as its parent saw them (deletes applied), against the rows of
// the files it wrote and of those same files as it sees them.
type Change struct {
	Snapshot, Parent int64
	// Before and After digest the visible rows of the touched files.
	Before, After rowdigest.Digest
	// Replaced and Written are the data files on each side: removed or
	// added by the commit, or kept with other deletes.
	Replaced, Written []string
	// Mismatched names written files that are not what the commit's
	// manifests describe (another size or row count): where a tampered or
	// damaged output shows itself without any claim to compare with.
	Mismatched []string
	// Covered are the field IDs the digests cover (rowdigest.Covered).
	Covered []int
	// Claimed is the claim the commit's summary makes, if it makes one.
	Claimed *RowClaim
}

// Kept reports whether the commit kept exactly the rows it touched but
// those it claims to have removed, and what it claims is what storage
// holds.
func (c Change) Kept() bool {
	after := c.After
	if c.Claimed != nil {
		after.Merge(c.Claimed.Removed)
	}
	return c.Before == after && len(c.Mismatched) == 0 && c.claimHolds()
}

// claimHolds reports whether the commit's claim, if any, is what storage
// holds: its digests are the recomputed ones, or where rows went over in
// copied row groups (outside the claim's digests), its counts add up.
func (c Change) claimHolds() bool {
	cl := c.Claimed
	switch {
	case cl == nil:
		return true
	case !cl.Holds() || cl.Copied.Count > 0 && cl.CopiedRows == 0:
		return false
	case cl.CopiedRows == 0:
		return cl.Read == c.Before && cl.Written == c.After
	}
	return cl.Read.Count+cl.CopiedRows == c.Before.Count && cl.Written.Count+cl.CopiedRows == c.After.Count
}

// claimOf reads the row claim in snap's summary: none, or an error when
// the summary holds one that does not parse.
func claimOf(snap *table.Snapshot) (*RowClaim, error) {
	if snap.Summary == nil {
		return nil, nil
	}
	p := snap.Summary.Properties
	read, ok1 := p[RowsReadProperty]
	written, ok2 := p[RowsWrittenProperty]
	if !ok1 && !ok2 {
		return nil, nil
	}
	if v := p[RowDigestVersionProp]; v != strconv.Itoa(rowdigest.Version) {
		return nil, fmt.Errorf("snapshot %d: row digest version %q, this icekeeper computes version %d", snap.SnapshotID, v, rowdigest.Version)
	}
	var c RowClaim
	var err error
	if c.Read, err = rowdigest.Parse(read); err != nil {
		return nil, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, RowsReadProperty, err)
	}
	if c.Written, err = rowdigest.Parse(written); err != nil {
		return nil, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, RowsWrittenProperty, err)
	}
	if v, ok := p[RowsRemovedProperty]; ok {
		if c.Removed, err = rowdigest.Parse(v); err != nil {
			return nil, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, RowsRemovedProperty, err)
		}
	}
	if v, ok := p[RowsCopiedProperty]; ok {
		if c.CopiedRows, err = strconv.ParseInt(v, 10, 64); err != nil || c.CopiedRows < 0 {
			return nil, fmt.Errorf("snapshot %d: %s %q is not a row count", snap.SnapshotID, RowsCopiedProperty, v)
		}
		if c.Copied, err = rowdigest.Parse(p[CopiedChunksProperty]); err != nil {
			return nil, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, CopiedChunksProperty, err)
		}
	}
	return &c, nil
}

// LastClaim is the newest snapshot of tbl's current lineage whose summary
// carries a row claim, or nil.
func LastClaim(tbl *table.Table) *table.Snapshot {
	meta := tbl.Metadata()
	for s := tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[RowsReadProperty] != "" {
			return s
		}
		if s.ParentSnapshotID == nil {
			return nil
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

// Recompute reads what snapshot id of tbl touched and digests its rows on
// both sides. It reads only the touched data files and the deletes
// attached to them, besides the two snapshots' manifests (verified).
func Recompute(ctx context.Context, tbl *table.Table, id int64) (Change, error) {
	meta := tbl.Metadata()
	snap := meta.SnapshotByID(id)
	if snap == nil {
		return Change{}, fmt.Errorf("table %s has no snapshot %d", tbl.Identifier(), id)
	}
	if snap.ParentSnapshotID == nil || meta.SnapshotByID(*snap.ParentSnapshotID) == nil {
		return Change{}, fmt.Errorf("%w: snapshot %d of %s has no parent in the metadata", ErrNotRewrite, id, tbl.Identifier())
	}
	claimed, err := claimOf(snap)
	if err != nil {
		return Change{}, err
	}
	parent := meta.SnapshotByID(*snap.ParentSnapshotID)
	before, err := PlanVerified(ctx, tbl, parent)
	if err != nil {
		return Change{}, err
	}
	after, err := PlanVerified(ctx, tbl, snap)
	if err != nil {
		return Change{}, err
	}
	touchedBefore, touchedAfter := touched(before, after), touched(after, before)
	scan := tbl.Scan(table.WithSnapshotID(id))
	sc, err := scan.Projection()
	if err != nil {
		return Change{}, fmt.Errorf("schema of snapshot %d: %w", id, err)
	}
	c := Change{Snapshot: id, Parent: parent.SnapshotID, Covered: rowdigest.Covered(sc), Claimed: claimed}
	for _, t := range touchedBefore {
		c.Replaced = append(c.Replaced, t.File.FilePath())
	}
	if c.Before, err = rowdigest.Tasks(ctx, scan, sc, touchedBefore, nil); err != nil {
		return Change{}, fmt.Errorf("read the rows snapshot %d replaced: %w", id, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return Change{}, err
	}
	check := func(t table.FileScanTask, rows int64) error {
		df := t.File
		c.Written = append(c.Written, df.FilePath())
		f, err := fs.Open(df.FilePath())
		if err != nil {
			return fmt.Errorf("open %s: %w", df.FilePath(), err)
		}
		info, err := f.Stat()
		f.Close()
		if err != nil {
			return fmt.Errorf("size of %s: %w", df.FilePath(), err)
		}
		if info.Size() != df.FileSizeBytes() {
			c.Mismatched = append(c.Mismatched, fmt.Sprintf("%s is %d bytes, its manifest entry records %d", df.FilePath(), info.Size(), df.FileSizeBytes()))
		} else if len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles) == 0 && rows != df.Count() {
			c.Mismatched = append(c.Mismatched, fmt.Sprintf("%s holds %d rows, its manifest entry records %d", df.FilePath(), rows, df.Count()))
		}
		return nil
	}
	if c.After, err = rowdigest.Tasks(ctx, scan, sc, touchedAfter, check); err != nil {
		return Change{}, fmt.Errorf("read the rows snapshot %d wrote: %w", id, err)
	}
	return c, nil
}

// touched are the tasks of a whose file b lacks, or holds with other
// deletes attached.
func touched(a, b []table.FileScanTask) []table.FileScanTask {
	other := make(map[string]table.FileScanTask, len(b))
	for _, t := range b {
		other[t.File.FilePath()] = t
	}
	var out []table.FileScanTask
	for _, t := range a {
		o, ok := other[t.File.FilePath()]
		if !ok || !slices.Equal(deletePaths(t), deletePaths(o)) {
			out = append(out, t)
		}
	}
	return out
}

func deletePaths(t table.FileScanTask) []string {
	var out []string
	for _, list := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
		for _, d := range list {
			out = append(out, d.FilePath())
		}
	}
	slices.Sort(out)
	return out
}

// Report is c as `icekeeper verify` prints it: "verified", or what differs.
func (c Change) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "snapshot %d (parent %d): %d files replaced, %d written\n", c.Snapshot, c.Parent, len(c.Replaced), len(c.Written))
	fmt.Fprintf(&b, "  rows before %s\n  rows after  %s\n", c.Before, c.After)
	if cl := c.Claimed; cl != nil {
		fmt.Fprintf(&b, "  claimed     read %s, written %s", cl.Read, cl.Written)
		if cl.Removed.Count > 0 {
			fmt.Fprintf(&b, ", removed %s", cl.Removed)
		}
		if cl.CopiedRows > 0 {
			fmt.Fprintf(&b, ", and %d rows in row groups copied byte for byte (%s)", cl.CopiedRows, cl.Copied)
		}
		b.WriteString("\n")
	}
	for _, m := range c.Mismatched {
		fmt.Fprintf(&b, "  differs: %s\n", m)
	}
	switch {
	case c.Kept() && c.Claimed != nil && c.Claimed.Removed.Count > 0:
		fmt.Fprintf(&b, "verified: the commit kept exactly the rows it touched but the %d it claims to have removed\n", c.Claimed.Removed.Count)
	case c.Kept():
		b.WriteString("verified: the commit kept exactly the rows it touched\n")
	case c.Before.Count != c.After.Count:
		fmt.Fprintf(&b, "differs: %d rows before, %d after\n", c.Before.Count, c.After.Count)
	case c.Before != c.After:
		fmt.Fprintf(&b, "differs: as many rows before as after (%d), but not the same rows\n", c.Before.Count)
	case len(c.Mismatched) == 0:
		b.WriteString("differs: storage holds other rows than the commit claims\n")
	default:
		b.WriteString("differs: the written files are not what the commit recorded\n")
	}
	return b.String()
}
