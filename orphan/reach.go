package orphan

import (
	"context"
	"errors"
	"fmt"

	"github.com/icekeeper/icekeeper/internal/redact"
)

// errReached stops Reach's listing at its first object.
var errReached = errors.New("reached")

// Reach lists at most one object under location with the storage
// unreferenced file removal would use for it: whether the storage
// answers, with the bucket's endpoint and keys, before any job needs it.
// It changes nothing.
func Reach(ctx context.Context, location string, props map[string]string) error {
	prefix, err := objectLoc(location)
	if err != nil {
		return fmt.Errorf("reach storage at %s: %w", redact.URI(location), err)
	}
	st, err := storageFor(ctx, prefix, props)
	if err != nil {
		return err
	}
	err = st.List(ctx, prefix, func(Object) error { return errReached })
	if err != nil && !errors.Is(err, errReached) {
		return fmt.Errorf("reach storage at %s: %w", redact.URI(location), err)
	}
	return nil
}
