package planner

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestRewritePath(t *testing.T) {
	meta := newMeta(t, "2")
	current := []table.FileScanTask{{File: data(t, "s3://b/t/data/a.parquet")}, {File: data(t, "s3://b/t/data/b.parquet")}}
	oldSpec := []table.FileScanTask{{File: dataFile(t, iceberg.NewPartitionSpecID(1), iceberg.EntryContentData, "s3://b/t/data/old.parquet", iceberg.ParquetFile, 10)}}
	yes := func(table.Metadata, []table.FileScanTask, int64) (string, bool) { return "", true }
	no := func(table.Metadata, []table.FileScanTask, int64) (string, bool) { return "files have deletes", false }
	for _, tc := range []struct {
		name      string
		tasks     []table.FileScanTask
		strategy  string
		mergeable MergeCheck
		path, why string
	}{
		{"an older spec is re-partitioned whatever the strategy", oldSpec, "sort", yes, PathRepartition, ""},
		{"an older spec is re-partitioned under binpack", oldSpec, "binpack", yes, PathRepartition, ""},
		{"sort", current, "sort", yes, PathSort, ""},
		{"z-order", current, "z-order", yes, PathZOrder, ""},
		{"hilbert", current, "hilbert", yes, PathHilbert, ""},
		{"binpack merges when the merge path can", current, "binpack", yes, PathMerge, ""},
		{"binpack goes through iceberg-go when it cannot, with why", current, "binpack", no, PathIceberg, "files have deletes"},
		{"no merge path handed in", current, "binpack", nil, PathIceberg, noMerge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, why := RewritePath(meta, tc.tasks, tc.strategy, 128*MB, tc.mergeable)
			if path != tc.path || why != tc.why {
				t.Fatalf("got %q (%q), want %q (%q)", path, why, tc.path, tc.why)
			}
		})
	}
}

// Rewrite hands the merge check each group's own tasks and the target,
// and records its answer on the group.
func TestRewrite(t *testing.T) {
	meta := newMeta(t, "2")
	var tasks []table.FileScanTask
	var in []File
	for i, p := range []string{"a", "b", "c", "d", "e"} {
		tasks = append(tasks, table.FileScanTask{File: data(t, "s3://b/t/data/"+p+".parquet")})
		in = append(in, File{ID: i, Path: p, Partition: "p", Format: "parquet", SizeBytes: MB, Records: 10})
	}
	var seen int
	check := func(_ table.Metadata, ts []table.FileScanTask, target int64) (string, bool) {
		seen += len(ts)
		if target != 128*MB {
			t.Errorf("target %d", target)
		}
		return "too few", false
	}
	for _, tc := range []struct {
		strategy, path, why string
		checked             int
	}{
		{"binpack", PathIceberg, "too few", 5},
		{"sort", PathSort, "", 0},
	} {
		seen = 0
		p, err := Rewrite(meta, tasks, in, CompactionOptions{TargetBytes: 128 * MB, Strategy: tc.strategy, Mergeable: check})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Groups) != 1 || p.Groups[0].Path != tc.path || p.Groups[0].PathReason != tc.why || seen != tc.checked {
			t.Fatalf("%s: groups %+v, %d tasks checked", tc.strategy, p.Groups, seen)
		}
	}
	if _, err := Rewrite(meta, tasks, in, CompactionOptions{}); err == nil {
		t.Fatal("zero target accepted")
	}
}

func TestGroupTasks(t *testing.T) {
	tasks := []table.FileScanTask{{File: data(t, "s3://b/t/0")}, {File: data(t, "s3://b/t/1")}, {File: data(t, "s3://b/t/2")}}
	for _, tc := range []struct {
		ids  []int
		want []string
	}{
		{nil, nil},
		{[]int{2, 0}, []string{"s3://b/t/2", "s3://b/t/0"}},
	} {
		got := GroupTasks(tasks, Group{FileIDs: tc.ids})
		if len(got) != len(tc.want) {
			t.Fatalf("%v: %d tasks", tc.ids, len(got))
		}
		for i := range got {
			if got[i].File.FilePath() != tc.want[i] {
				t.Fatalf("%v: task %d is %s", tc.ids, i, got[i].File.FilePath())
			}
		}
	}
}
