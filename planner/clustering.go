// Clustering: how well a table's data files are laid out along its sort
// order, from the manifests' column bounds alone, and which files the sort,
// z-order and hilbert strategies rewrite for it.
//
// A data file's extent on a sort column is the range between its lower
// and upper bounds. The overlap depth of a partition is the greatest
// number of its files whose extents share a point: a point lookup on the
// sort key reads that many files, and a range scan prunes none of them.
// A table of well-sized files written by many parallel writers can be
// eight deep and still pass every size rule, which is why clustering is
// measured apart from size.
//
// Sort measures the first sort column only (later columns order rows
// only within equal values of the first). Z-order and hilbert measure all
// sort columns together: a file's extent is the box of its ranges, and the
// depth is the greatest number of boxes that contain one point. Two rules
// keep the measure to what a rewrite can change:
//   - ranges are half-open: files that only touch at an endpoint (one ends
//     at the value the next begins with, as a sorted rewrite splits a run
//     of equal keys) do not overlap;
//   - files whose bounds are one and the same value on every column count
//     once: no rewrite separates rows of one key.
//
// What the bounds leave unknown is taken at its worst. A file without
// bounds for a column (metrics mode none or counts, a type change the
// bounds cannot be read as) overlaps every file. A file that holds nulls
// reaches the end of the range where the sort order puts nulls; a
// nulls-only file is the null point itself. Iceberg truncates string and
// binary bounds (write.metadata.metrics.*, truncate(16) by default): a
// lower bound stays a valid lower bound, but an upper bound as long as the
// truncation may have been cut without being raised, so it is taken to
// cover every value that begins with it. NaN is not in Iceberg's bounds
// and is not measured.
//
// Exact depth over several columns costs up to the square of a
// partition's files; over MaxClusterFiles files a partition's depth is
// the smallest of its columns' own depths, an upper bound.

package planner

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/maintenance"
)

// MaxOverlapDepth is the overlap depth a partition may have before the
// sort, z-order and hilbert strategies rewrite its overlapping files: two
// files may share a range (a sorted rewrite's outputs meet where a key's
// rows are split between two files), three may not.
const MaxOverlapDepth = 2

// MaxDeepPartitions bounds the partitions a Clustering lists.
const MaxDeepPartitions = 10

// MaxClusterFiles bounds the files of a partition whose depth over several
// columns is computed exactly, and which the clustering rule plans.
const MaxClusterFiles = 1000

// rank orders the points of a column's line that are not values.
type rank int8

const (
	atMin        rank = iota // below everything: an unknown lower bound
	atNullsFirst             // the nulls, when the sort order puts them first
	atValue                  // a value, ordered by its image
	atValuesEnd              // after every value
	atNullsLast              // the nulls, when the sort order puts them last
	atAfterNulls             // just after the nulls put last
	atMax                    // above everything: an unknown upper bound
)

// point is a position on a sort column's line; v is the order-preserving
// image of a value (see image), meaningful only at atValue.
type point struct {
	r rank
	v string
}

func (p point) cmp(q point) int {
	if c := cmp.Compare(p.r, q.r); c != 0 {
		return c
	}
	return strings.Compare(p.v, q.v)
}

// after is the point just after p: a value's image followed by a zero byte
// is the least image greater than it.
func (p point) after() point {
	switch p.r {
	case atValue:
		return point{r: atValue, v: p.v + "\x00"}
	case atNullsFirst:
		return point{r: atValue}
	case atMax:
		return p
	}
	return point{r: p.r + 1}
}

// span is a file's extent on one column: the points p with lo ≤ p < hi,
// or the single point lo when lo == hi.
type span struct{ lo, hi point }

func (s span) single() bool { return s.lo == s.hi }

func (s span) contains(p point) bool {
	if s.single() {
		return s.lo == p
	}
	return s.lo.cmp(p) <= 0 && p.cmp(s.hi) < 0
}

func (s span) meets(t span) bool {
	switch {
	case s.single():
		return t.contains(s.lo)
	case t.single():
		return s.contains(t.lo)
	}
	return s.lo.cmp(t.hi) < 0 && t.lo.cmp(s.hi) < 0
}

