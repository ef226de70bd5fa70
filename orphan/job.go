// Package orphan is icebergUnreferencedFileRemoval: objects under a table's
// location that nothing in its metadata references, and that are older than
// unreferencedDays, are marked noncurrent in the state store; marks older
// than nonCurrentDays are deleted after a re-check against freshly loaded
// metadata. Deletion is two-phase, like Thanos' deletion marks, and a
// mark can be cleared (restored) during its window.
//
// Safety, in the order the code enforces it: gc.enabled=false refuses the
// table; local paths are compared as the file system resolves them
// (symlinks of every prefix, reference and other table's location); a
// table whose location holds other tables, or a namespace or warehouse
// directory, is refused (or, with allowNestedTables, those tables'
// prefixes are left alone); what any other table of the bucket's
// reference domain (every bucket sharing its catalog database or storage)
// references is kept; any unreadable part of the metadata, or a manifest
// list or manifest that does not match its counts, fails the run before
// anything is marked; a reference that names a listed path through another scheme
// or authority fails the run; a file the snapshots need that the listing
// lacks fails the run; object names are opaque (stored and deleted
// verbatim, never percent-decoded) and a name with an empty, "." or ".."
// segment is never marked or deleted; only objects under the table's own
// prefixes are listed or deleted, and a due file whose path resolves
// elsewhere is kept; deletions are capped per run.
package orphan

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
	"github.com/icekeeper/icekeeper/tables"
)

// DefaultMaxDeletesPerRun is the deletion cap when the bucket sets none.
const DefaultMaxDeletesPerRun = 100000

// listedPaths bounds the paths kept in a run's figures, as the plan
// bounds its own; counts stay exact.
const listedPaths = planner.ListedPaths

// Job is icebergUnreferencedFileRemoval.
type Job struct {
	// Store keeps the noncurrent marks and the reference index.
	Store interface {
		state.Marks
		state.RefIndex
		state.Tables
	}
	// Logger receives what a run survives without failing (an index row
	// not trusted, an index not saved), and at debug level its listing,
	// marks and deletions; nil discards it.
	Logger *slog.Logger
	// Parallelism bounds concurrent manifest reads (default 8).
	Parallelism int
	// storage overrides the storage for tests (fault injection).
	storage func(ctx context.Context, prefix loc) (Storage, error)
	// Tables, when set, is the registry of tables, where the view of the
	// other tables is kept for every process (see others.go); nil: each
	// process reads every table once itself.
	Tables *tables.Registry
	// perTable makes tests check every other table by loading it, as on
	// a catalog that cannot list every table's metadata file in one
	// query (REST).
	perTable bool
	// views are what every table of each bucket holds (see others).
	views views
	// namespaces are the namespaces' locations containers reads.
	namespaces namespaces
	// codec encodes and decodes reference index rows.
	codec refCodec
}

// maxSweep bounds how old a check of another table a deleting run takes
// as fresh (see deleteDue): a fire's runs start within its jitter window
// (at most 5 minutes), and a busy queue delays them.
const maxSweep = 15 * time.Minute

// Definition is icebergUnreferencedFileRemoval's definition, with the
// job's knobs. Removal is outside the unchanged rule: objects appear in
// storage without a commit, so every run lists the table's prefixes.
func (j *Job) Definition() *jobs.Definition[Rules, *Figures] {
	return &jobs.Definition[Rules, *Figures]{
		Name:     maintenance.UnreferencedFileRemoval,
		Settings: func(s maintenance.Settings) (Rules, error) { return RulesOf(s), nil },
		Figures:  func(_ Rules, opts jobs.Options) *Figures { return &Figures{Now: opts.Now.UTC()} },
		Run:      j.run,
		Summary:  summary,
	}
}

