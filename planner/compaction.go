// Compaction's decision: from a table's data files (sizes, partitions,
// attached deletes) it chooses groups per partition to rewrite toward a
// target file size, and for each group the path that rewrites it. It is
// files in, plan out, so every rule is tested with tables of inputs, like
// Thanos' planner.
//
// A file is a candidate when it is small (under 75% of the target), too
// large (over 180% of the target, to be split), carries equality deletes
// that conversion does not take (equality.go; then only a rewrite applies
// them), has at least DeleteRatio of its rows
// position-deleted, or was written under an older partition spec (its
// rows belong in the current spec's partitions, as Iceberg's own planner
// decides). A well-sized file with fewer position deletes is not
// rewritten for them — that would copy a whole file to drop a few rows;
// compaction rewrites its delete files instead (Iceberg's
// delete-ratio-threshold, 0.3 there too). Candidates are bin-packed per
// partition toward the target. A partition with fewer than MinInputFiles
// candidates is left alone unless deletes, an oversized file or an older
// spec justify a rewrite, and a group that would rewrite one clean file
// into itself is never planned. Files committed less than MinFileAge ago
// are left alone: a streaming writer's newest files are still being joined
// by more, and compacting them races the writer for nothing.
//
// Under the sort, z-order and hilbert strategies a partition is also
// judged by its clustering (clustering.go): when its files' key ranges
// overlap more than MaxOverlapDepth deep, the files that overlap another
// are rewritten with its size candidates, however well sized, packed in
// key order into groups of up to MaxGroupBytes (a group sorts as one, so
// larger groups separate more), and the group's reason names the depth.

package planner

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// Defaults of CompactionOptions.
const (
	SmallRatio         = 0.75
	LargeRatio         = 1.80
	DefaultMinInput    = 5
	DefaultMaxGroupMul = 10 // a group holds at most 10 targets' worth of input
	DeleteRatio        = 0.3
)

// File is one data file as the planner sees it.
type File struct {
	ID          int    // the caller's handle, returned in groups
	Path        string // for messages
	Partition   string // canonical partition key, spec ID included; files group by it
	Label       string // the partition as people read it (default: Partition)
	Format      string // "parquet", "orc", "avro"
	SizeBytes   int64
	Records     int64
	DeleteFiles int // position, equality and deletion-vector files attached
	// EqualityDeletes counts the equality delete files among them.
	EqualityDeletes int
	// Converts says equality-delete conversion takes this file's equality
	// deletes (see Converts): then they do not make a well-sized file a
	// candidate; once converted, its deleted-row ratio does.
	Converts bool
	// DeletedRows is the rows position deletes are known to delete: those
	// of deletion vectors and of delete files scoped to this file alone. A
	// delete file over many files does not say how many rows are this
	// one's, so it adds none, as in Iceberg.
	DeletedRows int64
	// OldSpec says the file was written under a partition spec other than
	// the table's current one.
	OldSpec bool
	// AddedAt is when the snapshot that added the file was committed; the
	// zero time means long ago (its snapshot has expired).
	AddedAt time.Time
	// Skip, when set, keeps the file out of every group; it is the reason
	// reported.
	Skip string
	// Box is the file's extent on the sort columns (Boxes), read by the
	// clustering rule under the strategies that order rows; Rewrite fills
	// it. A partition with a file not measured is judged by size alone.
	Box Box
}

// CompactionOptions steer compaction planning.
type CompactionOptions struct {
	TargetBytes   int64
	MinInputFiles int // default DefaultMinInput
	// MaxGroupBytes bounds one group's input, which bounds the rewrite's
	// work per commit (default DefaultMaxGroupMul × TargetBytes).
	MaxGroupBytes int64
	// MinFileAge leaves files committed less than this before Now alone.
	MinFileAge time.Duration
	Now        time.Time

	// Strategy is the resolved strategy (see Strategy) and Mergeable the
	// executor's merge path; Rewrite chooses each group's path with them.
	Strategy  string
	Mergeable MergeCheck
}

// Group is one rewrite: files of one partition and what is expected out.
type Group struct {
	Partition           string `json:"partition"`
	FileIDs             []int  `json:"-"`
	InputFiles          int    `json:"inputFiles"`
	InputBytes          int64  `json:"inputBytes"`
	InputRecords        int64  `json:"inputRecords"`
	DeleteFiles         int    `json:"deleteFiles"`
	ExpectedOutputFiles int    `json:"expectedOutputFiles"`
	Reason              string `json:"reason"`
	// Path is how the executor will rewrite the group (one of the Path
	// constants), and PathReason why when it is not its first choice;
	// Rewrite fills both, Compaction leaves them empty.
	Path       string `json:"path,omitempty"`
	PathReason string `json:"pathReason,omitempty"`
	// Copies is, on the merge path, how many of the group's row groups
	// are expected to be copied as they are (see EstimateCopies).
	Copies *RowGroupEstimate `json:"copies,omitempty"`
}

