package main

import (
	"context"
	"runtime"

	"github.com/icekeeper/icekeeper/internal/version"
)

func cmdVersion(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "version", "", "Prints icekeeper's version, commit and build date, and the iceberg-go it was built with.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	writeln(env.stdout, "icekeeper %s (commit %s, built %s, iceberg-go %s, %s)", version.Version(), version.Commit(), version.Date(),
		version.Dependency("github.com/apache/iceberg-go"), runtime.Version())
	return nil
}
