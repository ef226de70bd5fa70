package planner

import (
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// DataOptions steer compaction's data stage.
type DataOptions struct {
	// CompactionOptions bound the groups; their Strategy is set by
	// PlanData from the configured one.
	CompactionOptions
	Strategy maintenance.Strategy
	// Convert decides which equality deletes are converted rather than
	// applied by a rewrite (Converting).
	Convert ConvertOptions
	// Budget caps the input bytes the run rewrites (WithinBudget; nil:
	// no cap).
	Budget *int64
}

// DataPlan is compaction's data stage, whole: what a run rewrites, what
// it defers and why, and what it leaves to equality-delete conversion.
type DataPlan struct {
	// Strategy is the strategy that applies (Strategy).
	Strategy string
	// CompactionPlan holds the groups the run rewrites, in plan order,
	// and the files it left and why.
	CompactionPlan
	// Deferred are the groups the rewrite budget leaves to the next run;
	// DeferredBecause says why when nothing fit.
	Deferred        []Group
	DeferredBecause string
	// Converting[i] says that tasks[i]'s equality deletes are converted
	// into position deletes, so the file is not rewritten for them.
	Converting []bool
}

// PlanData is the data stage's one decision on tasks, the table's live
// data files, and files, their descriptions (files[i] is tasks[i], with
// ID i): the strategy, the files conversion takes, the groups with their
// rewrite paths, and the budget's cut. deletes are the table's live
// equality deletes; nil when conversion is off or no file has any.
func PlanData(meta table.Metadata, tasks []table.FileScanTask, files []File, deletes []EqualityDelete, opts DataOptions) (DataPlan, error) {
	var p DataPlan
	var err error
	if p.Strategy, err = Strategy(opts.Strategy, meta); err != nil {
		return p, err
	}
	if deletes != nil {
		p.Converting = Converting(meta, tasks, deletes, opts.Convert)
		files = append([]File(nil), files...)
		for i, ok := range p.Converting {
			files[i].Converts = ok
		}
	}
	opts.CompactionOptions.Strategy = p.Strategy
	if p.CompactionPlan, err = Rewrite(meta, tasks, files, opts.CompactionOptions); err != nil {
		return p, err
	}
	if opts.Budget != nil {
		p.Groups, p.Deferred = WithinBudget(p.Groups, *opts.Budget)
		if len(p.Groups) == 0 && len(p.Deferred) > 0 {
			p.DeferredBecause = BudgetSpent
		}
	}
	return p, nil
}
