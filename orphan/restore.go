package orphan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
)

// ErrNotMarked is returned by Restore for a path that has no noncurrent mark.
var ErrNotMarked = errors.New("no noncurrent mark")

// Noncurrent is a marked object with the time it becomes due for deletion.
type Noncurrent struct {
	state.Mark
	DeleteAfter time.Time `json:"deleteAfter"`
}

// ListNoncurrent returns t's noncurrent objects; nonCurrentDays is the
// bucket's resolved setting.
func ListNoncurrent(ctx context.Context, store state.Store, t state.TableKey, nonCurrentDays int) ([]Noncurrent, error) {
	marks, err := store.Marks(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]Noncurrent, len(marks))
	for i, m := range marks {
		out[i] = Noncurrent{Mark: m, DeleteAfter: m.MarkedAt.Add(time.Duration(nonCurrentDays) * 24 * time.Hour)}
	}
	return out, nil
}

// Restore clears the marks of paths (all of t's marks when paths is nil),
// so the next run evaluates those objects afresh. Nothing in storage
// changes: a noncurrent object is only ever deleted by a later run.
func Restore(ctx context.Context, store state.Store, t state.TableKey, paths []string) (int, error) {
	if paths == nil {
		return store.ClearMarks(ctx, t)
	}
	{
		marks, err := store.Marks(ctx, t)
		if err != nil {
			return 0, err
		}
		have := map[string]bool{}
		for _, m := range marks {
			have[m.Path] = true
		}
		for _, p := range paths {
			if !have[p] {
				return 0, fmt.Errorf("%w for %s in %s", ErrNotMarked, p, t)
			}
		}
	}
	return store.DeleteMarks(ctx, t, paths)
}
