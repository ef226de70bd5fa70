package configs

import (
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/tables"
)

// BucketOptions are what the bucket registry needs of the file's buckets,
// each placed in its reference domain.
func (c *Config) BucketOptions() []bucket.Options {
	out := make([]bucket.Options, len(c.Buckets))
	for i, b := range c.Buckets {
		out[i] = bucket.Options{ARN: b.ARN, Parsed: b.Parsed, CatalogName: b.CatalogName, Catalog: b.Catalog,
			Namespaces: b.Namespaces.Match, Tables: b.Tables.Match, ReadOnly: b.ReadOnly,
			S3UnsignedPayload: b.S3UnsignedPayload}
		out[i].CommitRate = b.CommitRate.options()
	}
	at := make(map[string]int, len(c.Buckets))
	for i, b := range c.Buckets {
		at[b.ARN] = i
	}
	for _, d := range c.Domains() {
		if len(d.Buckets) < 2 {
			continue
		}
		for _, arn := range d.Buckets {
			out[at[arn]].Domain = d.Buckets[0]
		}
		for _, g := range d.Catalogs {
			for _, arn := range g {
				out[at[arn]].SameCatalog = g[0]
			}
		}
	}
	return out
}

// Domains groups the file's buckets, by ARN, into reference domains:
// buckets that share a catalog database, a REST catalog or a warehouse,
// whose tables removal and erasure look at together.
func (c *Config) Domains() []tables.Domain {
	members := make([]tables.Member, len(c.Buckets))
	for i, b := range c.Buckets {
		members[i] = tables.Member{Bucket: b.ARN, CatalogName: b.CatalogName, Catalog: bucket.CatalogProperties(b.Catalog)}
	}
	return tables.Domains(members)
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
		RemoveDroppedTables:             b.RemoveDroppedTables,
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
