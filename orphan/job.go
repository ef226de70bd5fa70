// Package orphan is icebergUnreferencedFileRemoval: objects under a table's
// location that nothing in its metadata references, and that are older than
// unreferencedDays, are marked noncurrent in the state store; marks older
// than nonCurrentDays are deleted after a re-check against freshly loaded
// metadata. Deletion is two-phase, like Thanos' deletion marks, and a
// mark can be cleared (restored) during its window.
//
// Safety, in the order the code enforces it: gc.enabled=false refuses the
// table; any unreadable part of the metadata fails the run before anything
// is marked; a reference that names a listed path through another scheme or
// authority fails the run; only objects under the table's own prefixes are
// listed or deleted; deletions are capped per run.
package orphan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// DefaultMaxDeletesPerRun is the deletion cap when the bucket sets none.
const DefaultMaxDeletesPerRun = 100000

// listedPaths bounds the paths kept in a run's figures; counts stay exact.
const listedPaths = 200

// Job is icebergUnreferencedFileRemoval.
type Job struct {
	Store state.Marks
	// Parallelism bounds concurrent manifest reads (default 8).
	Parallelism int
	// storage overrides the storage for tests (fault injection).
	storage func(ctx context.Context, prefix loc) (Storage, error)
}

// Type implements jobs.Job.
func (j *Job) Type() maintenance.JobType { return maintenance.UnreferencedFileRemoval }

// Figures is what a run reports and records.
type Figures struct {
	Now        time.Time `json:"now"`
	DryRun     bool      `json:"dryRun,omitempty"`
	Prefixes   []string  `json:"prefixes"`
	References refStats  `json:"references"`
	Plan

	Marked        int      `json:"marked"`
	Unmarked      int      `json:"unmarked"`
	Deleted       int      `json:"deleted"`
	DeletedBytes  int64    `json:"deletedBytes"`
	DeleteFailed  int      `json:"deleteFailed"`
	CappedDeletes int      `json:"cappedDeletes"` // due but left for the next run by the cap
	RecheckKept   int      `json:"recheckKept"`   // due, but referenced by fresh metadata or restored meanwhile
	MarkedPaths   []string `json:"markedPaths,omitempty"`
	UnmarkedPaths []string `json:"unmarkedPaths,omitempty"`
	DeletedPaths  []string `json:"deletedPaths,omitempty"`
	Errors        []string `json:"errors,omitempty"`
	DurationMs    int64    `json:"durationMs"`
}

