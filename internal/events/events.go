// Package events decodes the change notifications icekeeper accepts on its
// event route: S3 event notifications (AWS's JSON, which MinIO, RustFS and
// Ceph webhooks also send), SeaweedFS's filer webhook, and CloudEvents
// (Lakekeeper's catalog events, or any sender using the shape documented
// on TypeTableChanged).
//
// SeaweedFS sends no S3 notifications: its filer posts every change to its
// namespace as {"key", "event_type", "message"} when notification.toml (or
// WEED_NOTIFICATION_WEBHOOK_* variables) enables [notification.webhook]
// with this route as its endpoint. Parse maps the filer's paths of objects,
// /buckets/BUCKET/KEY, to S3 events like those of the other stores.
//
// Lakekeeper publishes to NATS (structured JSON) and Kafka (binary, in ce_
// headers), not over HTTP; a relay posts its events here in the structured
// or binary mode of the HTTP binding, which Parse reads alike.
//
// It does no I/O: the route reads the body, Parse says which objects and
// tables changed, and the scheduler decides which tables to check. Nothing
// here decides what an event means for a table; an event only names one.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Sources of an Event.
const (
	SourceS3          = "s3"
	SourceCloudEvents = "cloudevents"
)

// Kinds of an Event. Removals are reported rather than dropped so that a
// caller can tell "nothing to do" from "not understood"; a caller that only
// wants work to check skips them.
const (
	KindCreated      = "created"       // an object was written
	KindRemoved      = "removed"       // an object was deleted
	KindTableChanged = "table-changed" // a table was created, committed to, registered, renamed or undropped
	KindTableDropped = "table-dropped" // a table was dropped from its catalog
)

// MaxBody is the largest body Parse decodes. AWS puts a handful of records
// in a notification and webhooks send one, so a larger body is a mistake
// or an attack, not a busy bucket.
const MaxBody = 1 << 20

var (
	// ErrMalformed is wrapped by every error about what a body says: it is
	// the sender's mistake, answered with 400 and not retried as is.
	ErrMalformed = errors.New("malformed event")
	// ErrTooLarge is returned for a body over MaxBody.
	ErrTooLarge = errors.New("event body too large")
)

// Event is one change a notification reports: an object written or
// removed, or a table changed in its catalog.
type Event struct {
	Source string // SourceS3 or SourceCloudEvents
	Kind   string // KindCreated, KindRemoved, KindTableChanged or KindTableDropped
	Type   string // the sender's own name for it: "ObjectCreated:Put", "s3:ObjectCreated:Put", "seaweedfs:create", "updateTable"

	// Bucket and Key name the object of an S3 notification. Key is decoded
	// from the notification's form encoding exactly once (SeaweedFS's
	// paths are not encoded) and is otherwise kept as sent: "a/../b",
	// "a//b" and a NUL byte stay in it. Storage treats such a key as a
	// name of its own, so cleaning it would turn an object written under
	// one prefix into one under another; the caller, which maps keys to
	// tables by prefix, must reject such keys instead.
	Bucket, Key string

	// Location is the object's URI ("s3://bucket/key", with Key as above)
	// or, for a table event, the table's location where the event gives it.
	Location string

	// Namespace (one entry per level) and Name identify the table of a
	// catalog event where it names one. Warehouse is the warehouse's name
	// where the sender gives it; Lakekeeper gives only its id, in
	// WarehouseID, with the table's id in TableID.
	Namespace   []string
	Name        string
	Warehouse   string
	WarehouseID string
	TableID     string

	// Time is when the change happened, as the sender says; zero when it
	// does not (Lakekeeper sets no time).
	Time time.Time

	// Ignored, when set, says why icekeeper does not act on the event: a
	// CloudEvent of a type it does not read, about a view, or naming a
	// table by a name no table here can have. Only ParseAll returns such
	// events; the other fields but Source, Type and Time are then empty.
	Ignored string
}

// Parse decodes the events in one request to the event route from its
// headers and body. The format follows the Content-Type (structured and
// batched CloudEvents), a ce-specversion header (a binary CloudEvent),
// or else the body's shape (an S3 notification, MinIO's wrapping of one,
// a CloudEvent sent as application/json, or a SeaweedFS filer webhook).
//
// Records and events that are about neither objects being written or
// removed nor tables (ObjectAccessed, views, namespaces, AWS's
// s3:TestEvent, SeaweedFS's directories and files outside its buckets)
// are skipped, so a valid body can yield no events. Any part the body
// gets wrong fails the whole body, wrapping ErrMalformed and saying
// where, so that a sender's mistake is not half-applied.
func Parse(h http.Header, body []byte) ([]Event, error) {
	evs, err := ParseAll(h, body)
	return slices.DeleteFunc(evs, func(ev Event) bool { return ev.Ignored != "" }), err
}

// ParseAll is Parse that also returns the CloudEvents icekeeper does not
// act on, each with Ignored saying why, so that a sender can be told
// rather than left to guess.
func ParseAll(h http.Header, body []byte) ([]Event, error) {
	if len(body) > MaxBody {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(body), MaxBody)
	}
	evs, err := parse(h, body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return evs, nil
}

func parse(h http.Header, body []byte) ([]Event, error) {
	switch mediaType(h.Get("Content-Type")) {
	case "application/cloudevents+json":
		m, err := jsonObject("body", body)
		if err != nil {
			return nil, err
		}
		return oneCloudEvent(structured(m))
	case "application/cloudevents-batch+json":
		return parseBatch(body)
	}
	if len(h.Values("Ce-Specversion")) > 0 {
		return oneCloudEvent(binary(h, body))
	}
	return parseUntyped(body)
}

// parseUntyped tells the formats apart by the body alone, as webhooks send
// everything as application/json (or with no type at all).
func parseUntyped(body []byte) ([]Event, error) {
	if err := checkJSON("body", body); err != nil {
		return nil, err
	}
	switch firstByte(body) {
	case '[':
		return batch(body)
	case '{':
	default:
		return nil, errors.New("body is not a JSON object or array")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if records, ok := m["Records"]; ok {
		return parseS3(records)
	}
	if isTestEvent(m) {
		return nil, nil
	}
	if _, ok := m["specversion"]; ok {
		return oneCloudEvent(structured(m))
	}
	if isSeaweedFS(m) {
		return parseSeaweedFS(body)
	}
	return nil, errors.New(`body is neither an S3 event notification (no "Records"), a CloudEvent (no "specversion") nor a SeaweedFS webhook (no "event_type" and "message")`)
}

// mediaType is ct's media type in lower case, without parameters.
func mediaType(ct string) string {
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
