package main

import (
	"context"
	"errors"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/demo"
	"github.com/icekeeper/icekeeper/internal/progress"
)

func cmdDemo(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "demo", "[--reset]",
		"Creates the embedded default's data directory ($"+configs.EnvHome+", default ./icekeeper-data)\n"+
			"and fills it with the table local/demo/events: a day-partitioned table with\n"+
			"hundreds of small files, position and equality deletes, snapshots over the\n"+
			"last three weeks, and stray files of a crashed writer. Running it again\n"+
			"changes nothing unless --reset is given.")
	reset := fs.Bool("reset", false, "drop the demo table and create it anew")
	appends := fs.Int("appends", 60, "appends (and snapshots) to make; each writes a small file per day it touches")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// The demo always goes into the embedded default, whatever --config
	// or $ICEKEEPER_CONFIG say: it must never write into a user's catalog.
	home, err := embeddedHome()
	if err != nil {
		return err
	}
	reg := configs.Embedded(home).Registry()
	defer reg.Close()
	b, err := reg.Bucket("local")
	if err != nil {
		return err
	}
	update, finish := progress.Bar(env.stderr, "creating demo.events")
	if *appends < 1 {
		return usagef("--appends must be at least 1")
	}
	res, err := demo.Create(ctx, b, demo.Options{Reset: *reset, Appends: *appends, Progress: update})
	finish()
	if errors.Is(err, demo.ErrExists) {
		writeln(env.stdout, "%s/%s/%s already exists in %s; nothing changed (use --reset to recreate it)", b.Name(), demo.Namespace, demo.Table, home)
		return nil
	}
	if err != nil {
		return err
	}
	writeln(env.stdout, "created %s/%s/%s at %s", b.Name(), demo.Namespace, demo.Table, res.Location)
	writeln(env.stdout, "  %d snapshots over the last 3 weeks, %d data files, %d rows written, %d stray files",
		res.Snapshots, res.DataFiles, res.Rows, len(res.StrayFiles))
	writeln(env.stdout, "next: icekeeper tables; icekeeper run --table %s/%s/%s --dry-run", b.Name(), demo.Namespace, demo.Table)
	return nil
}
