package rebase

import (
	"strconv"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/internal/rowdigest"
)

// Summary properties of a rewrite's row claim: the digest (package
// rowdigest) of the rows its groups read, deletes applied, and of the rows
// they wrote. Any reader of the table sees what the commit claims, and
// `icekeeper verify` recomputes it from storage.
const (
	RowsReadProperty     = "icekeeper.rows-read"
	RowsWrittenProperty  = "icekeeper.rows-written"
	RowDigestVersionProp = "icekeeper.row-digest-version"
	// RowsCopiedProperty and CopiedChunksProperty are the rows that went
	// over in row groups copied byte for byte, outside the row digests,
	// and the digest of those row groups' bytes.
	RowsCopiedProperty   = "icekeeper.rows-copied"
	CopiedChunksProperty = "icekeeper.copied-chunks"
	// RowsRemovedProperty is the digest of the rows a removing rewrite
	// (record expiration) dropped: rows-read is rows-written and these.
	RowsRemovedProperty = "icekeeper.rows-removed"
	// DeletesReadProperty and DeletesWrittenProperty are a delete-file
	// rewrite's claim: the digest of the position-delete rows (file_path,
	// pos) it read and of those its new delete files hold, read back.
	DeletesReadProperty    = "icekeeper.deletes-read"
	DeletesWrittenProperty = "icekeeper.deletes-written"
)

// RowClaim is one group's proof of its rows (rowdigest.Claim).
type RowClaim = rowdigest.Claim

// RowClaims holds the claims of a run's groups, by a file of each group's
// own (groupKey), for the summaries of the snapshots that commit
// them (a snapshot commits a batch of groups, and a retry may drop some).
// Safe for concurrent use.
type RowClaims struct {
	// Deletes says the claims are of position-delete rows (a delete-file
	// rewrite), written under the deletes-* keys.
	Deletes bool

	mu sync.Mutex
	by map[string]RowClaim
}

// Put records group g's claim.
func (c *RowClaims) Put(g table.CompactionGroupResult, claim RowClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]RowClaim{}
	}
	c.by[groupKey(g)] = claim
}

// properties are the summary properties of a snapshot committing groups:
// the sums of their claims, or none unless every group has one.
func (c *RowClaims) properties(groups []table.CompactionGroupResult) iceberg.Properties {
	if c == nil || len(groups) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum RowClaim
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		// Two groups under one key would count one claim twice: none is
		// better than a wrong one.
		key := groupKey(g)
		claim, ok := c.by[key]
		if !ok || seen[key] {
			return nil
		}
		seen[key] = true
		sum.Merge(claim)
	}
	if c.Deletes {
		return iceberg.Properties{
			DeletesReadProperty:    sum.Read.String(),
			DeletesWrittenProperty: sum.Written.String(),
			RowDigestVersionProp:   strconv.Itoa(rowdigest.Version),
		}
	}
	p := iceberg.Properties{
		RowsReadProperty:     sum.Read.String(),
		RowsWrittenProperty:  sum.Written.String(),
		RowDigestVersionProp: strconv.Itoa(rowdigest.Version),
	}
	if sum.Removed.Count > 0 {
		p[RowsRemovedProperty] = sum.Removed.String()
	}
	if sum.CopiedRows > 0 {
		p[RowsCopiedProperty] = strconv.FormatInt(sum.CopiedRows, 10)
		p[CopiedChunksProperty] = sum.Copied.String()
	}
	return p
}

// groupKey names a group by a file that is its alone: the first data file
// it replaces (a group that removes every row writes none), else, in a
// delete-file rewrite, the first file it writes. A removed deletion
// vector would not do: the vectors of several groups share a Puffin file.
func groupKey(g table.CompactionGroupResult) string {
	for _, files := range [][]iceberg.DataFile{g.OldDataFiles, g.NewDataFiles} {
		if len(files) > 0 {
			return files[0].FilePath()
		}
	}
	return ""
}
