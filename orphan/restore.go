package orphan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/internal/state"
)

// ErrNotMarked is returned by Restore for a path that has no noncurrent
// mark, and by Release for one that is not protected.
var ErrNotMarked = errors.New("no noncurrent mark")

// Noncurrent is a marked object with the time it becomes due for deletion;
// a protected object has no such time.
type Noncurrent struct {
	state.Mark
	DeleteAfter time.Time `json:"deleteAfter,omitzero"`
}

// ListNoncurrent returns t's noncurrent and protected objects;
// nonCurrentDays is the bucket's resolved setting.
func ListNoncurrent(ctx context.Context, store state.Marks, t state.TableKey, nonCurrentDays int) ([]Noncurrent, error) {
	marks, err := store.Marks(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]Noncurrent, len(marks))
	for i, m := range marks {
		out[i] = Noncurrent{Mark: m}
		if !m.Protected() {
			out[i].DeleteAfter = m.MarkedAt.Add(time.Duration(nonCurrentDays) * 24 * time.Hour)
		}
	}
	return out, nil
}

// Restore protects the noncurrent objects of paths (all of t's when paths
// is nil): they are never deleted, and not marked again, until Release or
// until the table references them again. Nothing in storage changes.
func Restore(ctx context.Context, store state.Marks, t state.TableKey, paths []string, now time.Time) (int, error) {
	if err := checkMarked(ctx, store, t, paths, false); err != nil {
		return 0, err
	}
	return store.ProtectMarks(ctx, t, paths, now)
}

// Release ends the protection of paths (all of t's protected objects when
// paths is nil): the next run evaluates them afresh, and marks those still
// unreferenced with a full nonCurrentDays window ahead of them.
func Release(ctx context.Context, store state.Marks, t state.TableKey, paths []string) (int, error) {
	if paths == nil {
		marks, err := store.Marks(ctx, t)
		if err != nil {
			return 0, err
		}
		paths = []string{}
		for _, m := range marks {
			if m.Protected() {
				paths = append(paths, m.Path)
			}
		}
	} else if err := checkMarked(ctx, store, t, paths, true); err != nil {
		return 0, err
	}
	return store.DeleteMarks(ctx, t, paths)
}

// Named returns the paths of marks, protected ones or not as protected
// says, that p names: p itself when it is one; else those of which p is
// the end after a slash, a file name or a path relative to the table's
// location, since the full URI is long and `noncurrent` prints it whole.
func Named(marks []state.Mark, p string, protected bool) []string {
	var out []string
	for _, m := range marks {
		if m.Protected() != protected {
			continue
		}
		if m.Path == p {
			return []string{p}
		}
		if strings.HasSuffix(m.Path, "/"+strings.TrimPrefix(p, "/")) {
			out = append(out, m.Path)
		}
	}
	slices.Sort(out)
	return out
}

// checkMarked refuses the whole request when one of paths has no mark in
// the wanted state, so a typo changes nothing.
func checkMarked(ctx context.Context, store state.Marks, t state.TableKey, paths []string, protected bool) error {
	if paths == nil {
		return nil
	}
	marks, err := store.Marks(ctx, t)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, m := range marks {
		if m.Protected() == protected {
			have[m.Path] = true
		}
	}
	for _, p := range paths {
		if !have[p] {
			what := "noncurrent"
			if protected {
				what = "protected"
			}
			return fmt.Errorf("%w: %s is not a %s object of %s", ErrNotMarked, p, what, t)
		}
	}
	return nil
}