// reach is the least point after s.
func (s span) reach() point {
	if s.single() {
		return s.lo.after()
	}
	return s.hi
}

// everything is the span of a file whose bounds are unknown.
func everything() span { return span{lo: point{r: atMin}, hi: point{r: atMax}} }

// Box is a data file's extent on the clustering columns, read from its
// bounds (Boxes). The zero Box is not measured: a file the clustering
// rule knows nothing about, left to the size rules.
type Box struct {
	spans []span
}

// Measured reports whether the box was read from a file's bounds.
func (b Box) Measured() bool { return len(b.spans) > 0 }

// single reports whether the file's bounds are one value on every column.
func (b Box) single() bool {
	for _, s := range b.spans {
		if !s.single() {
			return false
		}
	}
	return true
}

func (b Box) equal(c Box) bool { return slices.Equal(b.spans, c.spans) }

func (b Box) meets(c Box) bool {
	for i, s := range b.spans {
		if !s.meets(c.spans[i]) {
			return false
		}
	}
	return true
}

// hull is the least box holding every box of bs.
func hull(bs []Box) Box {
	out := Box{spans: slices.Clone(bs[0].spans)}
	for _, b := range bs[1:] {
		for i, s := range b.spans {
			h := &out.spans[i]
			hi := s.hi
			if s.single() {
				hi = s.hi.after()
			}
			if h.single() {
				h.hi = h.hi.after()
			}
			if s.lo.cmp(h.lo) < 0 {
				h.lo = s.lo
			}
			if hi.cmp(h.hi) > 0 {
				h.hi = hi
			}
		}
	}
	return out
}

// keyColumn is a clustering column: how its bounds are read.
type keyColumn struct {
	id         int
	name       string
	typ        iceberg.Type
	nullsFirst bool
	// truncated is the length (characters for strings, bytes for binary)
	// at which an upper bound may have been cut; 0: never.
	truncated int
}

// clusterColumns are the columns strategy clusters meta's rows by: the
// sort order's first column for sort (and auto, binpack), all of them for
// z-order and hilbert. ok is false when the table has no sort order the
// bounds can measure: unsorted, a transform, a nested column, or a type
// with no order.
func clusterColumns(meta table.Metadata, strategy string) (cols []keyColumn, ok bool) {
	order := meta.SortOrder()
	var fields []table.SortField
	for _, f := range order.Fields() {
		fields = append(fields, f)
	}
	if order.IsUnsorted() || len(fields) == 0 || checkSortOrder(meta) != nil {
		return nil, false
	}
	if strategy != string(maintenance.StrategyZOrder) && strategy != string(maintenance.StrategyHilbert) {
		fields = fields[:1]
	}
	sc := meta.CurrentSchema()
	props := meta.Properties()
	for _, f := range fields {
		fld, found := sc.FindFieldByID(f.SourceIDs[0])
		if !found || !ordered(fld.Type) {
			return nil, false
		}
		cols = append(cols, keyColumn{id: fld.ID, name: fld.Name, typ: fld.Type, nullsFirst: f.NullOrder == table.NullsFirst,
			truncated: truncation(props, fld)})
	}
	return cols, true
}

// ordered reports whether image gives values of t an order.
func ordered(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
		iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType,
		iceberg.TimestampTzNsType, iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType, iceberg.DecimalType:
		return true
	}
	return false
}

// truncation is the length at which the table's metrics mode for fld cuts
// string and binary bounds (write.metadata.metrics.column.NAME, then
// write.metadata.metrics.default, truncate(16) by default); 0 when they
// are kept whole or the type is never cut.
func truncation(props iceberg.Properties, fld iceberg.NestedField) int {
	switch fld.Type.(type) {
	case iceberg.StringType, iceberg.BinaryType:
	default:
		return 0
	}
	mode := props.Get(table.MetricsModeColumnConfPrefix+"."+fld.Name,
		props.Get(table.DefaultWriteMetricsModeKey, table.DefaultWriteMetricsModeDefault))
	mode = strings.ToLower(strings.TrimSpace(mode))
	if n, ok := strings.CutPrefix(mode, "truncate("); ok {
		if v, err := strconv.Atoi(strings.TrimSuffix(n, ")")); err == nil && v > 0 {
			return v
		}
		return 16 // unreadable: assume Iceberg's default
	}
	return 0
}

