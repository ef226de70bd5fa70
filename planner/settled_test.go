package planner

import (
	"fmt"
	"testing"
	"time"
)

func TestSettledAfterRewrite(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	target := int64(128 * MB)
	named := func(part string, sizesMB ...float64) []File {
		fs := files(part, sizesMB...)
		for i := range fs {
			fs[i].Path = fmt.Sprintf("%s/f%d", part, i)
		}
		return fs
	}
	out := func(part string, sizeMB float64) File {
		return File{Path: part + "/out", Partition: part, Format: "parquet", SizeBytes: int64(sizeMB * MB), Records: 10, AddedAt: now}
	}
	all := func(fs []File) map[string]bool {
		m := map[string]bool{}
		for _, f := range fs {
			m[f.Path] = true
		}
		return m
	}
	six := named("a", 10, 10, 10, 10, 10, 10)
	for _, tc := range []struct {
		name    string
		files   []File
		removed map[string]bool
		added   []File
		minAge  time.Duration
		want    bool
		until   time.Time
	}{
		{"every small file merged into one", six, all(six), []File{out("a", 60)}, 0, true, time.Time{}},
		{"the output waits for its age", six, all(six), []File{out("a", 60)}, time.Hour, true, now.Add(time.Hour - time.Nanosecond)},
		// Six small files of the partition were not in the rewrite: the
		// plan on the table it left still takes them.
		{"small files the rewrite left", ids(six, named("b", 10, 10, 10, 10, 10)), all(six), []File{out("a", 60)}, 0, false, time.Time{}},
		// An output far over the target is split by the next run.
		{"an oversized output", six, all(six), []File{out("a", 300)}, 0, false, time.Time{}},
		// Five outputs under the target in one partition make a group.
		{"many small outputs", six, all(six), []File{out("a", 5), out("a", 5), out("a", 5), out("a", 5), out("a", 5)}, 0, false, time.Time{}},
		{"nothing removed", six, nil, nil, 0, false, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, until, err := SettledAfterRewrite(tc.files, tc.removed, tc.added, CompactionOptions{TargetBytes: target, MinFileAge: tc.minAge, Now: now})
			if err != nil || got != tc.want || !until.Equal(tc.until) {
				t.Errorf("SettledAfterRewrite = %v until %v, %v; want %v until %v", got, until, err, tc.want, tc.until)
			}
		})
	}
	if _, _, err := SettledAfterRewrite(six, nil, nil, CompactionOptions{}); err == nil {
		t.Error("no target: no error")
	}
}
