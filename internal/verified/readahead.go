package verified

import (
	"context"
	"iter"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// ManifestReads is how many manifests ReadAhead reads at once: on object
// storage each read is a round trip, and a table can hold thousands. A
// manifest is small (a streaming writer's holds a few entries), so 32 in
// flight cost little memory and keep a slow gateway busy.
const ManifestReads = 32

// Read is a manifest and the entries FetchEntries read of it.
type Read struct {
	iceberg.ManifestFile
	Entries []iceberg.ManifestEntry
}

// ReadAhead yields each of manifests with its entries (FetchEntries,
// DELETED ones discarded when discardDeleted is set), in order, reading
// up to ManifestReads of them ahead of the consumer. It stops at the
// first error, which it yields, and when ctx is done.
func ReadAhead(ctx context.Context, fs icebergio.IO, manifests []iceberg.ManifestFile, discardDeleted bool) iter.Seq2[Read, error] {
	return func(yield func(Read, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type result struct {
			entries []iceberg.ManifestEntry
			err     error
		}
		results := make([]chan result, len(manifests))
		for i := range results {
			results[i] = make(chan result, 1)
		}
		ahead := make(chan struct{}, ManifestReads)
		go func() {
			for i, m := range manifests {
				select {
				case ahead <- struct{}{}:
				case <-ctx.Done():
					return
				}
				go func() {
					entries, err := FetchEntries(fs, m, discardDeleted)
					results[i] <- result{entries, err}
				}()
			}
		}()
		for i, m := range manifests {
			var r result
			select {
			case r = <-results[i]:
			case <-ctx.Done():
				yield(Read{}, ctx.Err())
				return
			}
			<-ahead
			if !yield(Read{m, r.entries}, r.err) || r.err != nil {
				return
			}
		}
	}
}