// image is an order-preserving image of a literal: numbers as fixed-width
// big-endian integers whose byte order is their order, strings and bytes
// as they are (Iceberg orders strings by their UTF-8 bytes).
func image(lit iceberg.Literal) (string, bool) {
	var b [16]byte
	u64 := func(v uint64) string { binary.BigEndian.PutUint64(b[:8], v); return string(b[:8]) }
	signed := func(v int64) string { return u64(uint64(v) ^ 1<<63) }
	float := func(f float64) string {
		bits := math.Float64bits(f)
		if bits>>63 == 1 {
			return u64(^bits)
		}
		return u64(bits | 1<<63)
	}
	switch v := lit.(type) {
	case iceberg.BoolLiteral:
		if v {
			return "\x01", true
		}
		return "\x00", true
	case iceberg.Int32Literal:
		return signed(int64(v)), true
	case iceberg.Int64Literal:
		return signed(int64(v)), true
	case iceberg.DateLiteral:
		return signed(int64(v)), true
	case iceberg.TimeLiteral:
		return signed(int64(v)), true
	case iceberg.TimestampLiteral:
		return signed(int64(v)), true
	case iceberg.TimestampNsLiteral:
		return signed(int64(v)), true
	case iceberg.Float32Literal:
		return float(float64(v)), true
	case iceberg.Float64Literal:
		return float(float64(v)), true
	case iceberg.StringLiteral:
		return string(v), true
	case iceberg.BinaryLiteral:
		return string(v), true
	case iceberg.FixedLiteral:
		return string(v), true
	case iceberg.UUIDLiteral:
		return string(v[:]), true
	case iceberg.DecimalLiteral:
		// One column's decimals share a scale: the unscaled 128-bit
		// integers order them.
		binary.BigEndian.PutUint64(b[:8], uint64(v.Val.HighBits())^1<<63)
		binary.BigEndian.PutUint64(b[8:], v.Val.LowBits())
		return string(b[:]), true
	}
	return "", false
}

// successor is the least byte string greater than every string that
// begins with p; ok is false when there is none (p is all 0xff).
func successor(p string) (string, bool) {
	s := []byte(p)
	for len(s) > 0 && s[len(s)-1] == 0xff {
		s = s[:len(s)-1]
	}
	if len(s) == 0 {
		return "", false
	}
	s[len(s)-1]++
	return string(s), true
}

// spanOf reads df's extent on column c from its bounds and null counts.
func spanOf(df iceberg.DataFile, c keyColumn) span {
	nulls, nullsKnown := df.NullValueCounts()[c.id]
	nullPoint := point{r: atNullsLast}
	if c.nullsFirst {
		nullPoint = point{r: atNullsFirst}
	}
	loB, hasLo := df.LowerBoundValues()[c.id]
	hiB, hasHi := df.UpperBoundValues()[c.id]
	if !hasLo || !hasHi || loB == nil || hiB == nil {
		if nullsKnown && nulls > 0 && nulls == df.Count() {
			return span{lo: nullPoint, hi: nullPoint}
		}
		return everything()
	}
	loL, err1 := iceberg.LiteralFromBytes(c.typ, loB)
	hiL, err2 := iceberg.LiteralFromBytes(c.typ, hiB)
	if err1 != nil || err2 != nil {
		return everything()
	}
	lo, ok1 := image(loL)
	hi, ok2 := image(hiL)
	if !ok1 || !ok2 {
		return everything()
	}
	// Bounds are closed and spans half-open: the upper bound itself stays
	// outside, so that files meeting at one value do not overlap (see the
	// package comment).
	s := span{lo: point{r: atValue, v: lo}, hi: point{r: atValue, v: hi}}
	if c.truncated > 0 && mayBeCut(hiL, c.truncated) {
		if next, ok := successor(hi); ok {
			s.hi = point{r: atValue, v: next}
		} else {
			s.hi = point{r: atValuesEnd}
		}
	}
	if nullsKnown && nulls > 0 {
		if c.nullsFirst {
			if s.single() {
				s.hi = s.hi.after()
			}
			s.lo = nullPoint
		} else {
			s.hi = point{r: atAfterNulls}
		}
	}
	return s
}

