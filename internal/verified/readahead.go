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
//
// Small manifests read in a row that share one header are decoded as one
// stream (readJoined), up to ManifestReads at a time: iceberg-go parses a
// manifest's Avro schema each time it opens one, which on a streaming
// table's manifests of a few entries is most of the reading's CPU. They
// are checked as FetchEntries checks them, and on any error read again
// one by one, so that a damaged manifest fails as it would alone.
func ReadAhead(ctx context.Context, fs icebergio.IO, manifests []iceberg.ManifestFile, discardDeleted bool) iter.Seq2[Read, error] {
	return readAhead(ctx, fs, manifests, discardDeleted, func(int) {}, joinedBlock)
}

// readAhead is ReadAhead, calling joined with the length of each run of
// manifests it decoded as one stream.
func readAhead(ctx context.Context, fs icebergio.IO, manifests []iceberg.ManifestFile, discardDeleted bool, joined func(int), joinAt int) iter.Seq2[Read, error] {
	return func(yield func(Read, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// A result is a manifest read whole (joinable ones) or its entries
		// read by FetchEntries.
		type result struct {
			whole   whole
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
					if joinable(m) {
						if w, err := readWhole(fs, m); err == nil {
							results[i] <- result{whole: w}
							return
						}
					}
					entries, err := FetchEntries(fs, m, discardDeleted)
					results[i] <- result{entries: entries, err: err}
				}()
			}
		}()
		got := make([]*result, len(manifests))
		wait := func(i int) (*result, error) {
			if got[i] == nil {
				select {
				case r := <-results[i]:
					got[i] = &r
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return got[i], nil
		}
		for i := 0; i < len(manifests); {
			r, err := wait(i)
			if err != nil {
				yield(Read{}, err)
				return
			}
			if r.whole.data == nil {
				<-ahead
				got[i] = nil
				if !yield(Read{manifests[i], r.entries}, r.err) || r.err != nil {
					return
				}
				i++
				continue
			}
			// The manifests read whole that follow and join this one; every
			// one of them is in flight, since ahead holds a place for each
			// manifest not yet yielded.
			run := []whole{r.whole}
			for j := i + 1; j < len(manifests) && len(run) < ManifestReads; j++ {
				rj, err := wait(j)
				if err != nil {
					yield(Read{}, err)
					return
				}
				if rj.whole.data == nil || !r.whole.joins(rj.whole) {
					break
				}
				run = append(run, rj.whole)
			}
			entries, err := readJoined(run, discardDeleted, joinAt)
			if err == nil {
				joined(len(run))
			}
			for k, w := range run {
				<-ahead
				got[i+k] = nil // a long table's manifests are not all held
				var es []iceberg.ManifestEntry
				var aloneErr error
				if err == nil {
					es = entries[k]
				} else {
					es, aloneErr = FetchEntries(fs, w.ManifestFile, discardDeleted)
				}
				if !yield(Read{manifests[i+k], es}, aloneErr) || aloneErr != nil {
					return
				}
			}
			i += len(run)
		}
	}
}
