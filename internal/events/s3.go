package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// s3Record is the part of an S3 event notification record icekeeper
// reads. Sizes, ETags and identities are left out: Ceph sends the size as
// a string, and nothing here needs them.
type s3Record struct {
	EventName string `json:"eventName"`
	EventTime string `json:"eventTime"`
	S3        *struct {
		Bucket *struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object *struct {
			Key *string `json:"key"`
		} `json:"object"`
	} `json:"s3"`
}

// parseS3 decodes the Records of an S3 event notification. MinIO wraps
// them as {"EventName", "Key", "Records"}; only Records is read, as the
// wrapper repeats the first record.
func parseS3(raw json.RawMessage) ([]Event, error) {
	var records []json.RawMessage
	if err := json.Unmarshal(raw, &records); err != nil {
		return nil, errors.New("Records is not an array")
	}
	if len(records) == 0 {
		return nil, errors.New("Records is empty")
	}
	var evs []Event
	for i, r := range records {
		ev, ok, err := s3Event(r)
		if err != nil {
			return nil, fmt.Errorf("record %d of %d: %w", i+1, len(records), err)
		}
		if ok {
			evs = append(evs, ev)
		}
	}
	return evs, nil
}

// s3Event decodes one record; ok is false for an event that is neither a
// write nor a removal.
func s3Event(raw json.RawMessage) (ev Event, ok bool, err error) {
	var r s3Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Event{}, false, fmt.Errorf("not an S3 event record: %w", err)
	}
	if r.EventName == "" {
		return Event{}, false, errors.New("eventName is missing")
	}
	// AWS names events "ObjectCreated:Put"; MinIO and older Ceph put the
	// "s3:" of the notification configuration in front.
	name := strings.TrimPrefix(r.EventName, "s3:")
	var kind string
	switch {
	case strings.HasPrefix(name, "ObjectCreated:"):
		kind = KindCreated
	case strings.HasPrefix(name, "ObjectRemoved:"):
		kind = KindRemoved
	default:
		return Event{}, false, nil
	}
	switch {
	case r.S3 == nil:
		return Event{}, false, errors.New("s3 is missing")
	case r.S3.Bucket == nil || r.S3.Bucket.Name == "":
		return Event{}, false, errors.New("s3.bucket.name is missing")
	case strings.Contains(r.S3.Bucket.Name, "/"):
		// A slash would let bucket and key run together into another
		// bucket's location.
		return Event{}, false, fmt.Errorf("s3.bucket.name %q is not a bucket name", r.S3.Bucket.Name)
	case r.S3.Object == nil || r.S3.Object.Key == nil:
		return Event{}, false, errors.New("s3.object.key is missing")
	case *r.S3.Object.Key == "":
		return Event{}, false, errors.New("s3.object.key is empty")
	}
	key, err := decodeKey(*r.S3.Object.Key)
	if err != nil {
		return Event{}, false, err
	}
	t, err := parseTime("eventTime", r.EventTime)
	if err != nil {
		return Event{}, false, err
	}
	bucket := r.S3.Bucket.Name
	return Event{
		Source:   SourceS3,
		Kind:     kind,
		Type:     r.EventName,
		Bucket:   bucket,
		Key:      key,
		Location: "s3://" + bucket + "/" + key,
		Time:     t,
	}, true, nil
}

// decodeKey undoes the form encoding S3 notifications use for keys ("+"
// is a space, "%2B" a plus), once: a key that still holds "%2e%2e" after
// that is named so in storage. The result is not cleaned as a path (see
// Event.Key) but must be UTF-8, as S3 keys are.
func decodeKey(k string) (string, error) {
	key, err := url.QueryUnescape(k)
	if err != nil {
		return "", fmt.Errorf("s3.object.key %q is not form-encoded: %w", k, err)
	}
	if !utf8.ValidString(key) {
		return "", fmt.Errorf("s3.object.key %q is not UTF-8 once decoded", k)
	}
	return key, nil
}

// isTestEvent reports whether m is the s3:TestEvent AWS sends when a
// notification configuration is saved: a valid body with no records.
func isTestEvent(m map[string]json.RawMessage) bool {
	var ev string
	return json.Unmarshal(m["Event"], &ev) == nil && ev == "s3:TestEvent"
}

// parseTime parses an RFC 3339 time; "" is the zero time.
func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", field, s)
	}
	return t, nil
}