// mayBeCut reports whether an upper bound is as long as the truncation,
// so that it may stand for longer values.
func mayBeCut(lit iceberg.Literal, n int) bool {
	switch v := lit.(type) {
	case iceberg.StringLiteral:
		return utf8.RuneCountInString(string(v)) >= n
	case iceberg.BinaryLiteral:
		return len(v) >= n
	}
	return false
}

// boxOf is df's box on cols.
func boxOf(df iceberg.DataFile, cols []keyColumn) Box {
	b := Box{spans: make([]span, len(cols))}
	for i, c := range cols {
		b.spans[i] = spanOf(df, c)
	}
	return b
}

// Boxes reads each task's data file's box on the columns strategy
// clusters by (see the package comment); nil when the table has no sort
// order the bounds can measure.
func Boxes(meta table.Metadata, strategy string, tasks []table.FileScanTask) []Box {
	cols, ok := clusterColumns(meta, strategy)
	if !ok {
		return nil
	}
	out := make([]Box, len(tasks))
	for i, t := range tasks {
		out[i] = boxOf(t.File, cols)
	}
	return out
}

// overlap is one partition's clustering: its depth, whether it is exact
// (see MaxClusterFiles), and which of its files overlap another.
type overlap struct {
	depth       int
	exact       bool
	overlapping []bool
}

// measure computes the overlap of one partition's boxes.
func measure(boxes []Box) overlap {
	if len(boxes) == 0 {
		return overlap{exact: true}
	}
	o := overlap{exact: len(boxes) <= MaxClusterFiles || len(boxes[0].spans) == 1}
	bs := distinct(boxes)
	if o.exact {
		o.depth = depth(bs, 0)
	} else {
		o.depth = len(bs)
		for dim := range bs[0].spans {
			o.depth = min(o.depth, depth1(bs, dim))
		}
	}
	if len(boxes) > MaxClusterFiles {
		return o
	}
	o.overlapping = make([]bool, len(boxes))
	for i := range boxes {
		for j := i + 1; j < len(boxes); j++ {
			if boxes[i].single() && boxes[i].equal(boxes[j]) {
				continue // one key, counted once
			}
			if boxes[i].meets(boxes[j]) {
				o.overlapping[i], o.overlapping[j] = true, true
			}
		}
	}
	return o
}

// distinct is boxes with the single-valued ones counted once per value.
func distinct(boxes []Box) []Box {
	out := make([]Box, 0, len(boxes))
	for _, b := range boxes {
		if b.single() && slices.ContainsFunc(out, b.equal) {
			continue
		}
		out = append(out, b)
	}
	return out
}

// depth is the greatest number of boxes containing one point, on the
// columns from dim on. Such a point can be taken where every coordinate
// is some box's lower end, so it sweeps dim's lower ends and recurses on
// the boxes that contain each.
func depth(bs []Box, dim int) int {
	if len(bs) <= 1 {
		return len(bs)
	}
	if dim == len(bs[0].spans)-1 {
		return depth1(bs, dim)
	}
	los := make([]point, len(bs))
	for i, b := range bs {
		los[i] = b.spans[dim].lo
	}
	slices.SortFunc(los, point.cmp)
	los = slices.Compact(los)
	best := 0
	active := make([]Box, 0, len(bs))
	for _, p := range los {
		active = active[:0]
		for _, b := range bs {
			if b.spans[dim].contains(p) {
				active = append(active, b)
			}
		}
		if len(active) > best {
			best = max(best, depth(active, dim+1))
		}
	}
	return best
}