// Skip records files or partitions a plan leaves alone, and why.
type Skip struct {
	Partition string `json:"partition"`
	Files     int    `json:"files"`
	Reason    string `json:"reason"`
}

// CompactionPlan is compaction's decision: the groups to rewrite and
// what was left alone.
type CompactionPlan struct {
	Groups  []Group `json:"groups"`
	Skipped []Skip  `json:"skipped,omitempty"`
}

// InputFiles is the total of input files over all groups.
func (p CompactionPlan) InputFiles() (n int) {
	for _, g := range p.Groups {
		n += g.InputFiles
	}
	return n
}

// InputBytes is the total of input bytes over all groups.
func (p CompactionPlan) InputBytes() (n int64) {
	for _, g := range p.Groups {
		n += g.InputBytes
	}
	return n
}

// ExpectedOutputFiles is the total of expected output files.
func (p CompactionPlan) ExpectedOutputFiles() (n int) {
	for _, g := range p.Groups {
		n += g.ExpectedOutputFiles
	}
	return n
}

// Compaction groups files for rewriting under opts; it leaves each
// group's Path empty (see Rewrite).
func Compaction(files []File, opts CompactionOptions) (CompactionPlan, error) {
	if opts.TargetBytes <= 0 {
		return CompactionPlan{}, fmt.Errorf("target file size must be positive, got %d", opts.TargetBytes)
	}
	if opts.MinInputFiles <= 0 {
		opts.MinInputFiles = DefaultMinInput
	}
	if opts.MaxGroupBytes <= 0 {
		opts.MaxGroupBytes = DefaultMaxGroupMul * opts.TargetBytes
	}
	small := int64(float64(opts.TargetBytes) * SmallRatio)
	large := int64(float64(opts.TargetBytes) * LargeRatio)

	byPart := map[string][]File{}
	var parts []string
	var plan CompactionPlan
	for _, f := range files {
		label := f.Partition
		if f.Label != "" {
			label = f.Label
		}
		if f.Skip != "" {
			plan.Skipped = append(plan.Skipped, Skip{Partition: label, Files: 1, Reason: f.Skip})
			continue
		}
		if age := opts.Now.Sub(f.AddedAt); opts.MinFileAge > 0 && !f.AddedAt.IsZero() && age < opts.MinFileAge {
			plan.Skipped = append(plan.Skipped, Skip{Partition: label, Files: 1,
				Reason: fmt.Sprintf("committed %v ago, younger than the minimum file age of %v", age.Round(time.Second), opts.MinFileAge)})
			continue
		}
		if f.Format != "" && f.Format != "parquet" {
			plan.Skipped = append(plan.Skipped, Skip{Partition: label, Files: 1, Reason: fmt.Sprintf("%s is %s; only Parquet is rewritten", f.Path, f.Format)})
			continue
		}
		if _, ok := byPart[f.Partition]; !ok {
			parts = append(parts, f.Partition)
		}
		byPart[f.Partition] = append(byPart[f.Partition], f)
	}
	slices.Sort(parts)

	for _, part := range parts {
		var cands []File
		justified := false // deletes or an oversized file justify a rewrite of few files
		for _, f := range byPart[part] {
			switch {
			case f.EqualityDeletes > 0 && !f.Converts, f.OldSpec, f.SizeBytes > large:
				cands = append(cands, f)
				justified = true
			case f.SizeBytes < small:
				cands = append(cands, f)
				justified = justified || f.DeleteFiles > 0
			case f.DeleteFiles > 0 && float64(f.DeletedRows) >= DeleteRatio*float64(f.Records):
				cands = append(cands, f)
				justified = true
			}
		}
		label := part // a partition's files share its label
		if fs := byPart[part]; fs[0].Label != "" {
			label = fs[0].Label
		}
		if groups, d, why := clustered(byPart[part], cands, opts); len(groups) > 0 {
			for _, g := range groups {
				if noop(g, large) {
					continue
				}
				grp := group(label, g, opts.TargetBytes)
				grp.Reason = fmt.Sprintf("overlap depth %d", d)
				if r := reason(g, small, large); r != "0 small" {
					grp.Reason += ", " + r
				}
				plan.Groups = append(plan.Groups, grp)
			}
			continue
		} else if why != "" {
			plan.Skipped = append(plan.Skipped, Skip{Partition: label, Files: len(byPart[part]), Reason: why})
		}
		if len(cands) == 0 {
			continue
		}
		if len(cands) < opts.MinInputFiles && !justified {
			plan.Skipped = append(plan.Skipped, Skip{Partition: label, Files: len(cands),
				Reason: fmt.Sprintf("%d small files, fewer than the minimum %d", len(cands), opts.MinInputFiles)})
			continue
		}
		for _, g := range pack(cands, opts.TargetBytes, opts.MaxGroupBytes, large) {
			if noop(g, large) {
				continue
			}
			grp := group(label, g, opts.TargetBytes)
			grp.Reason = reason(g, small, large)
			plan.Groups = append(plan.Groups, grp)
		}
	}
	return plan, nil
}

