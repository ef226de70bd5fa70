package compactor

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// committer commits a run's rewritten groups in batches, each a snapshot
// staged once and rebased on every attempt (replace.go): REPLACE for
// compaction, DELETE or OVERWRITE for record expiration.
type committer struct {
	job     maintenance.JobType
	t       jobs.Target
	cat     catalog.Catalog
	fs      icebergio.WriteFileIO
	fsF     func(context.Context) (icebergio.IO, error)
	locs    table.LocationProvider
	start   *table.Snapshot
	deletes deleteIndex
	policy  commit.Policy
	// rewritesDeletes marks delete-file compaction's committer (see
	// replace.rewritesDeletes).
	rewritesDeletes bool

	batchGroups, busyGroups int
	batchBytes              int64

	// base is the table the next batch is staged on; done what the
	// batches so far did; busy is set once one lost a race.
	base *table.Table
	done committed
	busy bool

	commitTable  func(context.Context, table.Identifier, []table.Requirement, []table.Update) (table.Metadata, string, error)
	beforeCommit func(attempt int)
	afterCommit  func(error) error
}

// newCommitter is the committer of job's run on tbl as sc scanned it,
// with the default batch bounds: 100 groups, or 8 GiB of input, and 8
// groups once the table is busy.
func newCommitter(job maintenance.JobType, t jobs.Target, tbl *table.Table, cat catalog.Catalog, fs icebergio.WriteFileIO, sc scanned, policy commit.Policy) (*committer, error) {
	locs, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	return &committer{job: job, t: t, cat: cat, fs: fs, fsF: tbl.FS, locs: locs, start: sc.start, deletes: sc.deletes, policy: policy,
		batchGroups: 100, busyGroups: 8, batchBytes: 8 << 30, commitTable: cat.CommitTable, base: tbl}, nil
}

// committed is what the commit stage did.
type committed struct {
	groups         []table.CompactionGroupResult
	dropped        []string // "partition: why", one per dropped group
	deletesRemoved int
	// metadataRemoved counts the old metadata files deleted after commits
	// (write.metadata.delete-after-commit.enabled).
	metadataRemoved int
	commits         int
	stats           commit.Stats
	rebases         int
	// unknown is set when a commit's outcome could not be learned: its
	// outputs must stay, whether or not it landed.
	unknown bool
}

// addDropped notes the groups of batch that r dropped, with why.
func (c *committed) addDropped(batch []table.CompactionGroupResult, r *replace) {
	for i := range batch {
		if why, ok := r.dropped[i]; ok {
			c.dropped = append(c.dropped, fmt.Sprintf("%s: %s", batch[i].PartitionKey, why))
		}
	}
}

// run commits results in batches, on the table as the last commit left it
// (base at first). The first batch holds up to batchGroups groups (or
// batchBytes of input); once a batch has lost a race the table is busy,
// and later batches hold at most busyGroups, so that a batch that runs out
// of retry budget loses little and the groups already committed stay
// committed. A fanned-out run calls it as its groups come in; what it did
// adds up in done.
func (c *committer) run(ctx context.Context, results []table.CompactionGroupResult) error {
	for len(results) > 0 {
		n := batchLen(results, c.batchLimit(), c.batchBytes)
		after, st, err := c.commitBatch(ctx, c.base, results[:n], &c.done)
		c.done.stats.Add(st)
		if err != nil {
			return err
		}
		c.busy = c.busy || st.Conflicts > 0
		c.deletes.dangling = nil // removed with the first commit
		results = results[n:]
		if after != nil {
			c.base = after
		}
	}
	return nil
}

// removeUncommitted removes the files rec recorded that no committed group
// references — outputs of dropped or failed groups — unless a commit's
// outcome is unknown: then they stay for unreferenced file removal.
func (c *committer) removeUncommitted(rec *recordingFS) {
	if c.done.unknown {
		return
	}
	keep := map[string]bool{}
	for _, g := range c.done.groups {
		for _, df := range g.NewDataFiles {
			keep[df.FilePath()] = true
		}
	}
	rec.removeExcept(keep)
}

