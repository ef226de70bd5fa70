package rebase

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
)

// Committer commits a run's groups in batches, each a snapshot of its
// operation staged once and rebased on every attempt (replace.go).
type Committer struct {
	env   Env
	op    GroupProducer
	locs  table.LocationProvider
	start *table.Snapshot
	// deletes is what the run's scan attached deletes to; its dangling
	// ones go with the first commit.
	deletes Deletes

	// BatchGroups and BusyGroups bound the groups of one batch before and
	// after a batch lost a race; BatchBytes bounds its input, past the
	// first group.
	BatchGroups, BusyGroups int
	BatchBytes              int64

	// base is the table the next batch is staged on; done what the
	// batches so far did; busy is set once one lost a race.
	base *table.Table
	done Committed
	busy bool
}

// NewCommitter is the committer of op's groups on tbl as b scanned it,
// with the default batch bounds: 100 groups, or 8 GiB of input, and 8
// groups once the table is busy.
func NewCommitter(env Env, op GroupProducer, tbl *table.Table, b Base) (*Committer, error) {
	locs, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	return &Committer{env: env, op: op, locs: locs, start: b.Start, deletes: b.Deletes,
		BatchGroups: 100, BusyGroups: 8, BatchBytes: 8 << 30, base: tbl}, nil
}

// Locations is where the table's new files go.
func (c *Committer) Locations() table.LocationProvider { return c.locs }

// Committed is what a committer did.
type Committed struct {
	Groups []table.CompactionGroupResult
	// Dropped is "partition: why", one per dropped group.
	Dropped        []string
	DeletesRemoved int
	// MetadataRemoved counts the old metadata files deleted after commits
	// (write.metadata.delete-after-commit.enabled).
	MetadataRemoved int
	Commits         int
	Stats           commit.Stats
	Rebases         int
	// Unknown is set when a commit's outcome could not be learned: its
	// outputs must stay, whether or not it landed.
	Unknown bool
}

// Committed is what the batches so far did.
func (c *Committer) Committed() Committed { return c.done }

// Head is the table as the last commit left it (the scanned table before
// the first).
func (c *Committer) Head() *table.Table { return c.base }

// addDropped notes the groups of batch that r dropped, with why.
func (d *Committed) addDropped(batch []table.CompactionGroupResult, r *replace) {
	for i := range batch {
		if why, ok := r.dropped[i]; ok {
			d.Dropped = append(d.Dropped, fmt.Sprintf("%s: %s", batch[i].PartitionKey, why))
		}
	}
}

// Run commits results in batches, on the table as the last commit left it
// (the scanned table at first). The first batch holds up to BatchGroups
// groups (or BatchBytes of input); once a batch has lost a race the table
// is busy, and later batches hold at most BusyGroups, so that a batch that
// runs out of retry budget loses little and the groups already committed
// stay committed. A fanned-out run calls it as its groups come in; what it
// did adds up in Committed.
func (c *Committer) Run(ctx context.Context, results []table.CompactionGroupResult) error {
	for len(results) > 0 {
		n := batchLen(results, c.BatchLimit(), c.BatchBytes)
		after, st, err := c.commitBatch(ctx, c.base, results[:n], &c.done)
		c.done.Stats.Add(st)
		if err != nil {
			return err
		}
		c.busy = c.busy || st.Conflicts > 0
		c.deletes.Dangling = nil // removed with the first commit
		results = results[n:]
		if after != nil {
			c.base = after
		}
	}
	return nil
}

// RemoveUncommitted removes the files rec recorded that no committed group
// references — outputs of dropped or failed groups — unless a commit's
// outcome is unknown: then they stay for unreferenced file removal.
func (c *Committer) RemoveUncommitted(rec *RecordingFS) {
	if c.done.Unknown {
		return
	}
	keep := map[string]bool{}
	for _, g := range c.done.Groups {
		for _, df := range g.NewDataFiles {
			keep[df.FilePath()] = true
		}
	}
	rec.RemoveExcept(keep)
}

// BatchLimit is the most groups the next batch may hold: a fanned-out run
// gathers that many before it commits.
func (c *Committer) BatchLimit() int {
	if c.busy {
		return c.BusyGroups
	}
	return c.BatchGroups
}

// batchLen is how many of results the next batch takes: at most maxGroups
// and, once past the first group, at most maxBytes of input.
func batchLen(results []table.CompactionGroupResult, maxGroups int, maxBytes int64) int {
	var bytes int64
	for i, r := range results {
		var in int64
		for _, df := range r.OldDataFiles {
			in += df.FileSizeBytes()
		}
		if i > 0 && (i >= maxGroups || bytes+in > maxBytes) {
			return i
		}
		bytes += in
	}
	return len(results)
}

// commitBatch commits one batch and adds what it did to out. It returns the
// table after the commit (nil when nothing committed).
func (c *Committer) commitBatch(ctx context.Context, base *table.Table, batch []table.CompactionGroupResult, out *Committed) (*table.Table, commit.Stats, error) {
	r := newReplace(c.env.FS, c.locs, c.start, batch, c.deletes, c.op)
	// Stage on base: read its manifests and write ours. This is the slow
	// part, so it happens before the first attempt, which then only
	// rebases on the head as it is by then.
	staged, err := r.rebase(ctx, base.Metadata())
	if err != nil || staged == nil {
		out.addDropped(batch, r)
		r.cleanup(nil)
		return nil, commit.Stats{}, err
	}
	l, err := c.env.commit(ctx, c.op, r, base, false)
	out.MetadataRemoved += l.metadataRemoved
	out.Unknown = out.Unknown || l.unknown
	out.Rebases += r.rebases
	out.addDropped(batch, r)
	if l.attempt == nil {
		return nil, l.stats, err
	}
	out.Commits++
	out.Groups = append(out.Groups, l.attempt.groups...)
	for _, g := range l.attempt.groups {
		out.DeletesRemoved += len(g.SafePosDeletes) + len(g.SafeDeletionVectors)
	}
	return l.after, l.stats, nil
}