// Figures is what a run reports and records.
type Figures struct {
	jobs.Common
	Now      time.Time `json:"now"`
	Prefixes []string  `json:"prefixes"`
	// OtherTablePrefixes are other tables' prefixes inside the table's,
	// left alone (with allowNestedTables).
	OtherTablePrefixes []string `json:"otherTablePrefixes,omitempty"`
	References         refStats `json:"references"`
	// Bucket is what the check of the bucket's other tables read (absent
	// from runs recorded before the check).
	Bucket *bucketStats `json:"bucket,omitempty"`
	// Recheck is what the re-check before deleting read of the other
	// tables (nil: nothing was due).
	Recheck *bucketStats `json:"recheck,omitempty"`
	planner.RemovalPlan

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

// Text is the readable form `icekeeper run` prints, with the first few
// paths of each list; a dry run's figures say what a run would do.
func (f *Figures) Text() string { return f.TextItems(textlist.Short) }

// TextItems is Text with at most limit paths of each list (textlist.All:
// every one the figures keep), the rest counted.
func (f *Figures) TextItems(limit int) string {
	would := func(verb, done string) string {
		if f.DryRun {
			return "would " + verb
		}
		return done
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  listed %d objects (%d bytes) under %s\n", f.Listed, f.ListedBytes, strings.Join(f.Prefixes, ", "))
	fmt.Fprintf(&b, "  metadata references %d paths there: %d not in storage (version hint, metadata log, statistics)\n",
		f.References.Paths, f.References.NotInStorage)
	if r := f.References; r.ManifestsRead+r.ManifestsFromIndex > 0 {
		fmt.Fprintf(&b, "  manifest lists and manifests: %d read, %d from the reference index", r.ManifestsRead, r.ManifestsFromIndex)
		if r.IndexRejected > 0 {
			fmt.Fprintf(&b, " (%d index rows not trusted, their files read)", r.IndexRejected)
		}
		if r.IndexUnsaved > 0 {
			fmt.Fprintf(&b, ", %d not saved to the index", r.IndexUnsaved)
		}
		b.WriteString("\n")
	}
	if o := f.Bucket; o != nil {
		fmt.Fprintf(&b, "  other tables of the bucket: %d (%d unchanged, %d loaded), %d manifests read, %d from the reference index; they reference %d paths here\n",
			o.Tables, o.Unchanged, o.Loaded, o.ManifestsRead, o.ManifestsFromIndex, o.References)
	}
	if f.ReferencedByOthers > 0 {
		fmt.Fprintf(&b, "  kept: %d objects other tables reference\n", f.ReferencedByOthers)
	}
	if f.OtherTables > 0 || len(f.OtherTablePrefixes) > 0 {
		fmt.Fprintf(&b, "  left alone: %d objects of other tables under %s\n", f.OtherTables, strings.Join(f.OtherTablePrefixes, ", "))
	}
	if f.UnsafeNames > 0 {
		fmt.Fprintf(&b, "  never deleted: %d objects whose names have an empty, . or .. segment\n", f.UnsafeNames)
	}
	fmt.Fprintf(&b, "  unreferenced: %d (%d too young to mark, %d already noncurrent, %d protected by restore)\n",
		f.Unreferenced, f.TooYoung, f.StillPending, f.Protected)
	fmt.Fprintf(&b, "  %s noncurrent: %d, %s (referenced again): %d, %s: %d (%d bytes)",
		would("mark", "marked"), f.Marked, would("unmark", "unmarked"), f.Unmarked, would("delete", "deleted"), f.Deleted, f.DeletedBytes)
	if f.CappedDeletes > 0 {
		fmt.Fprintf(&b, ", %d left by the per-run cap", f.CappedDeletes)
	}
	prefixed := func(prefix string) func(string) string { return func(s string) string { return prefix + s } }
	textlist.Lines(&b, limit, f.MarkedPaths, f.Marked, prefixed("mark   "))
	textlist.Lines(&b, limit, f.UnmarkedPaths, f.Unmarked, prefixed("unmark "))
	textlist.Lines(&b, limit, f.DeletedPaths, f.Deleted, prefixed("delete "))
	textlist.Lines(&b, limit, f.UnsafePaths, f.UnsafeNames, prefixed("unsafe "))
	textlist.Lines(&b, limit, f.Errors, f.DeleteFailed, prefixed("error  "))
	return b.String()
}

// Empty reports whether the run stopped before it read the table: a
// failed run's figures are then only zeros, not worth printing.
func (f *Figures) Empty() bool { return len(f.Prefixes) == 0 && f.Listed == 0 }

// Counters implements jobs.Counter.
func (f *Figures) Counters() map[string]float64 {
	return map[string]float64{"objects_marked": float64(f.Marked), "objects_unmarked": float64(f.Unmarked),
		"objects_deleted": float64(f.Deleted), "bytes_deleted": float64(f.DeletedBytes),
		"manifests_read": float64(f.References.ManifestsRead), "manifests_from_index": float64(f.References.ManifestsFromIndex)}
}

// run marks what nothing references and deletes what is due.
func (j *Job) run(ctx context.Context, r *jobs.Run[Rules], fig *Figures) error {
	tbl, err := r.Load(ctx)
	if err != nil {
		return err
	}
	return j.remove(ctx, subject{t: r.Target, key: r.Target.Key()}, tbl, r.Settings, r.Options, fig)
}

// subject is what a run removes unreferenced files of: a live table, or
// the leftovers of a dropped one (dropped set), whose marks are kept
// under its dropped key.
type subject struct {
	t       jobs.Target // its bucket and name (a dropped table's: the name it had)
	key     state.TableKey
	dropped *state.TableRecord
}

// look is s's view: a live table's as tbl (loaded for this run) gives
// it, a dropped table's from its record.
func (j *Job) look(ctx context.Context, s subject, tbl *table.Table, rules Rules, since time.Time, use indexUse) (view, error) {
	if s.dropped == nil {
		return j.view(ctx, s.t, tbl, rules, since, use)
	}
	return j.droppedView(ctx, s, rules, since, use)
}

// remove marks what nothing references under s's prefixes and deletes
// what is due.
func (j *Job) remove(ctx context.Context, s subject, tbl *table.Table, rules Rules, opts jobs.Options, fig *Figures) error {
	t, key := s.t, s.key
	use := indexAndSave
	if opts.DryRun {
		use = indexOnly
	}
	start := time.Now()
	v, err := j.look(ctx, s, tbl, rules, time.Time{}, use)
	if err != nil {
		return err
	}
	j.log().Debug("references collected", "table", t.Table.String(), "paths", v.stats.Paths, "manifestsRead", v.stats.ManifestsRead,
		"manifestsFromIndex", v.stats.ManifestsFromIndex, "otherTables", v.others.stats.Tables, "duration", time.Since(start))
	fig.References, fig.Bucket = v.stats, &v.others.stats
	for _, p := range v.sc.pfx {
		fig.Prefixes = append(fig.Prefixes, p.String())
	}
	for _, p := range v.others.exclude {
		fig.OtherTablePrefixes = append(fig.OtherTablePrefixes, p.String())
	}
	marks, err := j.Store.Marks(ctx, key)
	if err != nil {
		return err
	}
	pl := planner.NewRemoval(rules.RemovalRules, opts.Now, planMarks(marks))
	// How many objects a listing will find is not known before it ends:
	// the bar counts them.
	listed := 0
	for _, p := range v.sc.pfx {
		st, err := j.storageFor(ctx, t.Bucket, p)
		if err != nil {
			return err
		}
		start, before := time.Now(), listed
		if err := st.List(ctx, p, func(o Object) error {
			if !under(o.Loc, v.sc.pfx) { // a listing must never stray outside
				return fmt.Errorf("storage listed %s outside the table's prefixes", o.Loc)
			}
			pl.Observe(planner.RemovalObject{Path: o.Loc.String(), Size: o.Size, LastModified: o.LastModified}, v.standing(o.Loc))
			if listed++; opts.Progress != nil {
				opts.Progress(listed, 0)
			}
			return nil
		}); err != nil {
			return err
		}
		j.log().Debug("prefix listed", "table", t.Table.String(), "prefix", p.String(), "objects", listed-before, "duration", time.Since(start))
	}
	plan := pl.Finish()
	fig.RemovalPlan = plan
	// Every file the snapshots need must have been listed: if one was
	// not, storage names objects otherwise than the metadata does, and
	// what looks unreferenced may be live.
	unlisted, missing := v.refs.unlisted()
	fig.References.NotInStorage = unlisted
	if len(missing) > 0 {
		return missingError(ctx, v.tbl, v.fs, v.sc, j.Parallelism, v.refs, missing)
	}
	fig.MarkedPaths = firstPaths(plan.Mark)
	fig.UnmarkedPaths = first(plan.Unmark)
	fig.DeletedPaths = firstPaths(plan.Delete)
	fig.Marked, fig.Unmarked = len(plan.Mark), len(plan.Unmark)
	if opts.DryRun {
		fig.Deleted = len(plan.Delete)
		for _, m := range plan.Delete {
			fig.DeletedBytes += m.Size
		}
		return nil
	}

	if err := j.Store.PutMarks(ctx, storeMarks(plan.Mark, key, opts.RunID)); err != nil {
		return err
	}
	if _, err := j.Store.DeleteMarks(ctx, key, slices.Concat(plan.Unmark, plan.Vanished)); err != nil {
		return err
	}
	j.log().Debug("marks saved", "table", t.Table.String(), "marked", len(plan.Mark), "unmarked", len(plan.Unmark),
		"vanished", len(plan.Vanished), "due", len(plan.Delete))
	fig.Deleted = 0
	if len(plan.Delete) > 0 {
		if err := j.deleteDue(ctx, s, rules, plan.Delete, opts.FreshSince, fig, opts.Progress); err != nil {
			return err
		}
	}
	if fig.DeleteFailed > 0 {
		return fmt.Errorf("%d of %d deletions failed, first: %s", fig.DeleteFailed, fig.DeleteFailed+fig.Deleted, fig.Errors[0])
	}
	return nil
}

// view is what a run knows of its table: the table, where its files are,
// what the bucket's other tables hold there, and the reference set.
type view struct {
	tbl    *table.Table
	fs     icebergio.IO
	sc     scope
	others others
	refs   *refSet
	stats  refStats
}

// view collects what tbl, t as loaded, owns, using the reference index as
// use says, and what the other tables of the bucket's reference domain
// hold under its prefixes.
func (j *Job) view(ctx context.Context, t jobs.Target, tbl *table.Table, rules Rules, since time.Time, use indexUse) (view, error) {
	var v view
	if err := maintenance.CheckGC(tbl.Properties()); err != nil {
		return v, err
	}
	v.tbl = tbl
	raw, err := prefixes(tbl.Metadata())
	if err != nil {
		return v, err
	}
	res := newResolver()
	v.sc = scope{pfx: resolved(raw, res), eq: rules.Equivalence, res: res}
	if v.others, err = j.others(ctx, t, v.sc, othersOpts{allow: rules.AllowNested, since: since, use: use}); err != nil {
		return v, err
	}
	if v.fs, err = tbl.FS(ctx); err != nil {
		return v, fmt.Errorf("open file system of %s: %w", tbl.Location(), err)
	}
	v.refs, v.stats, err = collectRefs(ctx, tbl, v.fs, v.sc, j.Parallelism, j.index(t.Key(), tbl, use))
	return v, err
}

func (j *Job) log() *slog.Logger {
	if j.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Logger
}

// index is a walk's use of the reference index for the table tbl under
// key; nil when use is readAll.
func (j *Job) index(key state.TableKey, tbl *table.Table, use indexUse) *runIndex {
	if use == readAll {
		return nil
	}
	return &runIndex{store: j.Store, codec: &j.codec, key: key, uuid: tbl.Metadata().TableUUID().String(),
		save: use == indexAndSave, logger: j.log()}
}

// standing classifies the listed object at l for the planner: whether
// the table references it (which also records that it was listed, for
// the check that no required file is missing), whether another table of
// the bucket does, whether storage may resolve its name to another
// object, and whether it is under another table's prefix. The order is
// the planner's: a referenced object is referenced whatever its name.
func (v view) standing(l loc) planner.Standing {
	switch {
	case v.refs.see(l):
		return planner.StandingReferenced
	case v.others.refs.contains(l):
		return planner.StandingOtherReference
	case !l.clean():
		return planner.StandingUnsafeName
	case under(l, v.others.exclude):
		return planner.StandingOtherTable
	}
	return planner.StandingUnreferenced
}

// keeps says why l may not be deleted on the strength of v, or ""
// when it may: it must be a clean name under the table's own prefixes,
// outside every other table's, naming the file it names (no symlink on
// the way), and no form of it referenced by any table of the domain.
func (v view) keeps(l loc) string {
	switch {
	case !l.clean():
		return "its name has an empty, . or .. segment"
	case !under(l, v.sc.pfx):
		return "outside the table's prefixes"
	case under(l, v.others.exclude):
		return "under another table's prefix"
	case v.sc.res.loc(l) != l:
		return "it resolves to another file now"
	}
	forms, n := v.sc.forms(l)
	for _, f := range forms[:n] {
		if v.refs.contains(f) {
			return "referenced"
		}
		if v.others.refs.contains(f) {
			return "referenced by another table"
		}
	}
	return ""
}

// deleteDue deletes marks that are due, after re-checking each against
// metadata loaded afresh now: a writer may have committed a reference
// since the listing (a rollback, a re-registered file).
//
// The re-check reads every manifest list and manifest in full and never
// consults the reference index. Checking instead that the index was built
// from the metadata re-loaded here would make the index the last word on
// what may be deleted; reading in full keeps the deciding check
// independent of it, so an index row that is wrong yet decodes (a bug, a
// row written for a file later replaced at the same path) can at worst
// mark a live file, never delete it. The price is one full read in the
// runs that have deletions due.
//
// The other tables of the domain are checked afresh too: on a catalog
// that gives every table's metadata file in one query (SQL), by that
// query, and loads of the tables that changed. Elsewhere (REST) each
// table is loaded, and one fire's deleting runs share those loads: a
// table checked at or after since (when this run was queued, at most
// maxSweep ago) is not loaded again, and a listing of the domain's tables
// made since is not made again, so a fire over N tables loads each once,
// not N times, and lists the catalog once. The cost is a window: a
// reference another table (or a table created meanwhile) commits between
// its check and the deletion, within one fire, is not seen. A file is due only after unreferencedDays unreferenced and
// nonCurrentDays marked, and the table's own metadata is always loaded
// here; one-shot runs (since zero) check every table themselves.
func (j *Job) deleteDue(ctx context.Context, s subject, rules Rules, due []planner.Mark, since time.Time, fig *Figures, progress func(done, total int)) error {
	t := s.t
	start := time.Now()
	// A sweep is one fire's runs: a run queued long ago (behind a busy
	// queue, or kept pending across fires) takes no older check.
	if oldest := start.Add(-maxSweep); since.Before(oldest) && !since.IsZero() {
		since = oldest
	}
	var tbl *table.Table
	if s.dropped == nil {
		var err error
		if tbl, err = t.Bucket.LoadTable(ctx, t.Table); err != nil {
			return fmt.Errorf("re-check before deleting: %w", err)
		}
	}
	v, err := j.look(ctx, s, tbl, rules, since, readAll)
	if err != nil {
		return fmt.Errorf("re-check before deleting: %w", err)
	}
	fig.Recheck = &v.others.stats
	// An operator may have restored some of them since the listing.
	current, err := j.Store.Marks(ctx, s.key)
	if err != nil {
		return fmt.Errorf("re-check before deleting: %w", err)
	}
	stillDue := map[string]bool{}
	for _, m := range current {
		stillDue[m.Path] = !m.Protected()
	}
	var del []loc
	var sizes = map[string]int64{}
	var kept []string
	for _, m := range due {
		// A mark holds the listed name verbatim: never decode it.
		l, err := objectLoc(m.Path)
		if err != nil {
			return err
		}
		if !stillDue[m.Path] {
			fig.RecheckKept++
			continue
		}
		switch why := v.keeps(l); {
		case why == "outside the table's prefixes":
			return fmt.Errorf("refusing to delete %s: %s", m.Path, why)
		case why != "":
			kept = append(kept, m.Path)
		case len(del) >= rules.MaxDeletes:
			fig.CappedDeletes++
		default:
			del = append(del, l)
			sizes[l.String()] = m.Size
		}
	}
	fig.RecheckKept += len(kept)
	j.log().Debug("due objects re-checked", "table", t.Table.String(), "due", len(due), "toDelete", len(del), "kept", len(kept),
		"restored", fig.RecheckKept-len(kept), "capped", fig.CappedDeletes, "duration", time.Since(start))
	if _, err := j.Store.DeleteMarks(ctx, s.key, kept); err != nil {
		return err
	}
	start = time.Now()
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
		if progress != nil {
			progress(fig.Deleted+fig.DeleteFailed, len(del))
		}
	}
	j.log().Debug("objects deleted", "table", t.Table.String(), "deleted", fig.Deleted, "failed", fig.DeleteFailed, "duration", time.Since(start))
	fig.DeletedPaths = first(gone)
	if _, err := j.Store.DeleteMarks(ctx, s.key, gone); err != nil {
		return err
	}
	return nil
}

// DeleteUnreferenced deletes those of paths (as table metadata names
// them) that the table's metadata, as loaded now, does not reference, that
// lie under the table's prefixes and outside every other table's, and whose
// names storage cannot resolve elsewhere; the rest are kept. Snapshot
// management calls it for the files of the snapshots it expired. It
// returns how many were deleted.
//
// Like deleteDue's re-check, it reads the metadata in full, never the
// reference index.
func (j *Job) DeleteUnreferenced(ctx context.Context, t jobs.Target, s maintenance.Settings, paths []string) (int, error) {
	tbl, err := t.Bucket.LoadTable(ctx, t.Table)
	if err != nil {
		return 0, err
	}
	del, err := j.unreferenced(ctx, t, s, tbl, paths)
	if err != nil {
		return 0, err
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

func firstPaths(marks []planner.Mark) []string {
	var out []string
	for i, m := range marks {
		if i == listedPaths {
			break
		}
		out = append(out, m.Path)
	}
	return out
}

// planMarks are the store's marks as the planner decides on them.
func planMarks(marks []state.Mark) []planner.Mark {
	out := make([]planner.Mark, len(marks))
	for i, m := range marks {
		out[i] = planner.Mark{Path: m.Path, Size: m.Size, LastModified: m.LastModified, MarkedAt: m.MarkedAt, ProtectedAt: m.ProtectedAt}
	}
	return out
}

// storeMarks are the planner's new marks as the store keeps them, for
// table key and run.
func storeMarks(marks []planner.Mark, key state.TableKey, run int64) []state.Mark {
	out := make([]state.Mark, len(marks))
	for i, m := range marks {
		out[i] = state.Mark{Table: key, Path: m.Path, Size: m.Size, LastModified: m.LastModified, MarkedAt: m.MarkedAt, RunID: run, ProtectedAt: m.ProtectedAt}
	}
	return out
}
