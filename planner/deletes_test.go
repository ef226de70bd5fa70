package planner

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// deleteCase is the scan delete-file compaction plans on: data files with
// their position deletes, and which data files each delete file covers.
type deleteCase struct {
	tasks  []table.FileScanTask
	covers map[string][]string
}

// task adds a data file at path with the given position delete files and
// vectors attached; a delete file covers every data file it is attached to.
func (c *deleteCase) task(df iceberg.DataFile, deletes ...iceberg.DataFile) *deleteCase {
	t := table.FileScanTask{File: df}
	for _, d := range deletes {
		if d.FileFormat() == iceberg.PuffinFile {
			t.DeletionVectorFiles = append(t.DeletionVectorFiles, d)
			continue
		}
		t.DeleteFiles = append(t.DeleteFiles, d)
		if c.covers == nil {
			c.covers = map[string][]string{}
		}
		c.covers[d.FilePath()] = append(c.covers[d.FilePath()], df.FilePath())
	}
	c.tasks = append(c.tasks, t)
	return c
}

func TestDeletes(t *testing.T) {
	v2, v3 := newMeta(t, "2"), newMeta(t, "3")
	d := func(name string) iceberg.DataFile { return data(t, "s3://b/t/data/"+name+".parquet") }
	pd := func(name string) iceberg.DataFile { return posDelete(t, "s3://b/t/data/"+name+"-deletes.parquet") }
	dv := func(puffin, ref string, off int64) iceberg.DataFile {
		return vector(t, "s3://b/t/data/"+puffin+".puffin", "s3://b/t/data/"+ref+".parquet", off)
	}
	eq := dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentEqDeletes, "s3://b/t/data/eq.parquet", iceberg.ParquetFile, 1)
	avro := dataFile(t, *iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "s3://b/t/data/x-deletes.avro", iceberg.AvroFile, 1)

	// One data file with three delete files; three data files with one
	// each; one delete file over two data files, plus one of its own each.
	three := new(deleteCase).task(d("a"), pd("1"), pd("2"), pd("3"))
	oneEach := new(deleteCase).task(d("a"), pd("1")).task(d("b"), pd("2")).task(d("c"), pd("3"))
	shared := new(deleteCase).task(d("a"), pd("s"), pd("1")).task(d("b"), pd("s"), pd("2"))
	// v3: vectors of three data files in one Puffin file, or spread over two.
	onePuffin := new(deleteCase).task(d("a"), dv("p1", "a", 4)).task(d("b"), dv("p1", "b", 40)).task(d("c"), dv("p1", "c", 80))
	twoPuffins := new(deleteCase).task(d("a"), dv("p1", "a", 4)).task(d("b"), dv("p1", "b", 40)).task(d("c"), dv("p2", "c", 4))
	eqOnly := &deleteCase{tasks: []table.FileScanTask{{File: d("a"), EqualityDeleteFiles: []iceberg.DataFile{eq}}}}
	unreadable := new(deleteCase).task(d("a"), pd("1"), avro)
	clean := &deleteCase{tasks: []table.FileScanTask{{File: d("a")}, {File: d("b")}}}

	type group struct{ data, deletes, out, removed int }
	for _, tc := range []struct {
		name     string
		meta     table.Metadata
		in       *deleteCase
		taken    []string
		minFiles int
		want     []group
		skipped  string // the reason of the one skip expected; "" for none
	}{
		{"v2: three delete files on one data file", v2, three, nil, 3, []group{{1, 3, 1, 3}}, ""},
		{"minimum 0 turns it off", v2, three, nil, 0, nil, ""},
		{"below the minimum number of delete files", v2, three, nil, 4, nil, ""},
		{"a minimum of 1 still needs a gain", v2, new(deleteCase).task(d("a"), pd("1")), nil, 1, nil, ""},
		{"v1 tables have no position deletes to compact", newMeta(t, "1"), three, nil, 1, nil, ""},
		{"v2: one delete file per data file gains nothing", v2, oneEach, nil, 2, nil, ""},
		{"v2: a delete file over two data files is replaced with both", v2, shared, nil, 2, []group{{2, 3, 2, 3}}, ""},
		{"files the data rewrite takes are left out, and so is what still applies to them", v2, shared,
			[]string{"s3://b/t/data/b.parquet"}, 2, []group{{1, 2, 1, 1}}, ""},
		{"every data file taken", v2, three, []string{"s3://b/t/data/a.parquet"}, 1, nil, ""},
		{"v3: vectors in one Puffin file gain nothing", v3, onePuffin, nil, 1, nil, ""},
		{"v3: vectors spread over two Puffin files", v3, twoPuffins, nil, 2, []group{{3, 2, 1, 3}}, ""},
		{"v3: below the minimum", v3, twoPuffins, nil, 3, nil, ""},
		{"equality deletes are not position deletes", v2, eqOnly, nil, 1, nil, ""},
		{"no deletes at all", v2, clean, nil, 1, nil, ""},
		{"an unreadable delete file skips the partition, with why", v2, unreadable, nil, 1, nil,
			"position delete file s3://b/t/data/x-deletes.avro is AVRO; only Parquet and Puffin are read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := map[string]bool{}
			for _, p := range tc.taken {
				taken[p] = true
			}
			groups, skipped := Deletes(tc.meta, tc.in.tasks, tc.in.covers, taken, tc.minFiles)
			var got []group
			for _, g := range groups {
				got = append(got, group{g.DataFiles, g.DeleteFiles, g.ExpectedOutputFiles, len(g.Remove)})
				if len(g.Tasks) != g.DataFiles || g.Partition != "unpartitioned" {
					t.Errorf("group %+v: %d tasks", g, len(g.Tasks))
				}
				for _, task := range g.Tasks {
					if taken[task.File.FilePath()] {
						t.Errorf("%s is taken by the data rewrite and planned", task.File.FilePath())
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("groups %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.skipped == "" && len(skipped) != 0:
				t.Fatalf("skipped %+v", skipped)
			case tc.skipped != "" && (len(skipped) != 1 || skipped[0].Reason != tc.skipped || skipped[0].Files != 1 || skipped[0].Partition != "unpartitioned"):
				t.Fatalf("skipped %+v, want %q", skipped, tc.skipped)
			}
		})
	}
}

// Partitions are planned apart, in key order, each named for people, and
// a vector shares its Puffin file's path with others, so it is removed by
// file and offset.
func TestDeletesByPartition(t *testing.T) {
	meta := newSpecMeta(t, "3", byName)
	in := new(deleteCase)
	for _, part := range []string{"b", "a"} {
		for i, name := range []string{"x", "y"} {
			path := "s3://b/t/data/" + part + "/" + name + ".parquet"
			b, err := iceberg.NewDataFileBuilder(byName, iceberg.EntryContentData, path, iceberg.ParquetFile, map[int]any{1000: part}, nil, nil, 10, 1000)
			if err != nil {
				t.Fatal(err)
			}
			v, err := iceberg.NewDataFileBuilder(byName, iceberg.EntryContentPosDeletes, "s3://b/t/data/"+part+"/v"+name+".puffin", iceberg.PuffinFile, map[int]any{1000: part}, nil, nil, 1, 100)
			if err != nil {
				t.Fatal(err)
			}
			v.ReferencedDataFile(path).ContentOffset(int64(4 + i*40)).ContentSizeInBytes(10)
			in.task(b.Build(), v.Build())
		}
	}
	groups, skipped := Deletes(meta, in.tasks, in.covers, nil, 2)
	if len(skipped) != 0 || len(groups) != 2 {
		t.Fatalf("groups %+v, skipped %+v", groups, skipped)
	}
	for i, want := range []string{"name=a", "name=b"} {
		g := groups[i]
		if g.Partition != want || g.DataFiles != 2 || g.DeleteFiles != 2 || g.ExpectedOutputFiles != 1 || len(g.Remove) != 2 {
			t.Fatalf("group %d: %+v, want partition %s of 2 data files, 2 Puffin files, 1 out, 2 removed", i, g, want)
		}
	}
	for _, tc := range []struct {
		df   iceberg.DataFile
		want string
	}{
		{groups[0].Remove[0], groups[0].Remove[0].FilePath() + "@" + "4"},
		{posDelete(t, "s3://b/t/data/p.parquet"), "s3://b/t/data/p.parquet"},
	} {
		if got := RemovalKey(tc.df); got != tc.want {
			t.Errorf("RemovalKey %q, want %q", got, tc.want)
		}
	}
}
