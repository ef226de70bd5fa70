package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/icekeeper/icekeeper/internal/rebase"
)

// errNotVerified is a commit whose rows storage does not bear out (exit 1).
var errNotVerified = errors.New("not verified")

func cmdVerify(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "verify", "--table BUCKET/NAMESPACE/TABLE [--snapshot ID] [--json]",
		"Recomputes from storage what a commit did to the table's rows: the row\n"+
			"digest of the data files it replaced or whose deletes it changed, as its\n"+
			"parent saw them (deletes applied), against that of the files it wrote.\n"+
			"Where the commit's summary carries icekeeper's claim (icekeeper.rows-read,\n"+
			"icekeeper.rows-written), the claim is checked too. Prints \"verified\" or\n"+
			"names what differs. The snapshot defaults to the newest with a claim, or\n"+
			"the current one. Exit codes: 0 verified, 1 differs, 2 bad input.")
	c.register(fs)
	ref := fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE")
	snapFlag := fs.String("snapshot", "", "snapshot ID of the commit to verify")
	asJSON := fs.Bool("json", false, "print the recomputed change as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var id int64
	if *snapFlag != "" {
		v, err := strconv.ParseInt(*snapFlag, 10, 64)
		if err != nil {
			return usagef("--snapshot %q is not a snapshot ID", *snapFlag)
		}
		id = v
	}
	w, target, err := c.openTable(ctx, *ref)
	if err != nil {
		return err
	}
	defer w.Close()
	tbl, err := target.Bucket.LoadTable(ctx, target.Table)
	if err != nil {
		return fmt.Errorf("load %s: %w", *ref, err)
	}
	if id == 0 {
		snap := rebase.LastClaim(tbl)
		if snap == nil {
			snap = tbl.CurrentSnapshot()
		}
		if snap == nil {
			return usagef("%s has no snapshot to verify", *ref)
		}
		id = snap.SnapshotID
	} else if tbl.Metadata().SnapshotByID(id) == nil {
		return usagef("%s has no snapshot %d", *ref, id)
	}
	change, err := rebase.Recompute(ctx, tbl, id)
	if errors.Is(err, rebase.ErrNotRewrite) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(env.stdout, change); err != nil {
			return err
		}
	} else {
		io.WriteString(env.stdout, change.Report())
	}
	if !change.Kept() {
		return errNotVerified
	}
	return nil
}
