package jobs

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/icekeeper/icekeeper/internal/human"
	"github.com/icekeeper/icekeeper/internal/state"
)

// Cost is what a run's storage requests cost, as its figures record it
// under "cost": USD at the bucket's prices, and S3TablesUSD, what Amazon
// S3 Tables' managed maintenance would charge for the same work (0: not
// told). Known is false for figures without a cost (runs recorded before
// costs were, or a type that records none).
type Cost struct {
	USD         float64 `json:"usd"`
	S3TablesUSD float64 `json:"s3TablesUSD"`
	Known       bool    `json:"-"`
}

// CostOf reads a run's cost from its recorded figures. It reads them
// loosely: a field of another shape, or no cost at all, is a cost not
// known, never an error, so that a summary never fails for want of it.
func CostOf(figures json.RawMessage) Cost {
	var f struct {
		Cost map[string]any `json:"cost"`
	}
	if len(figures) == 0 || json.Unmarshal(figures, &f) != nil || f.Cost == nil {
		return Cost{}
	}
	number := func(k string) float64 {
		v, _ := f.Cost[k].(float64)
		return v
	}
	return Cost{USD: number("usd"), S3TablesUSD: number("s3TablesUSD"), Known: true}
}

// maxWhat bounds what a run did in a summary, so that the line, with its
// duration and cost, stays one line on a terminal and the dashboard.
const maxWhat = 80

// RunSummary is a recorded run in one line: what it did in its type's
// words (Definition.Summary), how long it took and what its requests
// cost, e.g. "234 files -> 21 files, 3.2 s, $0.000012 (S3 Tables would
// charge $0.0012)". The runs route serves it and the dashboard shows it;
// j is the run's type (nil: a type this build does not have).
func RunSummary(j Job, r state.Run) string {
	what := ""
	if j != nil {
		what = j.Summarize(r.Metrics)
	}
	switch r.Status {
	case state.Running:
		return "running"
	case state.Disabled:
		return "disabled"
	case state.Failed:
		if what == "" {
			what = "failed"
		} else {
			what = "failed; " + what
		}
	case state.Skipped:
		if what == "" {
			what = "skipped"
			if msg, _, _ := strings.Cut(r.FailureMessage, "\n"); msg != "" {
				what += ": " + msg
			}
		}
	}
	if what == "" {
		what = strings.ToLower(string(r.Status))
	}
	parts := []string{shorten(what, maxWhat)}
	if !r.Finished.IsZero() && !r.Started.IsZero() && r.Finished.After(r.Started) {
		parts = append(parts, human.Duration(r.Finished.Sub(r.Started)))
	}
	if c := CostOf(r.Metrics); c.Known {
		cost := human.USD(c.USD)
		if c.S3TablesUSD != 0 {
			cost += " (S3 Tables would charge " + human.USD(c.S3TablesUSD) + ")"
		}
		parts = append(parts, cost)
	}
	return strings.Join(parts, ", ")
}

// shorten cuts s to at most n characters, an ellipsis ending what was cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
