package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/compactor"
	"github.com/icekeeper/icekeeper/erasure"
	"github.com/icekeeper/icekeeper/expire"
	"github.com/icekeeper/icekeeper/expire/records"
	"github.com/icekeeper/icekeeper/internal/progress"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
	"github.com/icekeeper/icekeeper/statistics"
	"github.com/icekeeper/icekeeper/tables"
)

// errJobFailed makes Main exit 1 after the outcome was printed.
var errJobFailed = errors.New("a job failed")

func cmdRun(ctx context.Context, env *cliEnv, args []string) error {
	c := commonFlags{maintains: true}
	fs := newFlagSet(env, "run", "--table BUCKET/NAMESPACE/TABLE [--job TYPE|all] [--dry-run] [--verbose | --json] [--now RFC3339 --dry-run]",
		"Runs maintenance on one table now and records the runs in the state store\n(so the API shows them). Job types run in the order record expiration,\ncompaction, snapshot management, unreferenced file removal, erasure,\nstatistics. A dry run changes nothing and records nothing; with --now it\npreviews a later day.\nEach job prints its counts and the first few items of each list; --verbose\nor --json prints every item.")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE, BUCKET a name or ARN, nested namespaces with dots; or a table ARN, BUCKET_ARN/table/NAMESPACE/TABLE or BUCKET_ARN/table/ID (S3 Tables' table ID, or a table name)")
	job := fs.String("job", "all", jobFlagHelp())
	droppedFrom := fs.String("dropped", "", "BUCKET: instead of a table, remove the leftovers of the tables dropped from the bucket (needs its removeDroppedTables, except with --dry-run)")
	dryRun := fs.Bool("dry-run", false, "show what would be done; change nothing and record nothing")
	asJSON := fs.Bool("json", false, "print one JSON object keyed by job type")
	verbose := fs.Bool("verbose", false, "print every item of each job's lists (snapshots, groups, paths), not the first few")
	nowFlag := fs.String("now", "", "the run's clock (RFC 3339), to preview a later day with --dry-run")
	rewriteBytes := fs.Int64("rewrite-bytes", 0, "cap compaction's input bytes as a rewrite budget would: the groups of its plan that fit are rewritten, the rest deferred (0 rewrites nothing); unset: no cap")
	clockShift := fs.Bool("allow-clock-shift", false, "let --now change data without --dry-run: for rehearsals and tests only, as it marks and deletes by a clock that is not the real one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	types, err := parseJob(*job)
	if err != nil {
		return err
	}
	// A zero Options.Now means the real clock, so a given --now must never
	// be zero: whether the flag was given is asked of the flag set, not
	// read from its value, and times before 1970 (the zero time among
	// them) are refused rather than silently run on today's clock.
	var now time.Time
	nowGiven := false
	fs.Visit(func(f *flag.Flag) { nowGiven = nowGiven || f.Name == "now" })
	if nowGiven {
		if now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
			return usagef("--now: %q is not an RFC 3339 time (e.g. 2026-01-02T03:04:05Z)", *nowFlag)
		}
		// No table has a snapshot, file or record before the Unix epoch.
		if epoch := time.Unix(0, 0); now.Before(epoch) {
			return usagef("--now: %s is before %s; give a time from then on", *nowFlag, epoch.UTC().Format(time.RFC3339))
		}
		if !*dryRun && !*clockShift {
			return usagef("--now previews a later day and needs --dry-run: without it the run would mark and delete by that clock (--allow-clock-shift, for rehearsals and tests, allows it)")
		}
	}
	// Like --now, whether --rewrite-bytes was given is asked of the flag
	// set: 0 is a cap.
	var rewriteCap *int64
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "rewrite-bytes" {
			rewriteCap = rewriteBytes
		}
	})
	if rewriteCap != nil && *rewriteCap < 0 {
		return usagef("--rewrite-bytes: %d is below 0", *rewriteCap)
	}
	if *droppedFrom != "" {
		if *ref != "" {
			return usagef("give --table or --dropped, not both")
		}
		return runDropped(ctx, env, c, *droppedFrom, jobs.Options{DryRun: *dryRun, Now: now}, *asJSON, *verbose)
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	known := &tables.Registry{Store: w.store, Logger: w.logger}
	registered, dropped, err := availableJobs(w, known)
	if err != nil {
		return err
	}
	coexist, closeLocks, err := coexistOf(ctx, w.cfg, w.store, time.Minute, w.logger)
	if err != nil {
		return err
	}
	defer closeLocks()
	runner := &jobs.Runner{Store: w.store, Resolver: w.resolver, Jobs: registered, Dropped: dropped, Logger: w.logger, Prices: &w.cfg.Prices, Coexist: coexist,
		Tables: known}

	// A one-shot run spends the same rewrite budgets as the daemon's
	// runs: its cap is what the ledger leaves the table's bucket (unless
	// --rewrite-bytes sets one), and what it rewrote is charged.
	budgets := budgetsOf(w.cfg, w.store)
	results := map[maintenance.JobType]any{}
	failed := false
	p := &outcomePrinter{w: env.stdout, dryRun: *dryRun, verbose: *verbose, endpoint: target.Bucket.Properties()["s3.endpoint"]}
	for _, t := range types {
		capBytes := rewriteCap
		if capBytes == nil {
			if capBytes, err = budgets.Allowance(ctx, target.Bucket.ARN(), time.Now()); err != nil {
				return fmt.Errorf("%s on %s: %w", t, *ref, err)
			}
		}
		update, finish := progress.Bar(env.stderr, string(t))
		out, err := runner.Run(ctx, target, t, jobs.TriggerCLI, jobs.Options{DryRun: *dryRun, Now: now, Progress: update, RewriteBytes: capBytes, Loaded: w.loaded})
		// The next type starts from the table as this run left it.
		w.loaded = nil
		finish()
		if err != nil {
			return err
		}
		if !*dryRun {
			if err := budgets.Record(ctx, target.Bucket.ARN(), time.Now(), out); err != nil {
				w.logger.Error("bytes rewritten could not be recorded in the rewrite ledger", "job", t, "err", err)
			}
		}
		if out.Status == state.Failed {
			failed = true
		}
		results[t] = struct {
			Status         state.RunStatus `json:"status"`
			FailureMessage string          `json:"failureMessage,omitempty"`
			DryRun         bool            `json:"dryRun,omitempty"`
			Figures        jobs.Figures    `json:"figures,omitempty"`
		}{runStatus(out.Status, *dryRun), out.FailureMessage, *dryRun, out.Figures}
		if !*asJSON {
			p.print(t, out)
		}
	}
	if *asJSON {
		if err := writeJSON(env.stdout, results); err != nil {
			return err
		}
	}
	if failed {
		return errJobFailed
	}
	return nil
}

