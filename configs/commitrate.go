package configs

import (
	"fmt"

	"github.com/icekeeper/icekeeper/internal/bucket"
)

// CommitRate bounds the commits icekeeper sends a bucket's REST catalog,
// for managed catalogs that limit them (Cloudflare R2 Data Catalog: 20
// updateTable a minute per table, 120 writes a minute per catalog). A
// commit over the bound waits for its turn instead of being refused. 0 or
// unset leaves a bound off.
type CommitRate struct {
	// PerTablePerMinute is the most commits to one table in any minute.
	PerTablePerMinute int `yaml:"perTablePerMinute"`
	// PerCatalogPerMinute is the most commits to the catalog, all its
	// tables together, in any minute.
	PerCatalogPerMinute int `yaml:"perCatalogPerMinute"`
}

// finish validates a bucket's commit rate at key path p; typ is the
// bucket's catalog type.
func (r CommitRate) finish(p, typ string) *Error {
	for _, f := range []struct {
		key string
		v   int
	}{{"perTablePerMinute", r.PerTablePerMinute}, {"perCatalogPerMinute", r.PerCatalogPerMinute}} {
		if f.v < 0 {
			return &Error{Path: p + "." + f.key, Msg: fmt.Sprintf("%d is below the minimum 0 (0: no bound)", f.v)}
		}
	}
	if r != (CommitRate{}) && typ != "rest" {
		// Only the REST transport carries the limiter: accepting the
		// setting on another catalog would bound nothing, silently.
		return &Error{Path: p, Msg: fmt.Sprintf("applies to a rest catalog only; this bucket's catalog.type is %s", typ)}
	}
	return nil
}

// options is the rate as the bucket registry takes it.
func (r CommitRate) options() bucket.CommitRate {
	return bucket.CommitRate{PerTable: r.PerTablePerMinute, PerCatalog: r.PerCatalogPerMinute}
}
