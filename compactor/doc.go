// Package compactor executes compaction plans: rewrites groups of files,
// applies row-level deletes and commits safely. Not implemented yet.
package compactor
