package verified

import (
	"context"
	"iter"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// ReadAheadJoined is ReadAhead, calling joined with the length of each
// run of manifests it decoded as one stream, whose inflated blocks it
// joins up to joinAt bytes (0: as ReadAhead does; -1: inflating none, as
// for a run of larger manifests).
func ReadAheadJoined(ctx context.Context, fs icebergio.IO, manifests []iceberg.ManifestFile, discardDeleted bool, joined func(int), joinAt int) iter.Seq2[Read, error] {
	if joinAt == 0 {
		joinAt = joinedBlock
	}
	return readAhead(ctx, fs, manifests, discardDeleted, joined, joinAt)
}
