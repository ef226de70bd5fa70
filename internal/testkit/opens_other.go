//go:build !linux

package testkit

import "testing"

// Opens counts file opens where inotify exists (Linux); elsewhere
// WatchOpens skips the test.
type Opens struct{}

// OpenCounts are the opens of a directory since the last Take, by kind.
type OpenCounts struct{ Metadata, ManifestLists, Manifests, Other int }

// WatchOpens skips: counting opens needs inotify.
func WatchOpens(t testing.TB, dir string, more ...string) *Opens {
	t.Skip("counting file opens needs inotify (Linux)")
	return nil
}

// Take is never reached.
func (o *Opens) Take() OpenCounts { return OpenCounts{} }
