package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/suggest"
	"github.com/icekeeper/icekeeper/maintenance"
)

// parseJob reads --job: a job type, its short name (the alias in
// maintenance's type table; the API takes only the former, as S3 Tables
// does), or all.
func parseJob(s string) ([]maintenance.JobType, error) {
	if s == "all" {
		return maintenance.JobTypes(), nil
	}
	if t, ok := maintenance.ByAlias(s); ok {
		return []maintenance.JobType{t}, nil
	}
	if t, err := maintenance.ParseJobType(s); err == nil {
		return []maintenance.JobType{t}, nil
	}
	names := []string{"all"}
	var aliases, full []string
	for _, t := range maintenance.Types() {
		aliases, full = append(aliases, t.Alias), append(full, string(t.Name))
	}
	names = append(append(names, aliases...), full...)
	return nil, usagef("--job: unknown job type %q%s (want %s, all, or the names %s)",
		s, suggest.DidYouMean(s, names), strings.Join(aliases, ", "), strings.Join(full, ", "))
}

// jobFlagHelp is --job's usage, from the type table, so that a job type
// added there is listed here too.
func jobFlagHelp() string {
	var aliases []string
	for _, t := range maintenance.Types() {
		aliases = append(aliases, t.Alias)
	}
	first := maintenance.Types()[:2]
	return fmt.Sprintf("%s (or their names %s, %s, …) or all, which runs them in that order",
		strings.Join(aliases, ", "), first[0].Name, first[1].Name)
}

// flagNames lists fs's flags as they are written, with two dashes.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}

// suggestTable adds to err, when r names no table of b, the likeliest
// table meant, as --table writes it. The listing is one catalog call,
// made only once the reference failed; when it fails too, err stands.
func suggestTable(ctx context.Context, b *bucket.Bucket, r bucket.Ref, err error) error {
	if !errors.Is(err, bucket.ErrNoSuchTable) {
		return err
	}
	ids, lerr := b.Tables(ctx)
	if lerr != nil {
		return err
	}
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = bucket.Ref{Bucket: b.Name(), Table: id}.String()
	}
	return fmt.Errorf("%w%s", err, suggest.DidYouMean(r.String(), refs))
}
