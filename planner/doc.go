// Package planner decides compaction: from a table's file scan tasks it
// groups files per partition toward targetFileSizeMB. It is pure (metadata
// in, plan out, no I/O). Not implemented yet.
package planner
