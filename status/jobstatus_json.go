package status

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The job-status call is the API's busiest: the SDK's and the CLI's
// pollers call it for every table. Its answer is written by hand, not by
// encoding/json's reflection, which was half of the handler's CPU; the
// bytes are the same as json.Encoder's (TestJobStatusJSON holds them
// together).

// appendJSON is json.Encoder's encoding of r, without its final newline.
func (r jobStatusResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"tableARN":`...)
	b = appendJSONString(b, r.TableARN)
	b = append(b, `,"status":{`...)
	types := make([]maintenance.JobType, 0, len(r.Status))
	for typ := range r.Status {
		types = append(types, typ)
	}
	slices.Sort(types) // encoding/json sorts a map's keys
	for i, typ := range types {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, string(typ))
		b = append(b, ':')
		b = r.Status[typ].appendJSON(b)
	}
	return append(b, "}}"...)
}

func (w wireStatus) appendJSON(b []byte) []byte {
	b = append(b, `{"status":`...)
	b = appendJSONString(b, w.Status)
	if w.LastRunTimestamp != "" {
		b = append(b, `,"lastRunTimestamp":`...)
		b = appendJSONString(b, w.LastRunTimestamp)
	}
	if w.FailureMessage != "" {
		b = append(b, `,"failureMessage":`...)
		b = appendJSONString(b, w.FailureMessage)
	}
	if w.Cost != nil {
		b = append(b, `,"cost":`...)
		if w.costJSON != "" {
			b = append(b, w.costJSON...)
		} else { // a map inside: encoding/json's
			c, _ := json.Marshal(w.Cost) // numbers and strings: it always encodes
			b = append(b, c...)
		}
	}
	if w.Freshness != nil {
		b = append(b, `,"freshness":`...)
		b = appendLagView(b, w.Freshness)
	}
	return append(b, '}')
}

func appendLagView(b []byte, v *jobs.LagView) []byte {
	b = append(b, '{')
	if v.TargetSeconds != 0 {
		b = append(b, `"targetSeconds":`...)
		b = appendJSONFloat(b, v.TargetSeconds)
		b = append(b, ',')
	}
	b = append(b, `"lagSeconds":`...)
	b = appendJSONFloat(b, v.LagSeconds)
	if v.Late {
		b = append(b, `,"late":true`...)
	}
	if v.Oldest != "" {
		b = append(b, `,"oldest":`...)
		b = appendJSONString(b, v.Oldest)
	}
	if v.Since != nil {
		b = append(b, `,"since":`...)
		b = appendJSONTime(b, *v.Since)
	}
	if v.Waits != "" {
		b = append(b, `,"waits":`...)
		b = appendJSONString(b, v.Waits)
	}
	b = append(b, `,"checked":`...)
	b = appendJSONTime(b, v.Checked)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string. A string of printable
// ASCII that encoding/json leaves as it is (it escapes quotes,
// backslashes and, for HTML, <, > and &) is copied; any other is
// encoding/json's.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat is encoding/json's float64: the shortest decimal that
// reads back as f, in exponent form outside [1e-6, 1e21), with a
// one-digit negative exponent written without its leading zero. Lags
// are finite: NaN and infinities, which encoding/json refuses, are
// written as 0.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONTime is time.Time's MarshalJSON (RFC 3339 with nanoseconds).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
