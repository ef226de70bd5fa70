package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

func cmdNoncurrent(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "noncurrent", "--table BUCKET/NAMESPACE/TABLE [--verbose | --json]",
		"Lists the table's noncurrent objects: unreferenced objects that\n"+
			"icebergUnreferencedFileRemoval marked, with when each becomes due for\n"+
			"deletion; and the objects `icekeeper restore` protected, which are kept\n"+
			"until `icekeeper release` or until the table references them again.")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE")
	droppedFrom := fs.String("dropped", "", "BUCKET: instead of a table, the noncurrent objects the tables dropped from the bucket left, per dropped table")
	asJSON := fs.Bool("json", false, "print JSON")
	verbose := fs.Bool("verbose", false, "print every path whole, however wide (as restore --path takes it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *droppedFrom != "" {
		if *ref != "" {
			return usagef("give --table or --dropped, not both")
		}
		return droppedNoncurrent(ctx, env, c, *droppedFrom, *asJSON)
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	settings, err := w.resolver.Table(ctx, target)
	if err != nil {
		return err
	}
	list, err := orphan.ListNoncurrent(ctx, w.store, target.Key(), *settings.For(maintenance.UnreferencedFileRemoval).Removal().NonCurrentDays)
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
	return printNoncurrent(env, list, *verbose)
}

// printNoncurrent prints list as a table, or, where the paths make its
// lines wider than a terminal, each object as its path and a line of its
// dates beneath, the path shortened in its middle unless verbose.
func printNoncurrent(env *cliEnv, list []orphan.Noncurrent, verbose bool) error {
	after := func(n orphan.Noncurrent) string {
		if n.Protected() {
			return "never: protected " + n.ProtectedAt.Format(time.RFC3339)
		}
		return n.DeleteAfter.Format(time.RFC3339)
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tLAST MODIFIED\tMARKED\tDELETE AFTER")
	for _, n := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Path, humanBytes(n.Size), n.LastModified.Format(time.RFC3339), n.MarkedAt.Format(time.RFC3339), after(n))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if fit(table.String(), false) == table.String() {
		_, err := io.WriteString(env.stdout, table.String())
		return err
	}
	shortened := false
	for _, n := range list {
		path := n.Path
		if !verbose && utf8.RuneCountInString(path) > lineWidth {
			path, shortened = middle(path, lineWidth), true
		}
		writeln(env.stdout, "%s", path)
		writeln(env.stdout, "%s", fit(fmt.Sprintf("    %s, last modified %s, marked %s, delete after %s", humanBytes(n.Size),
			n.LastModified.Format(time.RFC3339), n.MarkedAt.Format(time.RFC3339), after(n)), false))
	}
	if shortened {
		writeln(env.stdout, "(paths shortened in the middle: --verbose or --json prints them whole, as restore --path takes them)")
	}
	return nil
}

