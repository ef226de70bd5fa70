package compactor

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/commit"
	"github.com/icekeeper/icekeeper/jobs"
)

// rewriteManifests merges the current snapshot's small data manifests into
// manifests near commit.manifest.target-size-bytes, each holding one
// partition's files (iceberg-go's RewriteManifests, clustered by partition),
// once there are at least s.MinManifests of them: a streaming writer leaves
// a manifest per commit, and every planning pass reads them all. "Small" is
// under half the target. It rewrites metadata only, in a REPLACE snapshot.
//
// Unlike the data files' commit it is not staged and rebased: each attempt
// reads the manifests again, and beside a writer committing faster than
// that it loses. So it is best effort: a few attempts under the table's
// commit.retry.* waits, and a rewrite that loses them all is left for the
// next run (counted in the figures), not a failed run.
func (j *Job) rewriteManifests(ctx context.Context, t jobs.Target, s Settings, opts jobs.Options, fig *manifestFigures) error {
	if s.MinManifests <= 0 {
		return nil
	}
	fig.ManifestsMinimum = s.MinManifests
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return err
	}
	policy, err := j.policy(tbl)
	if err != nil {
		return fmt.Errorf("manifest rewrite of %s: %w", t.Table, err)
	}
	policy.Retries = min(policy.Retries, manifestRetries)
	first := true
	st, err := commit.Do(ctx, policy, func(ctx context.Context, n int) error {
		if n > 1 {
			if tbl, err = t.Bucket.LoadTable(ctx, t.Table); err != nil {
				return err
			}
		}
		small, err := smallManifests(ctx, tbl)
		if err != nil {
			return err
		}
		if first {
			fig.ManifestsSmall, first = len(small), false
		}
		if len(small) < s.MinManifests || opts.DryRun {
			return nil
		}
		isSmall := func(m iceberg.ManifestFile) bool { return small[m.FilePath()] }
		tx := tbl.NewTransaction()
		res, err := tx.RewriteManifests(ctx, table.WithRewriteManifestPredicate(isSmall), table.WithRewriteManifestClusterBy(func(df iceberg.DataFile) any { return partitionKey(df) }))
		if err != nil {
			return fmt.Errorf("rewrite manifests of %s: %w", t.Table, err)
		}
		if res.IsNoOp() {
			return nil
		}
		if _, err := tx.Commit(ctx); err != nil {
			if commit.IsConflict(err) {
				return err
			}
			return fmt.Errorf("commit manifest rewrite of %s: %w", t.Table, err)
		}
		fig.ManifestsRewritten, fig.ManifestsWritten = len(res.RewrittenManifests), len(res.AddedManifests)
		return nil
	})
	fig.ManifestConflicts = st.Conflicts
	if errors.Is(err, commit.ErrStaleMetadata) {
		return nil
	}
	return err
}

// manifestRetries bounds the manifest rewrite's attempts after the first.
const manifestRetries = 3

// smallManifests are the paths of the current snapshot's data manifests
// under half the table's manifest target size.
func smallManifests(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of %s: %w", tbl.Identifier(), err)
	}
	target := int64(tbl.Properties().GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault))
	small := map[string]bool{}
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentData && m.Length() < target/2 {
			small[m.FilePath()] = true
		}
	}
	return small, nil
}
