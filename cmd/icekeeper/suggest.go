package main

import (
	"flag"
	"fmt"
	"strings"

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
		s, didYouMean(s, names), strings.Join(aliases, ", "), strings.Join(full, ", "))
}

// didYouMean returns " (did you mean X?)" for the candidate closest to s,
// or "" when none is close enough to be a likely typo.
func didYouMean(s string, candidates []string) string {
	best, bestD := "", len(s)/2+1
	for _, c := range candidates {
		d := distance(strings.ToLower(s), strings.ToLower(c))
		if strings.HasPrefix(strings.ToLower(c), strings.ToLower(s)) && len(s) >= 3 {
			d = 1 // a prefix of a longer name: "compact", "unref"
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// flagNames lists fs's flags as they are written, with two dashes.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}
