package testkit

import (
	"context"
	"errors"

	"github.com/icekeeper/icekeeper/internal/state"
)

// ErrIndexDown is what a FailingIndex store answers for the reference
// index.
var ErrIndexDown = errors.New("index store down")

// FailingIndex is a store whose reference index can be neither read nor
// written: removal then reads every manifest, as it did without an index.
type FailingIndex struct{ state.Store }

// IndexedRefs fails.
func (FailingIndex) IndexedRefs(context.Context, state.TableKey, []string) (map[string]state.IndexRow, error) {
	return nil, ErrIndexDown
}

// PutIndexedRefs fails.
func (FailingIndex) PutIndexedRefs(context.Context, state.TableKey, []state.IndexRow) error {
	return ErrIndexDown
}

// ForgetIndexedRefs fails.
func (FailingIndex) ForgetIndexedRefs(context.Context, state.TableKey, string, []string) (int, error) {
	return 0, ErrIndexDown
}
