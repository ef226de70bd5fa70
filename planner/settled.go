package planner

import "time"

// SettledAfterRewrite decides, without reading the table again, whether
// compaction would plan nothing on the table a data rewrite left: files
// are the live data files the rewrite planned on, removed the paths of
// those its committed groups replaced, and added the files they wrote.
// It holds only when nothing else changed the table between the plan and
// the last commit (the caller checks that no commit was rebased on a
// writer's); a writer's commit after it changes the table's snapshot,
// which the unchanged rule notices anyway.
//
// It returns whether the plan on the files after the rewrite is empty,
// and until when that stands (CompactionValidUntil): an added file is
// as young as the rewrite, so with a minimum file age the table is looked
// at again once the outputs are old enough to be planned.
func SettledAfterRewrite(files []File, removed map[string]bool, added []File, opts CompactionOptions) (bool, time.Time, error) {
	after := make([]File, 0, len(files)+len(added))
	for _, f := range files {
		if !removed[f.Path] {
			after = append(after, f)
		}
	}
	after = append(after, added...)
	for i := range after {
		after[i].ID = i
	}
	plan, err := Compaction(after, opts)
	if err != nil || len(plan.Groups) > 0 {
		return false, time.Time{}, err
	}
	return true, CompactionValidUntil(after, opts.MinFileAge, opts.Now), nil
}
