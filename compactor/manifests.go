package compactor

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rebase"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// rewriteManifests merges the current snapshot's small data manifests into
// manifests near commit.manifest.target-size-bytes, once there are at
// least s.MinManifests of them (rebase's ManifestRewrite): a streaming
// writer leaves a manifest per commit, and every planning pass reads them
// all. A rewrite left for the next run does not fail the run. It reads
// tbl as the run loaded it, and returns the table its commit left (nil
// when it did not commit).
func (j *Job) rewriteManifests(ctx context.Context, t jobs.Target, tbl *table.Table, s Settings, opts jobs.Options, fig *manifestFigures) (*table.Table, error) {
	if s.MinManifests <= 0 {
		return nil, nil
	}
	fig.ManifestsMinimum = s.MinManifests
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	policy, err := j.policy(tbl)
	if err != nil {
		return nil, fmt.Errorf("manifest rewrite of %s: %w", t.Table, err)
	}
	wfs, cat, err := rebase.OpenWriting(ctx, t.Bucket, tbl)
	if err != nil {
		return nil, err
	}
	env := rebase.Env{Bucket: t.Bucket, Table: t.Table, Catalog: cat, FS: wfs, Policy: policy, BeforeCommit: j.beforeManifestCommit, Logger: j.Logger}
	op := rebase.ManifestRewrite{Caller: rebase.Caller{Job: string(maintenance.Compaction), Name: "manifest rewrite"},
		TargetBytes:  int64(tbl.Properties().GetInt(table.ManifestTargetSizeBytesKey, table.ManifestTargetSizeBytesDefault)),
		MinManifests: s.MinManifests}
	out, err := env.RewriteManifests(ctx, tbl, op, opts.DryRun)
	fig.ManifestsSmall = out.Small
	fig.ManifestConflicts, fig.ManifestRebases, fig.ManifestsDeferred = out.Conflicts, out.Rebases, out.Deferred
	fig.ManifestsRewritten, fig.ManifestsWritten, fig.ManifestBytes = out.Rewritten, out.Written, out.Bytes
	fig.metadataRemoved = out.MetadataRemoved
	j.log().Debug("manifests checked", "table", t.Table.String(), "small", out.Small, "minimum", s.MinManifests,
		"rewritten", out.Rewritten, "written", out.Written, "deferred", out.Deferred, "error", err)
	return out.After, err
}