// runDropped removes the leftovers of every table dropped from the
// bucket ref (and not collected yet) and prints each outcome.
func runDropped(ctx context.Context, env *cliEnv, c commonFlags, ref string, opts jobs.Options, asJSON, verbose bool) error {
	w, b, recs, err := c.openDropped(ctx, ref)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := jobs.CheckWritable(b); err != nil {
		return err
	}
	_, dropped, err := availableJobs(w, &tables.Registry{Store: w.store, Logger: w.logger})
	if err != nil {
		return err
	}
	runner := &jobs.Runner{Store: w.store, Resolver: w.resolver, Dropped: dropped, Logger: w.logger, Prices: &w.cfg.Prices}
	type result struct {
		Table          string          `json:"table"`
		TableUUID      string          `json:"tableUUID"`
		DroppedAt      time.Time       `json:"droppedAt"`
		Status         state.RunStatus `json:"status"`
		FailureMessage string          `json:"failureMessage,omitempty"`
		Figures        jobs.Figures    `json:"figures,omitempty"`
	}
	results := []result{}
	failed := false
	p := &outcomePrinter{w: env.stdout, dryRun: opts.DryRun, verbose: verbose, endpoint: b.Properties()["s3.endpoint"]}
	for _, rec := range recs {
		if !rec.Collected.IsZero() {
			continue
		}
		out, err := runner.RunDropped(ctx, b, rec, jobs.TriggerCLI, opts)
		if err != nil {
			return err
		}
		failed = failed || out.Status == state.Failed
		name := rec.Key.Namespace + "." + rec.Key.Name
		results = append(results, result{name, rec.UUID, rec.Dropped, runStatus(out.Status, opts.DryRun), out.FailureMessage, out.Figures})
		if !asJSON {
			writeln(env.stdout, "%s/%s, dropped %s (table %s):", b.Name(), name, rec.Dropped.Format(time.RFC3339), rec.UUID)
			p.print(maintenance.UnreferencedFileRemoval, out)
		}
	}
	switch {
	case asJSON:
		if err := writeJSON(env.stdout, results); err != nil {
			return err
		}
	case len(results) == 0:
		writeln(env.stdout, "no table dropped from %s has files left to look at", b.Name())
	}
	if failed {
		return errJobFailed
	}
	return nil
}

// writeJSON prints v as indented JSON with the credentials in its string
// values masked. It redacts the values, not the JSON text, whose escapes
// (\", \\, \u00e9) a URI pattern would cut through.
func writeJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the outcome: %w", err)
	}
	if data, err = redact.JSON(data); err != nil {
		return fmt.Errorf("redact the outcome: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, data, "", "  "); err != nil {
		return fmt.Errorf("indent the outcome: %w", err)
	}
	writeln(w, "%s", out.String())
	return nil
}

