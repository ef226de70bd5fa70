package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/icekeeper/icekeeper/erasure"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/textlist"
	"github.com/icekeeper/icekeeper/maintenance"
)

// erasureRun is one recorded erasure run with its proof, as `icekeeper
// erasure --json` prints it.
type erasureRun struct {
	state.Run
	Proof *erasure.Figures `json:"proof,omitempty"`
}

func cmdErasure(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "erasure", "--table BUCKET/NAMESPACE/TABLE [--runs N] [--verbose | --json]",
		"Shows the proof icebergErasure recorded for the table, newest run first:\n"+
			"the delete commits each run settled, the data and delete files that held\n"+
			"the removed rows, when they were rewritten and found gone from storage,\n"+
			"the snapshots expired, and what is pending or blocked with its deadline.")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE")
	n := fs.Int("runs", 5, "how many recent runs to show")
	asJSON := fs.Bool("json", false, "print the runs and their proofs whole, as JSON")
	verbose := fs.Bool("verbose", false, "print every item of each proof's lists, not the first few")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 1000 {
		return usagef("--runs must be from 1 to 1000, not %d", *n)
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	runs, err := w.store.Runs(ctx, target.Key(), maintenance.Erasure, *n)
	if err != nil {
		return err
	}
	out := make([]erasureRun, len(runs))
	for i, r := range runs {
		out[i].Run = r
		if len(r.Metrics) > 0 {
			out[i].Proof = &erasure.Figures{}
			if err := json.Unmarshal(r.Metrics, out[i].Proof); err != nil {
				return fmt.Errorf("read the proof of run %d: %w", r.ID, err)
			}
		}
		out[i].Metrics = nil
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(out) == 0 {
		writeln(env.stdout, "no erasure run recorded for %s (enable icebergErasure with settings.deadlineDays)", *ref)
		return nil
	}
	if p := out[0].Proof; p != nil && !p.NextDue.IsZero() {
		writeln(env.stdout, "%s: the oldest pending or blocked deletion is due %s", *ref, p.NextDue.UTC().Format(time.RFC3339))
	}
	for _, r := range out {
		writeln(env.stdout, "run %d (%s) at %s: %s", r.ID, r.Trigger, r.Started.UTC().Format(time.RFC3339), r.Status)
		if r.FailureMessage != "" {
			writeln(env.stdout, "  %s", redact.Text(r.FailureMessage))
		}
		if r.Proof != nil {
			limit := textlist.Short
			if *verbose {
				limit = textlist.All
			}
			writeln(env.stdout, "%s", redact.Text(r.Proof.TextItems(limit)))
		}
	}
	return nil
}
