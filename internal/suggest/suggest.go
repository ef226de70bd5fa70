// Package suggest finds the name a user most likely meant: one "did you
// mean" for commands, flags, job types and configuration keys alike.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the candidate closest to s, or "" when none is close
// enough to be a likely typo: within a Levenshtein distance of half of s,
// or a longer name s is a prefix of ("compact", "unref"). Case is ignored.
func Closest(s string, candidates []string) string {
	best, bestD := "", len(s)/2+1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(ls, lc)
		if strings.HasPrefix(lc, ls) && len(s) >= 3 {
			d = 1
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// DidYouMean returns " (did you mean X?)" for Closest(s, candidates), or
// "" when there is none.
func DidYouMean(s string, candidates []string) string {
	best := Closest(s, candidates)
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