// Text is the readable form `icekeeper run` prints; a dry run's figures
// say what a run would do.
func (f *Figures) Text() string {
	would := func(verb, done string) string {
		if f.DryRun {
			return "would " + verb
		}
		return done
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  listed %d objects (%d bytes) under %s\n", f.Listed, f.ListedBytes, strings.Join(f.Prefixes, ", "))
	fmt.Fprintf(&b, "  metadata references %d paths there: %d listed, %d not in storage (version hint, removed metadata files)\n",
		f.References.Paths, f.Referenced, f.References.Paths-f.Referenced)
	fmt.Fprintf(&b, "  unreferenced: %d (%d too young to mark, %d already noncurrent, %d protected by restore)\n",
		f.Unreferenced, f.TooYoung, f.StillPending, f.Protected)
	fmt.Fprintf(&b, "  %s noncurrent: %d, %s (referenced again): %d, %s: %d (%d bytes)",
		would("mark", "marked"), f.Marked, would("unmark", "unmarked"), f.Unmarked, would("delete", "deleted"), f.Deleted, f.DeletedBytes)
	if f.CappedDeletes > 0 {
		fmt.Fprintf(&b, ", %d left by the per-run cap", f.CappedDeletes)
	}
	for _, p := range f.MarkedPaths {
		fmt.Fprintf(&b, "\n  mark   %s", p)
	}
	for _, p := range f.UnmarkedPaths {
		fmt.Fprintf(&b, "\n  unmark %s", p)
	}
	for _, p := range f.DeletedPaths {
		fmt.Fprintf(&b, "\n  delete %s", p)
	}
	for _, e := range f.Errors {
		fmt.Fprintf(&b, "\n  error  %s", e)
	}
	return b.String()
}

// Counters implements jobs.Counter.
func (f *Figures) Counters() map[string]float64 {
	return map[string]float64{"objects_marked": float64(f.Marked), "objects_unmarked": float64(f.Unmarked),
		"objects_deleted": float64(f.Deleted), "bytes_deleted": float64(f.DeletedBytes)}
}

// Run implements jobs.Job.
func (j *Job) Run(ctx context.Context, t jobs.Target, all maintenance.Settings, opts jobs.Options) (jobs.Outcome, error) {
	start := time.Now()
	rules := RulesOf(all)
	fig := &Figures{Now: opts.Now.UTC(), DryRun: opts.DryRun}
	out := jobs.Outcome{Figures: fig}
	key := t.Key()
	eq := rules.Equivalence

	_, pfx, refs, err := j.references(ctx, t, eq, &fig.References)
	if err != nil {
		return out, err
	}
	for _, p := range pfx {
		fig.Prefixes = append(fig.Prefixes, p.String())
	}
	marks, err := j.Store.Marks(ctx, key)
	if err != nil {
		return out, err
	}
	pl := newPlanner(rules, opts.Now, refs, marks)
	for _, p := range pfx {
		st, err := j.storageFor(ctx, t.Bucket, p)
		if err != nil {
			return out, err
		}
		if err := st.List(ctx, p, func(o Object) error {
			if !under(o.Loc, pfx) { // a listing must never stray outside
				return fmt.Errorf("storage listed %s outside the table's prefixes", o.Loc)
			}
			pl.observe(o)
			return nil
		}); err != nil {
			return out, err
		}
	}
	plan := pl.finish()
	fig.Plan = plan
	fig.MarkedPaths = firstPaths(plan.Mark)
	fig.UnmarkedPaths = first(plan.Unmark)
	fig.DeletedPaths = firstPaths(plan.Delete)
	fig.Marked, fig.Unmarked = len(plan.Mark), len(plan.Unmark)
	if opts.DryRun {
		fig.Deleted = len(plan.Delete)
		fig.DurationMs = time.Since(start).Milliseconds()
		return out, nil
	}

	for i := range plan.Mark {
		plan.Mark[i].Table, plan.Mark[i].RunID = key, opts.RunID
	}
	if err := j.Store.PutMarks(ctx, plan.Mark); err != nil {
		return out, err
	}
	if _, err := j.Store.DeleteMarks(ctx, key, slices.Concat(plan.Unmark, plan.Vanished)); err != nil {
		return out, err
	}
	fig.Deleted = 0
	if len(plan.Delete) > 0 {
		if err := j.deleteDue(ctx, t, rules, plan.Delete, fig); err != nil {
			return out, err
		}
	}
	fig.DurationMs = time.Since(start).Milliseconds()
	if fig.DeleteFailed > 0 {
		return out, fmt.Errorf("%d of %d deletions failed, first: %s", fig.DeleteFailed, fig.DeleteFailed+fig.Deleted, fig.Errors[0])
	}
	return out, nil
}

// references loads the table and collects its reference set.
func (j *Job) references(ctx context.Context, t jobs.Target, eq Equivalence, st *refStats) (*table.Table, []loc, *refSet, error) {
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := maintenance.CheckGC(tbl.Properties()); err != nil {
		return nil, nil, nil, err
	}
	pfx, err := prefixes(tbl.Metadata())
	if err != nil {
		return nil, nil, nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	refs, stats, err := collectRefs(ctx, tbl, fs, pfx, eq, j.Parallelism)
	*st = stats
	if err != nil {
		return nil, nil, nil, err
	}
	return tbl, pfx, refs, nil
}

// deleteDue deletes marks that are due, after re-checking each against
// metadata loaded afresh now: a writer may have committed a reference
// since the listing (a rollback, a re-registered file).
func (j *Job) deleteDue(ctx context.Context, t jobs.Target, rules Rules, due []state.Mark, fig *Figures) error {
	var st refStats
	_, pfx, refs, err := j.references(ctx, t, rules.Equivalence, &st)
	if err != nil {
		return fmt.Errorf("re-check before deleting: %w", err)
	}
	// An operator may have restored some of them since the listing.
	current, err := j.Store.Marks(ctx, t.Key())
	if err != nil {
		return fmt.Errorf("re-check before deleting: %w", err)
	}
	stillDue := map[string]bool{}
	for _, m := range current {
		stillDue[m.Path] = !m.Protected()
	}
	maxDeletes := rules.MaxDeletes
	var del []loc
	var sizes = map[string]int64{}
	var referenced []string
	for _, m := range due {
		l, err := parseLoc(m.Path)
		if err != nil {
			return err
		}
		switch {
		case !stillDue[m.Path]:
			fig.RecheckKept++
			continue
		case !under(l, pfx):
			return fmt.Errorf("refusing to delete %s: outside the table's prefixes", m.Path)
		case refs.contains(l.key()):
			referenced = append(referenced, m.Path)
		case len(del) >= maxDeletes:
			fig.CappedDeletes++
		default:
			del = append(del, l)
			sizes[l.String()] = m.Size
		}
	}
	fig.RecheckKept += len(referenced)
	if _, err := j.Store.DeleteMarks(ctx, t.Key(), referenced); err != nil {
		return err
	}
	var gone []string
	for _, group := range groupByStorage(del) {
		st, err := j.storageFor(ctx, t.Bucket, group[0])
		if err != nil {
			return err
		}
		errs := st.Delete(ctx, group)
		for _, l := range group {
			if e, failed := errs[l.String()]; failed {
				fig.DeleteFailed++
				if len(fig.Errors) < listedPaths {
					fig.Errors = append(fig.Errors, fmt.Sprintf("%s: %v", l, e))
				}
				continue
			}
			gone = append(gone, l.String())
			fig.Deleted++
			fig.DeletedBytes += sizes[l.String()]
		}
	}
	fig.DeletedPaths = first(gone)
	if _, err := j.Store.DeleteMarks(ctx, t.Key(), gone); err != nil {
		return err
	}
	return nil
}

// DeleteUnreferenced deletes those of paths that the table's metadata, as
// loaded now, does not reference and that lie under the table's prefixes;
// the rest are kept. Snapshot management calls it for the files of the
// snapshots it expired. It returns how many were deleted.
func (j *Job) DeleteUnreferenced(ctx context.Context, t jobs.Target, s maintenance.Settings, paths []string) (int, error) {
	var st refStats
	_, pfx, refs, err := j.references(ctx, t, RulesOf(s).Equivalence, &st)
	if err != nil {
		return 0, err
	}
	var del []loc
	for _, p := range paths {
		l, err := parseLoc(p)
		if err != nil {
			return 0, err
		}
		if under(l, pfx) && !refs.contains(l.key()) {
			del = append(del, l)
		}
	}
	deleted := 0
	for _, group := range groupByStorage(del) {
		st, err := j.storageFor(ctx, t.Bucket, group[0])
		if err != nil {
			return deleted, err
		}
		errs := st.Delete(ctx, group)
		deleted += len(group) - len(errs)
		for p, e := range errs {
			return deleted, fmt.Errorf("delete %s: %w", p, e)
		}
	}
	return deleted, nil
}

func (j *Job) storageFor(ctx context.Context, b *bucket.Bucket, p loc) (Storage, error) {
	if j.storage != nil {
		return j.storage(ctx, p)
	}
	return storageFor(ctx, p, b.Properties())
}

func groupByStorage(ls []loc) [][]loc {
	groups := map[string][]loc{}
	var order []string
	for _, l := range ls {
		k := l.scheme + "://" + l.authority
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], l)
	}
	out := make([][]loc, 0, len(order))
	for _, k := range order {
		out = append(out, groups[k])
	}
	return out
}

func first(paths []string) []string {
	if len(paths) > listedPaths {
		paths = paths[:listedPaths]
	}
	return paths
}

func firstPaths(marks []state.Mark) []string {
	var out []string
	for i, m := range marks {
		if i == listedPaths {
			break
		}
		out = append(out, m.Path)
	}
	return out
}