// batchLimit is the most groups the next batch may hold.
func (c *committer) batchLimit() int {
	if c.busy {
		return c.busyGroups
	}
	return c.batchGroups
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
func (c *committer) commitBatch(ctx context.Context, base *table.Table, batch []table.CompactionGroupResult, out *committed) (*table.Table, commit.Stats, error) {
	r := newReplace(c.fs, c.locs, c.start, batch, c.deletes, c.job, c.rewritesDeletes)
	ident := base.Identifier()
	var after *table.Table
	var landed *attempt
	// Stage on base: read its manifests and write ours. This is the slow
	// part, so it happens before the first attempt, which then only
	// rebases on the head as it is by then.
	staged, err := r.rebase(ctx, base.Metadata())
	if err != nil || staged == nil {
		out.addDropped(batch, r)
		r.cleanup(nil)
		return nil, commit.Stats{}, err
	}
	st, err := commit.Do(ctx, c.policy, func(ctx context.Context, n int) error {
		fresh, err := c.t.Bucket.LoadTable(ctx, c.t.Table)
		if err != nil {
			return err
		}
		if a, err := c.landed(r, fresh, out); a != nil || err != nil {
			// An earlier attempt landed though it was reported lost.
			after, landed = fresh, a
			return err
		}
		a, err := r.rebase(ctx, fresh.Metadata())
		if err != nil || a == nil {
			return err
		}
		if c.beforeCommit != nil {
			c.beforeCommit(n)
		}
		newMeta, loc, err := c.commitTable(ctx, ident, a.reqs, a.updates)
		if c.afterCommit != nil {
			err = c.afterCommit(err)
		}
		if err == nil {
			after, landed = table.New(ident, newMeta, loc, c.fsF, c.cat), a
			// A metadata file that stays is left to unreferenced file
			// removal.
			n, _ := commit.PruneMetadata(c.fs, fresh.Metadata(), newMeta)
			out.metadataRemoved += n
			return nil
		}
		if commit.IsConflict(err) {
			return err
		}
		// A timeout, a 5xx, a cut connection: look before deciding.
		fresh, lerr := c.t.Bucket.LoadTable(context.WithoutCancel(ctx), c.t.Table)
		if lerr == nil {
			if a, err := c.landed(r, fresh, out); a != nil || err != nil {
				after, landed = fresh, a
				return err
			}
		}
		// The SQL catalog commits in one database transaction, finished
		// when its call returns, so the reload is the answer. A catalog
		// across the network may still apply a request that was cut off,
		// after the reload: its files must stay.
		if _, sql := c.cat.(*sqlcat.Catalog); lerr != nil || !sql {
			out.unknown = true
			return fmt.Errorf("commit %s of %s (whether it landed is unknown, so its files are kept): %w", c.verb(), c.t.Table, err)
		}
		return fmt.Errorf("commit %s of %s: %w", c.verb(), c.t.Table, err)
	})
	out.rebases += r.rebases
	out.addDropped(batch, r)
	if landed == nil {
		after = nil
		if !out.unknown {
			r.cleanup(nil)
		}
		return nil, st, err
	}
	r.cleanup(landed)
	out.commits++
	out.groups = append(out.groups, landed.groups...)
	for _, g := range landed.groups {
		out.deletesRemoved += len(g.SafePosDeletes) + len(g.SafeDeletionVectors)
	}
	return after, st, nil
}

// landed returns the attempt whose snapshot fresh holds — one that landed
// though its answer was lost — or nil. A snapshot of the batch's ID whose
// manifest list is not one this run wrote is an error, and its files stay.
func (c *committer) landed(r *replace, fresh *table.Table, out *committed) (*attempt, error) {
	s := fresh.Metadata().SnapshotByID(r.id)
	if s == nil {
		return nil, nil
	}
	a := r.attempts[s.ManifestList]
	if a == nil {
		out.unknown = true
		return nil, fmt.Errorf("commit %s of %s: snapshot %d is in the table with a manifest list this run did not write (%s); its files are kept", c.verb(), c.t.Table, r.id, s.ManifestList)
	}
	return a, nil
}

// verb names what the committer commits, for its errors.
func (c *committer) verb() string {
	if c.job == maintenance.RecordExpiration {
		return "record expiration"
	}
	if c.rewritesDeletes {
		return "delete-file compaction"
	}
	return "compaction"
}