// droppedNoncurrent lists, per table dropped from the bucket ref, the
// noncurrent objects its leftovers removal marked, with their size.
func droppedNoncurrent(ctx context.Context, env *cliEnv, c commonFlags, ref string, asJSON bool) error {
	w, b, recs, err := c.openDropped(ctx, ref)
	if err != nil {
		return err
	}
	defer w.Close()
	cfg, err := w.resolver.Bucket(ctx, b.ARN(), maintenance.UnreferencedFileRemoval)
	if err != nil {
		return err
	}
	type dropped struct {
		Table     string              `json:"table"`
		TableUUID string              `json:"tableUUID"`
		DroppedAt time.Time           `json:"droppedAt"`
		Bytes     int64               `json:"bytes"`
		Objects   []orphan.Noncurrent `json:"objects"`
	}
	out := []dropped{}
	for _, rec := range recs {
		list, err := orphan.ListNoncurrent(ctx, w.store, rec.StateKey(), *cfg.Removal().NonCurrentDays)
		if err != nil {
			return err
		}
		d := dropped{Table: rec.Key.Namespace + "." + rec.Key.Name, TableUUID: rec.UUID, DroppedAt: rec.Dropped, Objects: list}
		if d.Objects == nil {
			d.Objects = []orphan.Noncurrent{}
		}
		for _, n := range list {
			d.Bytes += n.Size
		}
		out = append(out, d)
	}
	if asJSON {
		return writeJSON(env.stdout, out)
	}
	if len(out) == 0 {
		writeln(env.stdout, "no table dropped from %s is recorded", b.Name())
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DROPPED TABLE\tTABLE UUID\tDROPPED\tNONCURRENT\tSIZE\tFIRST DELETION")
	for _, d := range out {
		first := "-"
		for _, n := range d.Objects {
			if !n.Protected() && (first == "-" || n.DeleteAfter.Format(time.RFC3339) < first) {
				first = n.DeleteAfter.Format(time.RFC3339)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.Table, d.TableUUID, d.DroppedAt.Format(time.RFC3339), len(d.Objects), humanBytes(d.Bytes), first)
	}
	return tw.Flush()
}

func cmdRestore(ctx context.Context, env *cliEnv, args []string) error {
	return protection(ctx, env, args, "restore",
		"Protects noncurrent objects: they are not deleted and not marked again\n"+
			"until `icekeeper release`, or until the table references them again.\n"+
			"`icekeeper noncurrent` lists them. Nothing in storage changes.",
		func(ctx context.Context, w *world, t jobs.Target, paths []string) (int, error) {
			return orphan.Restore(ctx, w.store, t.Key(), paths, time.Now())
		}, "restored")
}

func cmdRelease(ctx context.Context, env *cliEnv, args []string) error {
	return protection(ctx, env, args, "release",
		"Ends the protection `icekeeper restore` gave: the next run of\n"+
			"icebergUnreferencedFileRemoval evaluates the objects afresh, and marks\n"+
			"those still unreferenced noncurrent with a full nonCurrentDays ahead.",
		func(ctx context.Context, w *world, t jobs.Target, paths []string) (int, error) {
			return orphan.Release(ctx, w.store, t.Key(), paths)
		}, "released")
}

// protection is restore and release: same flags, opposite changes.
func protection(ctx context.Context, env *cliEnv, args []string, name, summary string,
	apply func(context.Context, *world, jobs.Target, []string) (int, error), done string) error {
	var c commonFlags
	fs := newFlagSet(env, name, "--table BUCKET/NAMESPACE/TABLE (--path PATH | --all)", summary)
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE")
	path := fs.String("path", "", "one object's path, as icekeeper noncurrent lists it, or its file name or path relative to the table's location when that names one object")
	all := fs.Bool("all", false, "every such object of the table")
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
		p, err := namedPath(ctx, w, target, *ref, *path, name == "release")
		if err != nil {
			return err
		}
		paths = []string{p}
	}
	n, err := apply(ctx, w, target, paths)
	if err != nil {
		return err
	}
	writeln(env.stdout, "%s %d object(s) of %s", done, n, *ref)
	if len(paths) == 1 && paths[0] != *path {
		writeln(env.stdout, "  %s", paths[0])
	}
	return nil
}

// namedPath is the full path of the one noncurrent object of t, which
// ref names (a protected one, if protected), that p names, whole or by
// its end; none or several is a usage error saying which.
func namedPath(ctx context.Context, w *world, t jobs.Target, ref, p string, protected bool) (string, error) {
	marks, err := w.store.Marks(ctx, t.Key())
	if err != nil {
		return "", err
	}
	what := "noncurrent"
	if protected {
		what = "protected"
	}
	switch named := orphan.Named(marks, p, protected); len(named) {
	case 1:
		return named[0], nil
	case 0:
		return "", usagef("%s is not a %s object of %s, nor the end of one's path; `icekeeper noncurrent --table %s` lists them",
			p, what, ref, ref)
	default:
		shown := named[:min(len(named), 5)]
		more := ""
		if len(named) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(named)-len(shown))
		}
		return "", usagef("%s names %d %s objects of %s: %s%s; give more of the path",
			p, len(named), what, ref, strings.Join(shown, ", "), more)
	}
}
