package planner

import (
	"strings"
	"testing"
	"time"
)

const MB = 1 << 20

func files(part string, sizesMB ...float64) []File {
	var out []File
	for i, s := range sizesMB {
		out = append(out, File{ID: i, Path: part + "/f", Partition: part, Format: "parquet", SizeBytes: int64(s * MB), Records: 10})
	}
	return out
}

func ids(fs ...[]File) []File {
	var out []File
	for _, f := range fs {
		out = append(out, f...)
	}
	for i := range out {
		out[i].ID = i
	}
	return out
}

func TestCompaction(t *testing.T) {
	target := int64(128 * MB)
	for _, tc := range []struct {
		name       string
		in         []File
		wantGroups int
		wantOut    int
		wantInput  int
		skipped    string
	}{
		{"empty", nil, 0, 0, 0, ""},
		{"all good sizes", ids(files("p", 100, 120, 200)), 0, 0, 0, ""},
		{"200 small files bin-pack to 2 outputs", ids(files("p", repeat(1, 200)...)), 2, 2, 200, ""},
		{"too few small files", ids(files("p", 1, 1, 1)), 0, 0, 0, "fewer than the minimum 5"},
		{"few small files with deletes", withDeletes(ids(files("p", 1, 1)), 0), 1, 1, 2, ""},
		{"one clean good file is never rewritten", ids(files("p", 110)), 0, 0, 0, ""},
		{"a good file with a few position deletes is left to delete-file compaction", withDeletes(ids(files("p", 110)), 0), 0, 0, 0, ""},
		{"a good file with 30% of its rows position-deleted is rewritten", deleted(ids(files("p", 110)), 0, 3), 1, 1, 1, ""},
		{"a good file with 20% of its rows position-deleted is not", deleted(ids(files("p", 110)), 0, 2), 0, 0, 0, ""},
		{"a good file with an equality delete is rewritten", withEqDeletes(ids(files("p", 110)), 0), 1, 1, 1, ""},
		{"oversized file is split alone", ids(files("p", 400)), 1, 4, 1, ""},
		{"partitions stay apart", ids(files("a", repeat(1, 5)...), files("b", repeat(1, 5)...)), 2, 2, 10, ""},
		{"mixed partition: only candidates", ids(files("p", 100, 110, 1, 1, 1, 1, 1)), 1, 1, 5, ""},
		{"good-sized files of an older spec are rewritten", oldSpec(ids(files("p", 100, 110))), 1, 2, 2, ""},
		{"one good file of an older spec is rewritten", oldSpec(ids(files("p", 110))), 1, 1, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compaction(tc.in, CompactionOptions{TargetBytes: target})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Groups) != tc.wantGroups || p.ExpectedOutputFiles() != tc.wantOut || p.InputFiles() != tc.wantInput {
				t.Fatalf("groups %d outputs %d inputs %d; want %d %d %d\n%+v", len(p.Groups), p.ExpectedOutputFiles(), p.InputFiles(), tc.wantGroups, tc.wantOut, tc.wantInput, p)
			}
			if tc.skipped != "" && (len(p.Skipped) == 0 || !strings.Contains(p.Skipped[0].Reason, tc.skipped)) {
				t.Fatalf("skipped %+v, want %q", p.Skipped, tc.skipped)
			}
			checkInvariants(t, tc.in, p, target)
		})
	}
}

func TestCompactionNonParquetSkipped(t *testing.T) {
	in := ids(files("p", repeat(1, 6)...))
	in[0].Format = "orc"
	p, err := Compaction(in, CompactionOptions{TargetBytes: 128 * MB})
	if err != nil {
		t.Fatal(err)
	}
	if p.InputFiles() != 5 || len(p.Skipped) != 1 || !strings.Contains(p.Skipped[0].Reason, "orc") {
		t.Fatalf("%+v", p)
	}
}

func TestCompactionSkipReason(t *testing.T) {
	in := ids(files("p", repeat(1, 6)...))
	in[2].Skip = "written under partition spec 0"
	p, err := Compaction(in, CompactionOptions{TargetBytes: 128 * MB})
	if err != nil {
		t.Fatal(err)
	}
	if p.InputFiles() != 5 || len(p.Skipped) != 1 || p.Skipped[0].Reason != in[2].Skip {
		t.Fatalf("%+v", p)
	}
	for _, g := range p.Groups {
		for _, id := range g.FileIDs {
			if id == 2 {
				t.Fatal("a skipped file was planned")
			}
		}
	}
}

