package events

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// cloudEvent is what icekeeper reads of a CloudEvent, however it
// travelled: structured, in a batch, or binary.
type cloudEvent struct {
	typ  string
	time time.Time
	// data is the event's data when it is JSON; nil when the event has
	// none or declares another content type.
	data []byte
	// ext reads an extension attribute (or any other); "" when absent.
	ext func(name string) (string, error)
}

// attrFunc reads a context attribute: its value and whether it is there.
type attrFunc func(name string) (value string, ok bool, err error)

// newCloudEvent checks the attributes CloudEvents 1.0 requires.
func newCloudEvent(attr attrFunc) (cloudEvent, error) {
	spec, ok, err := attr("specversion")
	switch {
	case err != nil:
		return cloudEvent{}, err
	case !ok || spec == "":
		return cloudEvent{}, errors.New("specversion is missing")
	case spec != "1.0":
		return cloudEvent{}, fmt.Errorf("specversion %q is not 1.0", spec)
	}
	var typ string
	for _, name := range []string{"id", "source", "type"} {
		v, ok, err := attr(name)
		if err != nil {
			return cloudEvent{}, err
		}
		if !ok || v == "" {
			return cloudEvent{}, fmt.Errorf("%s is missing", name)
		}
		if name == "type" {
			typ = v
		}
	}
	ts, _, err := attr("time")
	if err != nil {
		return cloudEvent{}, err
	}
	t, err := parseTime("time", ts)
	if err != nil {
		return cloudEvent{}, err
	}
	return cloudEvent{
		typ:  typ,
		time: t,
		ext: func(name string) (string, error) {
			v, _, err := attr(name)
			return v, err
		},
	}, nil
}

// structured reads a CloudEvent in the JSON event format: attributes and
// extensions are members of one object, data is "data" (JSON) or
// "data_base64".
func structured(m map[string]json.RawMessage) (cloudEvent, error) {
	attr := jsonAttr(m)
	ce, err := newCloudEvent(attr)
	if err != nil {
		return cloudEvent{}, err
	}
	ct, _, err := attr("datacontenttype")
	if err != nil {
		return cloudEvent{}, err
	}
	data, b64 := m["data"], m["data_base64"]
	switch {
	case !isNull(data) && !isNull(b64):
		return cloudEvent{}, errors.New("has both data and data_base64")
	case !isJSONType(ct):
	case !isNull(b64):
		var s string
		if err := json.Unmarshal(b64, &s); err != nil {
			return cloudEvent{}, errors.New("data_base64 is not a string")
		}
		if ce.data, err = base64.StdEncoding.DecodeString(s); err != nil {
			return cloudEvent{}, fmt.Errorf("data_base64 is not base64: %w", err)
		}
	case !isNull(data):
		ce.data = data
	}
	return ce, nil
}

// jsonAttr reads attributes from a structured event's members; null is
// taken as absent, as the JSON event format says.
func jsonAttr(m map[string]json.RawMessage) attrFunc {
	return func(name string) (string, bool, error) {
		raw := m[name]
		if isNull(raw) {
			return "", false, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", true, fmt.Errorf("%s is not a string", name)
		}
		return s, true, nil
	}
}

// binary reads a CloudEvent in HTTP binary mode: attributes in ce-
// headers, the data as the body with its own Content-Type.
func binary(h http.Header, body []byte) (cloudEvent, error) {
	ce, err := newCloudEvent(headerAttr(h))
	if err != nil {
		return cloudEvent{}, err
	}
	if isJSONType(h.Get("Content-Type")) && len(bytes.TrimSpace(body)) > 0 {
		ce.data = body
	}
	return ce, nil
}

// headerAttr reads attributes from ce- headers, undoing the percent
// encoding the HTTP binding applies to their values ("+" stays a plus).
func headerAttr(h http.Header) attrFunc {
	return func(name string) (string, bool, error) {
		vs := h.Values("ce-" + name)
		switch len(vs) {
		case 0:
			return "", false, nil
		case 1:
		default:
			return "", true, fmt.Errorf("header ce-%s is repeated", name)
		}
		v, err := url.PathUnescape(vs[0])
		if err != nil {
			return "", true, fmt.Errorf("header ce-%s %q is not percent-encoded: %w", name, vs[0], err)
		}
		if !utf8.ValidString(v) {
			return "", true, fmt.Errorf("header ce-%s %q is not UTF-8 once decoded", name, vs[0])
		}
		return v, true, nil
	}
}

// isJSONType reports whether a datacontenttype is JSON. An absent one is:
// the JSON event format says so, and binary senders that omit it send
// JSON in practice; data that is not JSON is then reported as such.
func isJSONType(ct string) bool {
	if ct == "" {
		return true
	}
	mt := mediaType(ct)
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// parseBatch decodes a batch of structured CloudEvents (a JSON array).
// An empty batch is valid and holds no events.
func parseBatch(body []byte) ([]Event, error) {
	if err := checkJSON("body", body); err != nil {
		return nil, err
	}
	return batch(body)
}

// batch is parseBatch on a body known to be JSON.
func batch(body []byte) ([]Event, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, errors.New("body is not a JSON array of CloudEvents")
	}
	var evs []Event
	for i, it := range items {
		where := fmt.Sprintf("cloudevent %d of %d", i+1, len(items))
		var m map[string]json.RawMessage
		if err := json.Unmarshal(it, &m); err != nil || m == nil {
			return nil, fmt.Errorf("%s is not a JSON object", where)
		}
		ev, err := tableEventOf(structured(m))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if ev.Ignored != "" {
			ev.Ignored = where + ": " + ev.Ignored
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// oneCloudEvent is the events of a request that carries one CloudEvent.
func oneCloudEvent(ce cloudEvent, err error) ([]Event, error) {
	ev, err := tableEventOf(ce, err)
	if err != nil {
		return nil, fmt.Errorf("cloudevent: %w", err)
	}
	if ev.Ignored != "" {
		ev.Ignored = "cloudevent: " + ev.Ignored
	}
	return []Event{ev}, nil
}

func tableEventOf(ce cloudEvent, err error) (Event, error) {
	if err != nil {
		return Event{}, err
	}
	return ce.tableEvent()
}
