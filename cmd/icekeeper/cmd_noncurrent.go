package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/internal/maintenance"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/orphan"
)

func cmdNoncurrent(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "noncurrent", "--table BUCKET/NAMESPACE/TABLE [--json]",
		"Lists the table's noncurrent objects: unreferenced objects that\n"+
			"icebergUnreferencedFileRemoval marked, with when each becomes due for\n"+
			"deletion. `icekeeper restore` clears marks during that window.")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	settings, err := (&jobs.Runner{Store: w.store}).Settings(ctx, target, maintenance.UnreferencedFileRemoval)
	if err != nil {
		return err
	}
	list, err := orphan.ListNoncurrent(ctx, w.store, target.Key(), *settings.Removal.NonCurrentDays)
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []orphan.Noncurrent{}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list) == 0 {
		writeln(env.stdout, "no noncurrent objects in %s", *ref)
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tLAST MODIFIED\tMARKED\tDELETE AFTER")
	for _, n := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Path, humanBytes(n.Size), n.LastModified.Format(time.RFC3339), n.MarkedAt.Format(time.RFC3339), n.DeleteAfter.Format(time.RFC3339))
	}
	return tw.Flush()
}

func cmdRestore(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "restore", "--table BUCKET/NAMESPACE/TABLE (--path PATH | --all)",
		"Clears noncurrent marks so the objects are not deleted; the next run of\n"+
			"icebergUnreferencedFileRemoval evaluates them afresh (and marks them again\n"+
			"if they are still unreferenced).")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE")
	path := fs.String("path", "", "the object to restore, as `noncurrent` lists it")
	all := fs.Bool("all", false, "restore every noncurrent object of the table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*path == "") == !*all {
		return usagef("give exactly one of --path or --all")
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	var paths []string
	if !*all {
		paths = []string{*path}
	}
	n, err := orphan.Restore(ctx, w.store, target.Key(), paths)
	if err != nil {
		return err
	}
	writeln(env.stdout, "restored %d noncurrent object(s) of %s", n, *ref)
	return nil
}
