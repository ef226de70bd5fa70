package rebase

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/commit"
)

// Env is where a rewrite's snapshots commit, and how.
type Env struct {
	// Bucket and Table name the table: every attempt after the first
	// refreshes it from the bucket's catalog.
	Bucket  *bucket.Bucket
	Table   bucket.TableID
	Catalog catalog.Catalog
	// FS is the table's file system, writable: staged files are written
	// and removed through it.
	FS     icebergio.WriteFileIO
	Policy commit.Policy
	// Logger receives each commit attempt at debug level (nil: none).
	Logger *slog.Logger

	// BeforeCommit, when set (tests only), runs before each commit
	// attempt; AfterCommit may replace a commit's result, and CommitTable
	// the catalog's commit (fault injection).
	BeforeCommit func(attempt int)
	AfterCommit  func(error) error
	CommitTable  func(context.Context, table.Identifier, []table.Requirement, []table.Update) (table.Metadata, string, error)
}

// attempt is one commit of a staged snapshot, built on a head.
type attempt struct {
	reqs    []table.Requirement
	updates []table.Update
	groups  []table.CompactionGroupResult // the groups it commits, if any
	own     []string                      // the files of ours it references
}

// stagedSnapshot is a snapshot as the commit loop drives it: staged once,
// rebased on the head at every attempt, under one snapshot ID, so that an
// attempt whose answer was lost is recognised in the table.
type stagedSnapshot interface {
	snapshotID() int64
	// rebase builds the attempt on meta's current head, or returns nil
	// when nothing is left to commit.
	rebase(ctx context.Context, meta table.Metadata) (*attempt, error)
	// attemptOf is the attempt whose manifest list is at path, or nil.
	attemptOf(path string) *attempt
	// cleanup removes the files written that keep does not reference (all
	// of them when keep is nil).
	cleanup(keep *attempt)
}

// landing is what the commit loop did with one snapshot.
type landing struct {
	attempt *attempt     // the attempt that landed, nil when none did
	after   *table.Table // the table after it, when it landed
	stats   commit.Stats
	// unknown is set when a commit's outcome could not be learned: the
	// snapshot's files must stay, whether or not it landed.
	unknown bool
	// metadataRemoved counts the old metadata files deleted after the
	// commit (write.metadata.delete-after-commit.enabled).
	metadataRemoved int
}

// commit is the commit loop: it attempts s on the table's head until it
// lands, nothing is left of it, or the policy gives up. Each attempt
// refreshes the table (bucket.Refresh: on a SQL catalog a table nobody
// committed to since is not read again) — except the first when trusted
// is set: base is a table s was just staged on — checks whether an
// earlier attempt landed though its answer was lost, and rebases s on the
// head. A commit error that is not a
// conflict is looked into: the table is reloaded, and unless the catalog
// answers finally (the SQL catalog's transaction) and the snapshot is not
// there, the outcome is unknown. The files of attempts that did not land
// are removed, unless the outcome is unknown.
func (e *Env) commit(ctx context.Context, p Producer, s stagedSnapshot, base *table.Table, trusted bool) (landing, error) {
	var out landing
	commitTable := e.CommitTable
	if commitTable == nil {
		commitTable = e.Catalog.CommitTable
	}
	var err error
	out.stats, err = commit.Do(ctx, e.Policy, func(ctx context.Context, n int) error {
		fresh := base
		if n > 1 || !trusted {
			var err error
			if fresh, err = e.Bucket.Refresh(ctx, e.Table, base); err != nil {
				return err
			}
			base = fresh
		}
		if a, err := e.landed(p, s, fresh, &out); a != nil || err != nil {
			// An earlier attempt landed though it was reported lost.
			out.after, out.attempt = fresh, a
			return err
		}
		a, err := s.rebase(ctx, fresh.Metadata())
		if err != nil || a == nil {
			return err
		}
		if e.BeforeCommit != nil {
			e.BeforeCommit(n)
		}
		ident := fresh.Identifier()
		start := time.Now()
		newMeta, loc, err := commitTable(ctx, ident, a.reqs, a.updates)
		if e.AfterCommit != nil {
			err = e.AfterCommit(err)
		}
		e.log().Debug("commit attempted", "table", e.Table.String(), "operation", p.Verb(), "attempt", n, "snapshot", s.snapshotID(),
			"conflict", commit.IsConflict(err), "error", err, "duration", time.Since(start))
		if err == nil {
			out.after, out.attempt = table.New(ident, newMeta, loc, fresh.FS, e.Catalog), a
			// A metadata file that stays is left to unreferenced file
			// removal.
			n, _ := commit.PruneMetadata(e.FS, fresh.Metadata(), newMeta, func() (map[string]string, error) {
				return e.Bucket.CurrentMetadata(ctx)
			})
			out.metadataRemoved += n
			return nil
		}
		if commit.IsConflict(err) {
			return err
		}
		// A timeout, a 5xx, a cut connection: look before deciding.
		fresh, lerr := e.Bucket.LoadTable(context.WithoutCancel(ctx), e.Table)
		if lerr == nil {
			if a, err := e.landed(p, s, fresh, &out); a != nil || err != nil {
				out.after, out.attempt = fresh, a
				return err
			}
		}
		// The SQL catalog commits in one database transaction, finished
		// when its call returns, so the reload is the answer. A catalog
		// across the network may still apply a request that was cut off,
		// after the reload: its files must stay.
		if _, sql := e.Catalog.(*sqlcat.Catalog); lerr != nil || !sql {
			out.unknown = true
			return fmt.Errorf("commit %s of %s (whether it landed is unknown, so its files are kept): %w", p.Verb(), e.Table, err)
		}
		return fmt.Errorf("commit %s of %s: %w", p.Verb(), e.Table, err)
	})
	switch {
	case out.attempt != nil:
		s.cleanup(out.attempt)
		err = nil
	case !out.unknown:
		out.after = nil
		s.cleanup(nil)
	default:
		out.after = nil
	}
	return out, err
}

func (e *Env) log() *slog.Logger {
	if e.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Logger
}

// landed returns the attempt of s whose snapshot fresh holds — one that
// landed though its answer was lost — or nil. A snapshot of s's ID whose
// manifest list is not one s wrote is an error, and its files stay.
func (e *Env) landed(p Producer, s stagedSnapshot, fresh *table.Table, out *landing) (*attempt, error) {
	snap := fresh.Metadata().SnapshotByID(s.snapshotID())
	if snap == nil {
		return nil, nil
	}
	a := s.attemptOf(snap.ManifestList)
	if a == nil {
		out.unknown = true
		return nil, fmt.Errorf("commit %s of %s: snapshot %d is in the table with a manifest list this run did not write (%s); its files are kept", p.Verb(), e.Table, s.snapshotID(), snap.ManifestList)
	}
	return a, nil
}