// group is the Group of files g, in the partition labelled label.
func group(label string, g []File, target int64) Group {
	grp := Group{Partition: label}
	for _, f := range g {
		grp.FileIDs = append(grp.FileIDs, f.ID)
		grp.InputFiles++
		grp.InputBytes += f.SizeBytes
		grp.InputRecords += f.Records
		grp.DeleteFiles += f.DeleteFiles
	}
	grp.ExpectedOutputFiles = int(max(1, (grp.InputBytes+target-1)/target))
	return grp
}

// clustered applies the clustering rule to one partition's files under
// opts' strategy (clusterGroups): the groups it plans, the partition's
// depth, or why a deep partition is left to the size rules. It does
// nothing under binpack or when a file was not measured.
func clustered(files, cands []File, opts CompactionOptions) (groups [][]File, depth int, why string) {
	if !ordersRows(opts.Strategy) || slices.ContainsFunc(files, func(f File) bool { return !f.Box.Measured() }) {
		return nil, 0, ""
	}
	return clusterGroups(files, cands, opts.MaxGroupBytes)
}

// ordersRows reports whether strategy rewrites rows in an order.
func ordersRows(strategy string) bool {
	switch maintenance.Strategy(strategy) {
	case maintenance.StrategySort, maintenance.StrategyZOrder, maintenance.StrategyHilbert:
		return true
	}
	return false
}

// Rewrite is compaction's whole decision: the groups of files, each with
// the path that will rewrite it (see RewritePath). files[i] describes
// tasks[i] and has ID i. It reads metadata only: under a strategy that
// orders rows, the files' boxes come from their bounds (Boxes).
func Rewrite(meta table.Metadata, tasks []table.FileScanTask, files []File, opts CompactionOptions) (CompactionPlan, error) {
	if boxes := Boxes(meta, opts.Strategy, tasks); ordersRows(opts.Strategy) && boxes != nil {
		files = slices.Clone(files)
		for i := range files {
			files[i].Box = boxes[i]
		}
	}
	plan, err := Compaction(files, opts)
	if err != nil {
		return plan, err
	}
	for i, g := range plan.Groups {
		gt := GroupTasks(tasks, g)
		plan.Groups[i].Path, plan.Groups[i].PathReason = RewritePath(meta, gt, opts.Strategy, opts.TargetBytes, opts.Mergeable)
		if plan.Groups[i].Path == PathMerge {
			e := EstimateCopies(meta, gt)
			plan.Groups[i].Copies = &e
		}
	}
	return plan, nil
}

// pack bin-packs files first-fit-decreasing into bins of about target
// bytes, never over maxGroup; an oversized file gets a bin of its own (its
// rewrite splits it).
func pack(files []File, target, maxGroup, large int64) [][]File {
	files = slices.Clone(files)
	slices.SortStableFunc(files, func(a, b File) int {
		if c := cmp.Compare(b.SizeBytes, a.SizeBytes); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var bins [][]File
	var sizes []int64
	for _, f := range files {
		if f.SizeBytes > large {
			bins = append(bins, []File{f})
			sizes = append(sizes, f.SizeBytes)
			continue
		}
		placed := false
		for i := range bins {
			if len(bins[i]) == 1 && bins[i][0].SizeBytes > large {
				continue
			}
			// Fill toward the target, allowing the last file to spill over
			// (it lands in the next output file), up to the group bound.
			if sizes[i] < target && sizes[i]+f.SizeBytes <= maxGroup {
				bins[i] = append(bins[i], f)
				sizes[i] += f.SizeBytes
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, []File{f})
			sizes = append(sizes, f.SizeBytes)
		}
	}
	return bins
}

// noop reports a group whose rewrite would produce what it consumes: one
// clean file of acceptable size in the current spec.
func noop(g []File, large int64) bool {
	return len(g) == 1 && g[0].DeleteFiles == 0 && !g[0].OldSpec && g[0].SizeBytes <= large
}

func reason(g []File, small, large int64) string {
	var nSmall, nLarge, nDel, nOld int
	for _, f := range g {
		if f.OldSpec {
			nOld++
		}
		switch {
		case f.SizeBytes > large:
			nLarge++
		case f.SizeBytes < small:
			nSmall++
		}
		if f.DeleteFiles > 0 {
			nDel++
		}
	}
	s := fmt.Sprintf("%d small", nSmall)
	if nLarge > 0 {
		s += fmt.Sprintf(", %d oversized", nLarge)
	}
	if nDel > 0 {
		s += fmt.Sprintf(", %d with deletes", nDel)
	}
	if nOld > 0 {
		s += fmt.Sprintf(", %d of an older partition spec", nOld)
	}
	return s
}
