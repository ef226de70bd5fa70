// Package human formats figures for people: sizes, durations, money and
// counts with their nouns, as one-line run summaries and the dashboard
// show them. Machine-readable output keeps the raw numbers.
package human

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Bytes is n bytes in binary units with one decimal ("1.5 MiB"), bytes
// under 1 KiB as they are ("512 B").
func Bytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n), 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// Duration is d as an operator reads it: milliseconds under a second,
// seconds with one decimal under a minute, then minutes and seconds, then
// hours and minutes.
func Duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%d min %d s", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%d h %d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// USD is an amount of dollars: cents from a cent up, else two
// significant digits, so that the fraction of a cent a run's requests
// cost is still told apart from nothing ("$0.000012").
func USD(v float64) string {
	if v == 0 {
		return "$0"
	}
	if math.Abs(v) >= 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	decimals := int(math.Ceil(-math.Log10(math.Abs(v)))) + 1
	return "$" + strconv.FormatFloat(v, 'f', decimals, 64)
}

// Count is n with its noun, plural unless n is 1: Count(3, "file") is
// "3 files".
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