func TestCompactionBadTarget(t *testing.T) {
	if _, err := Compaction(nil, CompactionOptions{}); err == nil {
		t.Fatal("zero target accepted")
	}
}

// Over generated inputs: every file appears in at most one group, groups
// never mix partitions, respect the group bound, and no group is a no-op.
func TestCompactionGeneratedInvariants(t *testing.T) {
	seed := uint64(1)
	next := func(n uint64) uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return (seed >> 33) % n }
	for round := 0; round < 300; round++ {
		var in []File
		nParts := 1 + int(next(6))
		for p := 0; p < nParts; p++ {
			for i := 0; i < int(next(60)); i++ {
				f := File{Partition: string(rune('a' + p)), Format: "parquet", SizeBytes: int64(next(300*MB)) + 1, Records: 1}
				if next(10) == 0 {
					f.DeleteFiles = 1 + int(next(3))
				}
				in = append(in, f)
			}
		}
		in = ids(in)
		target := int64(1+next(256)) * MB
		p, err := Compaction(in, CompactionOptions{TargetBytes: target})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, in, p, target)
	}
}

func checkInvariants(t *testing.T, in []File, p CompactionPlan, target int64) {
	t.Helper()
	seen := map[int]bool{}
	for _, g := range p.Groups {
		if len(g.FileIDs) == 1 {
			f := in[g.FileIDs[0]]
			if f.DeleteFiles == 0 && !f.OldSpec && f.SizeBytes <= int64(float64(target)*LargeRatio) {
				t.Fatalf("no-op group %+v", g)
			}
		}
		var bytes int64
		for _, id := range g.FileIDs {
			if seen[id] {
				t.Fatalf("file %d in two groups", id)
			}
			seen[id] = true
			if in[id].Partition != g.Partition {
				t.Fatalf("group %s holds a file of %s", g.Partition, in[id].Partition)
			}
			bytes += in[id].SizeBytes
		}
		if bytes != g.InputBytes || len(g.FileIDs) != g.InputFiles {
			t.Fatalf("group figures wrong: %+v", g)
		}
		if len(g.FileIDs) > 1 && bytes > DefaultMaxGroupMul*target {
			t.Fatalf("group of %d bytes over the bound", bytes)
		}
	}
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func withDeletes(fs []File, i int) []File {
	fs[i].DeleteFiles = 1
	return fs
}

// deleted gives file i one position delete file scoped to it that deletes
// rows of its 10.
func deleted(fs []File, i int, rows int64) []File {
	fs[i].DeleteFiles, fs[i].DeletedRows = 1, rows
	return fs
}

func withEqDeletes(fs []File, i int) []File {
	fs[i].DeleteFiles, fs[i].EqualityDeletes = 1, 1
	return fs
}

func oldSpec(fs []File) []File {
	for i := range fs {
		fs[i].OldSpec = true
	}
	return fs
}

// Files younger than the minimum age stay out of every group, each with
// its age in the reason; files whose adding snapshot expired are old.
func TestCompactionMinFileAge(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	in := ids(files("p", repeat(1, 8)...))
	for i := range in[:3] {
		in[i].AddedAt = now.Add(-30 * time.Second)
	}
	in[3].AddedAt = now.Add(-2 * time.Hour)
	// in[4:] have no AddedAt: expired snapshots, old enough.
	p, err := Compaction(in, CompactionOptions{TargetBytes: 128 * MB, MinFileAge: 10 * time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if p.InputFiles() != 5 || len(p.Skipped) != 3 {
		t.Fatalf("%d files planned, %d skipped; want 5 and 3: %+v", p.InputFiles(), len(p.Skipped), p)
	}
	if !strings.Contains(p.Skipped[0].Reason, "committed 30s ago, younger than the minimum file age of 10m0s") {
		t.Fatalf("reason %q", p.Skipped[0].Reason)
	}
	// Without a minimum age every file is a candidate.
	if p, _ := Compaction(in, CompactionOptions{TargetBytes: 128 * MB, Now: now}); p.InputFiles() != 8 {
		t.Fatalf("%d files planned without a minimum age, want 8", p.InputFiles())
	}
}
