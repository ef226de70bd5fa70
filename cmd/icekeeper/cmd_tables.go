package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/internal/health"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/planner"
)

type tableHealth struct {
	Bucket    string `json:"bucket"`
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	health.Health
	Error string `json:"error,omitempty"`
}

func cmdTables(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "tables", "[--json]", "Lists every table of every configured bucket with its health.")
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	w, err := c.open(ctx, false)
	if err != nil {
		return err
	}
	defer w.Close()
	now := time.Now()
	var out []tableHealth
	for _, b := range w.registry.Buckets() {
		lctx, cancel := context.WithTimeoutCause(ctx, c.connectTimeout, fmt.Errorf("no answer within %v", c.connectTimeout))
		ids, err := b.Tables(lctx)
		cancel()
		if err != nil {
			return err
		}
		// The store (settings overrides) once a catalog answered.
		if w.store == nil {
			if err := c.openStore(ctx, w); err != nil {
				return err
			}
		}
		for _, id := range ids {
			th := tableHealth{Bucket: b.Name(), Namespace: id.NamespaceString(), Table: id.Name}
			// One table that cannot be read must not hide the others.
			t := jobs.Target{Bucket: b, Table: id}
			settings, err := w.resolver.Table(ctx, t)
			if err == nil {
				th.Health, err = jobs.Health(ctx, t, settings, now, nil)
			}
			if err != nil {
				th.Error = redact.Text(err.Error())
			}
			out = append(out, th)
		}
	}
	failed := 0
	for _, t := range out {
		if t.Error != "" {
			failed++
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if out == nil {
			out = []tableHealth{}
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else if err := printTables(env, out); err != nil {
		return err
	}
	if failed > 0 {
		// Every table was printed; the exit status says not all could be read.
		return fmt.Errorf("%d of %d tables could not be read", failed, len(out))
	}
	return nil
}

func printTables(env *cliEnv, out []tableHealth) error {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tHEALTH\tCLUSTERING\tDATA FILES\tDELETES\tSIZE\tSMALL FILES\tSNAPSHOTS\tOLDEST SNAP\tMETADATA")
	for _, t := range out {
		if t.Error != "" {
			fmt.Fprintf(tw, "%s\terror: %s\n", t.name(), t.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.0f/100\t%s\t%d\t%d\t%s\t%d (< %s)\t%d\t%s\t%s\n", t.name(), t.Score.Total, clustering(t.Clustering), t.DataFiles, t.DeleteFiles,
			humanBytes(t.TotalBytes), t.SmallFiles, t.smallBelow(), t.Snapshots, humanAge(t.OldestAgeHours), humanBytes(t.MetadataBytes))
	}
	if len(out) == 0 {
		fmt.Fprintln(tw, "(no tables)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if fit(table.String(), false) == table.String() {
		_, err := io.WriteString(env.stdout, table.String())
		return err
	}
	// Long names (or an error message) widen every row past a terminal:
	// each table then gets its name on a line and its figures beneath.
	for _, t := range out {
		writeln(env.stdout, "%s", t.name())
		if t.Error != "" {
			writeln(env.stdout, "%s", fit("    error: "+t.Error, false))
			continue
		}
		writeln(env.stdout, "%s", foldItems("    ", fmt.Sprintf("health %.0f/100", t.Score.Total), "clustering "+clustering(t.Clustering),
			fmt.Sprintf("%d data files", t.DataFiles), fmt.Sprintf("%d delete files", t.DeleteFiles), "size "+humanBytes(t.TotalBytes),
			fmt.Sprintf("%d small files (< %s)", t.SmallFiles, t.smallBelow()), fmt.Sprintf("%d snapshots", t.Snapshots),
			"oldest snapshot "+humanAge(t.OldestAgeHours), "metadata "+humanBytes(t.MetadataBytes)))
	}
	return nil
}

func (t tableHealth) name() string { return t.Bucket + "/" + t.Namespace + "/" + t.Table }

// smallBelow is the size under which a data file counts as small: a
// share of the table's target file size.
func (t tableHealth) smallBelow() string {
	return fmt.Sprintf("%.0f MB", health.SmallFileRatio*float64(t.TargetFileSizeMB))
}

// clustering is the clustering score and the depth behind it, "-" for a
// table without a sort order to measure.
func clustering(c *planner.Clustering) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f/100 (depth %d on %s)", c.Score, c.Depth, strings.Join(c.Columns, ","))
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func humanAge(hours float64) string {
	switch {
	case hours <= 0:
		return "-"
	case hours < 48:
		return fmt.Sprintf("%.0fh ago", hours)
	default:
		return fmt.Sprintf("%.0fd ago", hours/24)
	}
}
