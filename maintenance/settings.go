package maintenance

// Knobs are icekeeper's settings beyond S3 Tables', set per bucket in the
// configuration file, which fills in their defaults (package configs); a
// count of 0 turns its step off.
type Knobs struct {
	// MinFileAgeMinutes: compaction leaves data files committed less than
	// this many minutes ago to the writer.
	MinFileAgeMinutes int `json:"minFileAgeMinutes"`
	// MinManifestsToRewrite: compaction merges the current snapshot's small
	// data manifests once there are this many (0: never).
	MinManifestsToRewrite int `json:"minManifestsToRewrite"`
	// MinDeleteFilesToRewrite: compaction rewrites a partition's position
	// deletes once the data files it leaves alone have them in this many
	// distinct files (0: never).
	MinDeleteFilesToRewrite int `json:"minDeleteFilesToRewrite"`
	// MinEqualityDeleteFilesToConvert: compaction converts a partition's
	// equality deletes into position deletes (v2) or deletion vectors (v3)
	// once it has this many equality delete files (0: never; the data
	// rewrite then applies them).
	MinEqualityDeleteFilesToConvert int `json:"minEqualityDeleteFilesToConvert,omitempty"`
	// ConvertKeyIndex: conversion keeps the key index in the state store
	// (every converted row's key and position), so that a later run reads
	// only what changed.
	ConvertKeyIndex bool `json:"convertKeyIndex,omitempty"`
	// SkipRowCheck: compaction commits groups without checking their rows
	// by their row digest.
	SkipRowCheck bool `json:"skipRowCheck,omitempty"`
	// RetentionMode says how a table's history.expire.* properties combine
	// with icebergSnapshotManagement's settings: "conservative" (the
	// default) or "strict".
	RetentionMode string `json:"tableRetentionProperties,omitempty"`
	// DeleteExpiredFiles and PruneUnusedSchemasAndSpecs are snapshot
	// management's opt-ins.
	DeleteExpiredFiles         bool `json:"deleteExpiredFiles"`
	PruneUnusedSchemasAndSpecs bool `json:"pruneUnusedSchemasAndSpecs"`
	// SchemeEquivalence lists groups of URI schemes that name the same
	// storage, for unreferenced file removal.
	SchemeEquivalence [][]string `json:"schemeEquivalence,omitempty"`
	// MaxDeletesPerRun caps unreferenced file removal's deletions per run
	// (0: the job's default).
	MaxDeletesPerRun int `json:"maxDeletesPerRun"`
	// AllowNestedTables lets unreferenced file removal run on a table
	// whose location holds other tables (or is a namespace or warehouse
	// directory), leaving those tables' prefixes alone.
	AllowNestedTables bool `json:"allowNestedTables,omitempty"`
	// RemoveDroppedTables lets unreferenced file removal take the files a
	// dropped table left (see package orphan's RunDropped).
	RemoveDroppedTables bool `json:"removeDroppedTables,omitempty"`
	// FreshnessTargetSeconds bounds how long a small file, a delete file
	// or an expired snapshot may wait before maintenance takes it (0: no
	// target); a table's icekeeper.freshness-target property overrides
	// it.
	FreshnessTargetSeconds int `json:"freshnessTargetSeconds,omitempty"`
}

// BucketDefaults are what a bucket's entry in the configuration file says:
// a layer per job type (zero where unset) and the knobs.
type BucketDefaults struct {
	Configs map[JobType]Config
	Knobs   Knobs
}

// Settings is everything that steers maintenance of one table, resolved:
// every job type's configuration with every field set, and the knobs. It
// is what a job runs with; nothing else is.
type Settings struct {
	Configs map[JobType]Config `json:"configuration"`
	Knobs   Knobs              `json:"icekeeper"`
}

// For returns job type t's resolved configuration.
func (s Settings) For(t JobType) Config { return s.Configs[t] }