// depth1 is the greatest number of boxes whose spans on dim share a
// point, by a sweep: at each point, spans ending there leave before spans
// starting there enter, and single-point spans there count while it is
// measured.
func depth1(bs []Box, dim int) int {
	type event struct {
		at   point
		kind int // 0 end, 1 start, 2 a single point
	}
	evs := make([]event, 0, 2*len(bs))
	for _, b := range bs {
		s := b.spans[dim]
		if s.single() {
			evs = append(evs, event{s.lo, 2})
			continue
		}
		evs = append(evs, event{s.lo, 1}, event{s.hi, 0})
	}
	slices.SortFunc(evs, func(a, b event) int {
		if c := a.at.cmp(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.kind, b.kind)
	})
	best, open := 0, 0
	for i := 0; i < len(evs); {
		at, singles := evs[i].at, 0
		for ; i < len(evs) && evs[i].at == at; i++ {
			switch evs[i].kind {
			case 0:
				open--
			case 1:
				open++
			default:
				singles++
			}
		}
		best = max(best, open+singles)
	}
	return best
}

// PartitionClustering is one partition's overlap depth.
type PartitionClustering struct {
	Partition string `json:"partition"`
	Files     int    `json:"files"`
	Depth     int    `json:"depth"`
	// Exact is false when the partition holds more than MaxClusterFiles
	// files and Depth is an upper bound.
	Exact bool `json:"exact"`
	// Overlapping are the files that overlap another one, in a partition
	// deeper than MaxOverlapDepth: what the clustering rule takes.
	Overlapping int `json:"overlapping"`
}

// Clustering is how well a table's files are clustered on its sort
// order.
type Clustering struct {
	// Columns are the columns measured: the sort order's first for sort,
	// all of its columns for z-order and hilbert.
	Columns []string `json:"columns"`
	// Depth is the deepest partition's overlap depth, and DeepPartitions
	// the partitions deeper than MaxOverlapDepth.
	Depth          int `json:"depth"`
	DeepPartitions int `json:"deepPartitions"`
	// Files are the data files measured, and Overlapping those of deep
	// partitions that overlap another file.
	Files       int `json:"files"`
	Overlapping int `json:"overlapping"`
	// Score is 100 × the share of data files not Overlapping: 100 when no
	// partition is deeper than MaxOverlapDepth, 0 when every file is in
	// an overlap a sort rewrite would take.
	Score float64 `json:"score"`
	// Partitions are the deepest partitions deeper than MaxOverlapDepth,
	// at most MaxDeepPartitions of them, deepest first.
	Partitions []PartitionClustering `json:"partitions,omitempty"`
}

// ClusterMeter measures a table's clustering one data file at a time, so
// that a caller reading manifests holds boxes, not files.
type ClusterMeter struct {
	cols  []keyColumn
	parts map[string][]Box
	label map[string]string
}

// NewClusterMeter measures meta's data files on the columns strategy
// clusters by; ok is false when the table has no sort order its bounds
// can measure (then there is nothing to report).
func NewClusterMeter(meta table.Metadata, strategy string) (m *ClusterMeter, ok bool) {
	cols, ok := clusterColumns(meta, strategy)
	if !ok {
		return nil, false
	}
	return &ClusterMeter{cols: cols, parts: map[string][]Box{}, label: map[string]string{}}, true
}

// Add measures one data file, labelled with its partition for people.
func (m *ClusterMeter) Add(df iceberg.DataFile, label string) {
	k := PartitionKey(df)
	m.parts[k] = append(m.parts[k], boxOf(df, m.cols))
	m.label[k] = label
}