// dryRunStatus is the status a successful dry run reports: it ran nothing
// that could succeed.
const dryRunStatus state.RunStatus = "DryRun"

func runStatus(s state.RunStatus, dryRun bool) state.RunStatus {
	if dryRun && s == state.Successful {
		return dryRunStatus
	}
	return s
}

// outcomePrinter prints each job's outcome as it ends, a failure in one
// line: when the table cannot be loaded every job fails for that one
// cause, and a run printed it in full once per job, each followed by
// figures of zeros.
type outcomePrinter struct {
	w               io.Writer
	dryRun, verbose bool
	// endpoint is the bucket's S3 endpoint ("": the SDK's default).
	endpoint string
	// causes are the failure messages printed so far, by the job that
	// printed each.
	causes []printedCause
}

type printedCause struct {
	job     maintenance.JobType
	message string
}

// lister is the figures that can print every item of their lists.
type lister interface{ TextItems(limit int) string }

// emptier is the figures that can tell they hold nothing but zeros.
type emptier interface{ Empty() bool }

func (p *outcomePrinter) print(t maintenance.JobType, out jobs.Outcome) {
	line := fmt.Sprintf("%s: %s", t, runStatus(out.Status, p.dryRun))
	if p.dryRun {
		line += " (nothing was changed or recorded)"
	}
	if msg := out.FailureMessage; msg != "" {
		line += p.failure(t, msg)
	}
	// A failure message is printed nowhere else in full: folded, never
	// shortened.
	writeln(p.w, "%s", fit(line, false))
	if out.Figures == nil {
		return
	}
	if e, ok := out.Figures.(emptier); ok && (out.Status == state.Failed || out.Status == state.Skipped) && e.Empty() {
		return
	}
	text := out.Figures.Text()
	if l, ok := out.Figures.(lister); ok && p.verbose {
		text = l.TextItems(textlist.All)
	}
	// The figures' items are whole with --verbose and --json.
	writeln(p.w, "%s", fit(redact.Text(text), !p.verbose))
	if c := jobs.RunCost(out.Figures); c != nil && (c.Requests > 0 || c.S3TablesUSD > 0) {
		writeln(p.w, "%s", fit(c.Text(), false))
	}
}

// failure is what follows job t's status for its failure message msg: the
// message, or, when an earlier job printed the same cause, a pointer to
// it (with what t said before the cause, if anything).
func (p *outcomePrinter) failure(t maintenance.JobType, msg string) string {
	for _, c := range p.causes {
		if msg == c.message {
			return fmt.Sprintf(" (same cause as %s)", c.job)
		}
		if before, ok := strings.CutSuffix(msg, ": "+c.message); ok {
			return fmt.Sprintf(" — %s: (same cause as %s)", before, c.job)
		}
	}
	p.causes = append(p.causes, printedCause{job: t, message: msg})
	return " — " + msg + storageNote(p.endpoint, msg)
}

// objectURI finds an object storage URI in a message.
var objectURI = regexp.MustCompile(`\b(s3|s3a|s3n|oss)://`)

// storageNote names the S3 endpoint behind a missing object. iceberg-go
// turns an object store's 404 into "file does not exist" and drops the
// answer, so an endpoint that is not the storage meant (a wrong port or
// path prefix answers 404 to everything) read like a deleted file.
func storageNote(endpoint, msg string) string {
	if endpoint == "" || !strings.Contains(msg, fs.ErrNotExist.Error()) || !objectURI.MatchString(msg) {
		return ""
	}
	return fmt.Sprintf(" (object storage answered not found at S3 endpoint %s)", redact.URI(endpoint))
}

// availableJobs registers the executor of each job type, one line each;
// registration fails unless they cover maintenance's type table exactly.
// The second result removes dropped tables' leftovers (Runner.Dropped).
// known is the registry of tables removal keeps its view in.
func availableJobs(w *world, known *tables.Registry) (map[maintenance.JobType]jobs.Job, jobs.DroppedRemoval, error) {
	removal := &orphan.Job{Store: w.store, Logger: w.logger, Tables: known}
	registered, err := jobs.Register(
		(&records.Job{Logger: w.logger}).Definition(),
		(&compactor.Job{KeyIndex: w.store, Logger: w.logger}).Definition(),
		(&expire.Job{DeleteFiles: removal.DeleteUnreferenced, Logger: w.logger}).Definition(),
		removal.Definition(),
		(&erasure.Job{DeleteFiles: removal.DeleteUnreferenced, Unreferenced: removal.Unreferenced, Holders: removal.Holders,
			Blocks: w.store, Logger: w.logger}).Definition(),
		(&statistics.Job{Logger: w.logger}).Definition(),
	)
	return registered, removal.Dropped(), err
}
