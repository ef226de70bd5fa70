package main

import (
	"context"
	"runtime"
	"runtime/debug"
)

func cmdVersion(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "version", "", "Prints icekeeper's version and the iceberg-go it was built with.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	version, iceberg := "(devel)", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/apache/iceberg-go" {
				iceberg = d.Version
			}
		}
	}
	writeln(env.stdout, "icekeeper %s (iceberg-go %s, %s)", version, iceberg, runtime.Version())
	return nil
}
