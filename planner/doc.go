// Package planner holds what every maintenance job decides, and nothing
// else: metadata, rules and a clock in; a plan with a reason for every
// choice out. Compaction's groups and their rewrite paths, delete-file
// compaction's partitions, which snapshots and refs expire, and what
// unreferenced file removal marks, unmarks and deletes are decided here,
// one file per decision, named for what it decides.
//
// The decisions live apart from the jobs that carry them out so that they
// can be read in one place, tested with tables of inputs built in memory,
// and shown as they are: a dry run prints the plan. An executor (packages
// compactor, expire, orphan) reads the table and storage, calls one
// planner function, and carries out the plan.
//
// The rules that keep it so, checked by imports_test.go:
//   - imports: the standard library (but not os, net, io/fs or
//     database), iceberg-go's value packages (iceberg, table) and package
//     maintenance; never a catalog, an io.IO, a *table.Table or a scan,
//     the state store, the file system or the network;
//   - a capability the plan must respect, that only an executor can
//     check, is handed in (as Prometheus hands its compactor a
//     BlockExcludeFilter): MergeCheck, a function value, says whether a
//     group can take the parquet-go merge path; for removal, the executor
//     classifies each listed object against the table's references with
//     its own location model and hands in the object's Standing;
//   - no package-level state but sentinel errors: the same inputs give
//     the same plan.
package planner
