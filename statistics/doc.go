// Package statistics is icebergStatistics: it keeps the table statistics
// query engines plan with current — one Puffin file per run holding an
// apache-datasketches-theta-v1 blob per column (a compact theta sketch of
// the column's values in Iceberg's single-value serialization, with the
// spec's `ndv` property), committed with set-statistics for the current
// snapshot, and a partition statistics file beside it.
//
// A run costs what changed, not the table. The previous run's Puffin
// blobs are the running state: the plan (planner.PlanStatistics) walks the
// lineage from the snapshot they describe to the current one; an append's
// data files are read and their sketches merged into the previous ones
// (theta sketches merge without loss); a replace (compaction, manifest
// rewrites: the rows are the same by definition) is read not at all; a
// delete or overwrite makes each ndv an upper bound, and the rows it
// removed are counted (blob property icekeeper.rows-removed-since-recompute)
// until they pass maxDriftPercent of the table's rows (default 10%), when
// the run computes every sketch afresh from the live data files. The
// share of rows the sketches may still count although they are gone is
// written beside ndv as icekeeper.ndv-upper-bound-drift. A broken lineage
// (the described snapshot is no longer an ancestor, or a parent was
// expired between), a changed column set, or a previous file that is not
// icekeeper's also makes the run compute afresh.
//
// Data files are read whole (row-level deletes are not applied): rows a
// delete file hides at a full computation are counted in
// icekeeper.rows-deleted-at-recompute and in the drift, not toward the
// next recomputation, which could not lower them.
//
// Partition statistics are kept from the change too: the previous file's
// rows plus the files each commit since added and minus those it deleted,
// read from the manifests that commit wrote, held to the current
// snapshot's summary totals; where there is no previous file, or it does
// not add up, every manifest of the snapshot is counted.
//
// Manifests are read through package verified, and a snapshot whose
// manifests hold other than the data files its summary says it added is
// an error: a sketch missing a file's values is never written as the
// table's. Older statistics files of the lineage are taken out of the
// metadata with the commit and left to unreferenced file removal, which
// treats every listed statistics file as referenced.
package statistics
