// Package version says which icekeeper this is, for `icekeeper version`
// and the created_by of the Parquet files it writes. A release build stamps
// it:
//
//	go build -ldflags "-X github.com/icekeeper/icekeeper/internal/version.version=v0.4.0 \
//	  -X github.com/icekeeper/icekeeper/internal/version.commit=$(git rev-parse HEAD) \
//	  -X github.com/icekeeper/icekeeper/internal/version.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/icekeeper
//
// Otherwise it is what the Go toolchain recorded: the module version of a
// `go install …@version`, and the VCS revision of a build in a checkout.
package version

import "runtime/debug"

// Set by the linker (-X); empty in an unstamped build.
var version, commit, date string

// Version is the release, or "devel" for a build that says nothing.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Commit is the commit built from, or "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	return setting("vcs.revision")
}

// Date is when the build was stamped, else the time of the commit built
// from (vcs.time), else "unknown".
func Date() string {
	if date != "" {
		return date
	}
	return setting("vcs.time")
}

// setting returns a VCS setting of the build information, or "unknown".
func setting(key string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == key && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// Dependency is the version of a module the binary was built with, or
// "unknown".
func Dependency(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}
