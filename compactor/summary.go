package compactor

import (
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/human"
)

// summary is a run in one line (jobs.Definition.Summary), in Text's
// words: the files rewritten in and out first, then the other stages
// that did something, then what was left for the next run.
func summary(f *Figures) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch {
	case f.InputFiles > 0:
		add("%s -> %s", human.Count(int64(f.InputFiles), "file"), human.Count(int64(f.OutputFiles), "file"))
	case f.DryRun && f.GroupsPlanned > 0:
		add("would rewrite %s in %s", human.Count(int64(f.Plan.InputFiles()), "file"), human.Count(int64(f.GroupsPlanned), "group"))
	}
	if f.DeleteFilesRemoved > 0 {
		add("%s removed", human.Count(int64(f.DeleteFilesRemoved), "delete file"))
	}
	if f.EqualityDeletesConverted > 0 {
		add("%s converted", human.Count(int64(f.EqualityDeletesConverted), "equality delete"))
	}
	if f.DeletesRemoved > 0 {
		add("%s -> %d", human.Count(int64(f.DeletesRemoved), "delete file"), f.DeletesWritten)
	}
	if f.ManifestsRewritten > 0 {
		add("manifests %d -> %d", f.ManifestsRewritten, f.ManifestsWritten)
	}
	if f.GroupsFailed > 0 {
		add("%s failed", human.Count(int64(f.GroupsFailed), "group"))
	}
	if n := f.GroupsDropped + f.DeleteGroupsDropped + f.ConvertGroupsDropped; n > 0 {
		add("%s dropped for conflicts", human.Count(int64(n), "group"))
	}
	if f.GroupsDeferredByBudget > 0 {
		add("%s deferred by the rewrite budget", human.Count(int64(f.GroupsDeferredByBudget), "group"))
	}
	if len(parts) == 0 {
		return "nothing to compact"
	}
	return strings.Join(parts, ", ")
}
