package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/internal/maintenance"
	"github.com/icekeeper/icekeeper/internal/progress"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/orphan"
)

// errJobFailed makes Main exit 1 after the outcome was printed.
var errJobFailed = errors.New("a job failed")

// texter is implemented by job figures that have a readable form.
type texter interface{ Text() string }

func cmdRun(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "run", "--table BUCKET/NAMESPACE/TABLE [--job TYPE|all] [--dry-run] [--json] [--now RFC3339]",
		"Runs maintenance on one table now and records the runs in the state store\n(so the API shows them). Job types run in the order compaction,\nsnapshot management, unreferenced file removal.")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE, BUCKET a name or ARN, nested namespaces with dots")
	job := fs.String("job", "all", "icebergCompaction, icebergSnapshotManagement, icebergUnreferencedFileRemoval or all")
	dryRun := fs.Bool("dry-run", false, "show what would be done; change nothing and record nothing")
	asJSON := fs.Bool("json", false, "print one JSON object keyed by job type")
	nowFlag := fs.String("now", "", "the run's clock (RFC 3339), for what-if previews")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	types := maintenance.JobTypes
	if *job != "all" {
		t, err := maintenance.ParseJobType(*job)
		if err != nil {
			return usageError{fmt.Errorf("--job: %w", err)}
		}
		types = []maintenance.JobType{t}
	}
	var now time.Time
	if *nowFlag != "" {
		var err error
		if now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
			return usagef("--now: %q is not an RFC 3339 time (e.g. 2026-01-02T03:04:05Z)", *nowFlag)
		}
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	runner := &jobs.Runner{Store: w.store, Jobs: availableJobs(w), Logger: slog.New(slog.DiscardHandler)}

	results := map[maintenance.JobType]any{}
	failed := false
	for _, t := range types {
		update, finish := progress.Bar(env.stderr, string(t))
		out, err := runner.Run(ctx, target, t, "cli", jobs.Options{DryRun: *dryRun, Now: now, Progress: update})
		finish()
		if err != nil {
			return err
		}
		if out.Status == state.Failed {
			failed = true
		}
		results[t] = struct {
			Status         state.RunStatus `json:"status"`
			FailureMessage string          `json:"failureMessage,omitempty"`
			DryRun         bool            `json:"dryRun,omitempty"`
			Figures        any             `json:"figures,omitempty"`
		}{out.Status, out.FailureMessage, *dryRun, out.Figures}
		if !*asJSON {
			printOutcome(env, t, out, *dryRun)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	}
	if failed {
		return errJobFailed
	}
	return nil
}

func printOutcome(env *cliEnv, t maintenance.JobType, out jobs.Outcome, dryRun bool) {
	prefix := ""
	if dryRun {
		prefix = " (dry run)"
	}
	line := fmt.Sprintf("%s%s: %s", t, prefix, out.Status)
	if out.FailureMessage != "" {
		line += " — " + out.FailureMessage
	}
	writeln(env.stdout, "%s", line)
	if tx, ok := out.Figures.(texter); ok {
		writeln(env.stdout, "%s", tx.Text())
	}
}

// availableJobs lists the job types this build implements.
func availableJobs(w *world) map[maintenance.JobType]jobs.Job {
	removal := &orphan.Job{Store: w.store}
	return map[maintenance.JobType]jobs.Job{
		maintenance.Compaction:              &compactor.Job{},
		maintenance.SnapshotManagement:      &expire.Job{DeleteFiles: removal.DeleteUnreferenced},
		maintenance.UnreferencedFileRemoval: removal,
	}
}