// Result is the table's clustering over the files added.
func (m *ClusterMeter) Result() Clustering {
	c := Clustering{Score: 100}
	for _, col := range m.cols {
		c.Columns = append(c.Columns, col.name)
	}
	for k, boxes := range m.parts {
		c.Files += len(boxes)
		o := measure(boxes)
		c.Depth = max(c.Depth, o.depth)
		if o.depth <= MaxOverlapDepth {
			continue
		}
		c.DeepPartitions++
		p := PartitionClustering{Partition: m.label[k], Files: len(boxes), Depth: o.depth, Exact: o.exact}
		if o.overlapping == nil {
			p.Overlapping = len(boxes) // too many to tell apart: all count
		}
		for _, ov := range o.overlapping {
			if ov {
				p.Overlapping++
			}
		}
		c.Overlapping += p.Overlapping
		c.Partitions = append(c.Partitions, p)
	}
	if c.Files > 0 {
		c.Score = 100 * (1 - float64(c.Overlapping)/float64(c.Files))
	}
	slices.SortFunc(c.Partitions, func(a, b PartitionClustering) int {
		return cmp.Or(cmp.Compare(b.Depth, a.Depth), strings.Compare(a.Partition, b.Partition))
	})
	if len(c.Partitions) > MaxDeepPartitions {
		c.Partitions = c.Partitions[:MaxDeepPartitions]
	}
	return c
}

// String is the clustering in a few words.
func (c Clustering) String() string {
	return fmt.Sprintf("overlap depth %d on %s", c.Depth, strings.Join(c.Columns, ", "))
}

// clusterGroups is the clustering rule on one partition's files, all
// measured: when the partition is deeper than MaxOverlapDepth, its
// overlapping files and cands (the files the size rules chose) packed in
// key order into groups of at most maxGroup bytes, each full group ended,
// where it can be, between files whose first-column ranges do not meet,
// so that the groups' outputs stay apart. It plans only when the
// rewrite lowers the depth: each group's output is taken to fill its
// group's hull one file deep, plus one for keys split between outputs,
// beside the files left as they are. Otherwise (too many files, or
// overlapping files that no bounded group can separate) skip says why.
func clusterGroups(files, cands []File, maxGroup int64) (groups [][]File, d int, skip string) {
	boxes := make([]Box, len(files))
	for i, f := range files {
		boxes[i] = f.Box
	}
	o := measure(boxes)
	if o.depth <= MaxOverlapDepth {
		return nil, o.depth, ""
	}
	if o.overlapping == nil {
		bound := ""
		if !o.exact {
			bound = "at most "
		}
		return nil, o.depth, fmt.Sprintf("overlap depth %s%d over %d files, more than the %d the clustering rule takes at once; left to the size rules",
			bound, o.depth, len(files), MaxClusterFiles)
	}
	take := map[int]bool{}
	for _, f := range cands {
		take[f.ID] = true
	}
	for i, ov := range o.overlapping {
		if ov {
			take[files[i].ID] = true
		}
	}
	var chosen []File
	var rest []Box
	for _, f := range files {
		if take[f.ID] {
			chosen = append(chosen, f)
		} else {
			rest = append(rest, f.Box)
		}
	}
	slices.SortStableFunc(chosen, func(a, b File) int {
		return cmp.Or(a.Box.spans[0].lo.cmp(b.Box.spans[0].lo), cmp.Compare(a.ID, b.ID))
	})
	for start := 0; start < len(chosen); {
		end, cut := start+1, -1
		size, reach := chosen[start].SizeBytes, chosen[start].Box.spans[0].reach()
		for ; end < len(chosen) && size+chosen[end].SizeBytes <= maxGroup; end++ {
			s := chosen[end].Box.spans[0]
			if s.lo.cmp(reach) >= 0 {
				cut = end // the group could end here, apart from the next
			}
			size += chosen[end].SizeBytes
			if r := s.reach(); r.cmp(reach) > 0 {
				reach = r
			}
		}
		// A full group ends where its keys end, if it can.
		if end < len(chosen) && chosen[end].Box.spans[0].lo.cmp(reach) < 0 && cut > start {
			end = cut
		}
		groups = append(groups, chosen[start:end])
		start = end
	}
	after := rest
	for _, g := range groups {
		bs := make([]Box, len(g))
		for i, f := range g {
			bs[i] = f.Box
		}
		after = append(after, hull(bs))
	}
	if predicted := depth(distinct(after), 0) + 1; predicted >= o.depth {
		return nil, o.depth, fmt.Sprintf("overlap depth %d, which a rewrite in groups of at most %d bytes would not lower (to at most %d): the overlapping files hold more than one group",
			o.depth, maxGroup, predicted)
	}
	return groups, o.depth, ""
}
