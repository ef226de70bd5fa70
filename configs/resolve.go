package configs

import (
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/maintenance"
)

// BucketOptions are what the bucket registry needs of the file's buckets.
func (c *Config) BucketOptions() []bucket.Options {
	out := make([]bucket.Options, len(c.Buckets))
	for i, b := range c.Buckets {
		out[i] = bucket.Options{ARN: b.ARN, Parsed: b.Parsed, CatalogName: b.CatalogName, Catalog: b.Catalog,
			Namespaces: b.Namespaces.Match, Tables: b.Tables.Match}
		out[i].CommitRate = b.CommitRate.options()
	}
	return out
}

// Registry is the bucket registry of the file's buckets.
func (c *Config) Registry() *bucket.Registry { return bucket.New(c.BucketOptions()...) }

// Defaults are the file's maintenance settings per bucket ARN, for
// jobs.Resolver.
func (c *Config) Defaults() map[string]maintenance.BucketDefaults {
	out := make(map[string]maintenance.BucketDefaults, len(c.Buckets))
	for _, b := range c.Buckets {
		out[b.ARN] = b.Defaults()
	}
	return out
}

// Defaults are the bucket's maintenance settings in the file.
func (b Bucket) Defaults() maintenance.BucketDefaults {
	d := maintenance.BucketDefaults{Configs: map[maintenance.JobType]maintenance.Config{}, Knobs: maintenance.Knobs{
		MinFileAgeMinutes:               b.Compaction.MinFileAgeMinutes,
		MinManifestsToRewrite:           DefaultMinManifestsToRewrite,
		MinDeleteFilesToRewrite:         DefaultMinDeleteFilesToRewrite,
		MinEqualityDeleteFilesToConvert: DefaultMinEqualityDeleteFilesToConvert,
		ConvertKeyIndex:                 b.Compaction.ConvertKeyIndex,
		SkipRowCheck:                    b.Compaction.SkipRowCheck,
		RetentionMode:                   b.TableRetentionProperties,
		DeleteExpiredFiles:              b.Expiration.DeleteExpiredFiles,
		PruneUnusedSchemasAndSpecs:      b.Expiration.PruneUnusedSchemasAndSpecs,
		SchemeEquivalence:               b.SchemeEquivalence,
		MaxDeletesPerRun:                b.MaxDeletesPerRun,
		AllowNestedTables:               b.AllowNestedTables,
		FreshnessTargetSeconds:          int(b.FreshnessTarget / time.Second),
	}}
	if m := b.Compaction.MinManifestsToRewrite; m != nil {
		d.Knobs.MinManifestsToRewrite = *m
	}
	if m := b.Compaction.MinDeleteFilesToRewrite; m != nil {
		d.Knobs.MinDeleteFilesToRewrite = *m
	}
	if m := b.Compaction.MinEqualityDeleteFilesToConvert; m != nil {
		d.Knobs.MinEqualityDeleteFilesToConvert = *m
	}
	for _, t := range maintenance.JobTypes() {
		d.Configs[t] = b.Maintenance.For(t)
	}
	return d
}
