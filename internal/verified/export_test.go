package verified

import (
	"context"
	"iter"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// ReadAheadJoined is ReadAhead, calling joined with the length of each
// run of manifests it decoded as one stream.
func ReadAheadJoined(ctx context.Context, fs icebergio.IO, manifests []iceberg.ManifestFile, discardDeleted bool, joined func(int)) iter.Seq2[Read, error] {
	return readAhead(ctx, fs, manifests, discardDeleted, joined)
}
