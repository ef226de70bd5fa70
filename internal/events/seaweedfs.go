package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SeaweedFS filer paths. The filer keeps each S3 bucket as a directory
// under bucketsDir (filer.options.buckets_folder at its default, where S3
// Tables also keeps its table buckets), beside folders of its own whose
// names start with "." as no bucket's can (.system). A multipart upload's
// parts lie under uploadsDir in the bucket until the upload completes and
// writes the object at its own key.
const (
	bucketsDir = "/buckets/"
	uploadsDir = ".uploads/"
)

// seaweedNotification is the body SeaweedFS's filer webhook posts
// (weed/notification/webhook/http.go): the filer path the change is about,
// the event type, and the filer's EventNotification as encoding/json
// writes its generated struct, with snake_case names and zero fields
// left out (so a false is_directory is absent).
type seaweedNotification struct {
	Key       *string `json:"key"`
	EventType string  `json:"event_type"`
	Message   *struct {
		OldEntry      *seaweedEntry `json:"old_entry"`
		NewEntry      *seaweedEntry `json:"new_entry"`
		NewParentPath string        `json:"new_parent_path"`
	} `json:"message"`
}

// seaweedEntry is what icekeeper reads of a filer entry. Chunks,
// attributes and extended attributes are left out: none says which object
// changed, and the extended ones are base64 of anything.
type seaweedEntry struct {
	Name        string `json:"name"`
	IsDirectory bool   `json:"is_directory"`
}

// isSeaweedFS reports whether m has the shape of a SeaweedFS webhook
// body. It goes by event_type and message alone, which no other format
// here has (a CloudEvent attribute's name cannot hold "_"), so that a body
// missing its key is reported as such rather than as unknown.
func isSeaweedFS(m map[string]json.RawMessage) bool {
	_, typ := m["event_type"]
	_, msg := m["message"]
	return typ && msg
}

// parseSeaweedFS decodes a SeaweedFS filer webhook body.
//
// key is the path of the entry before the change: the new entry's for a
// create, the old one's for the rest (weed/notification/event_type.go).
// The filer sends "update" for an entry written again at its path, as for
// an overwritten object, so it is a write like "create"; an update of
// metadata alone (tags, an ACL) reads the same, and costs only a needless
// look at a table. A "rename" moves the entry to new_parent_path and the
// new entry's name: the object is gone from key and written at the new
// path, and both are reported.
//
// Directories carry no object, so their events yield none; the filer
// reports each file of a directory it renames or deletes on its own. Nor do
// paths outside a bucket (the filer's own /etc, /topics) or a multipart
// upload's parts. The body gives no time of the change, so Time is zero.
func parseSeaweedFS(body []byte) ([]Event, error) {
	evs, err := seaweedEvents(body)
	if err != nil {
		return nil, fmt.Errorf("seaweedfs webhook: %w", err)
	}
	return evs, nil
}

func seaweedEvents(body []byte) ([]Event, error) {
	var n seaweedNotification
	if err := json.Unmarshal(body, &n); err != nil {
		return nil, err
	}
	switch {
	case n.Key == nil:
		return nil, errors.New("key is missing")
	case *n.Key == "":
		return nil, errors.New("key is empty")
	case n.Message == nil:
		return nil, errors.New("message is missing")
	}
	key, msg, typ := *n.Key, n.Message, "seaweedfs:"+n.EventType

	entry, field := msg.NewEntry, "new_entry"
	switch n.EventType {
	case "create", "update", "rename":
	case "delete":
		entry, field = msg.OldEntry, "old_entry"
	case "":
		return nil, errors.New("event_type is missing")
	default:
		return nil, fmt.Errorf("event_type %q is none of create, update, delete and rename", n.EventType)
	}
	switch {
	case entry == nil:
		return nil, fmt.Errorf("%s of %q has no message.%s", n.EventType, key, field)
	case entry.IsDirectory:
		return nil, nil
	}

	switch n.EventType {
	case "create", "update":
		return objectEvents(KindCreated, typ, key)
	case "delete":
		return objectEvents(KindRemoved, typ, key)
	}
	if msg.NewParentPath == "" || entry.Name == "" {
		return nil, fmt.Errorf("rename of %q has no message.new_parent_path or message.new_entry.name", key)
	}
	removed, err := objectEvents(KindRemoved, typ, key)
	if err != nil {
		return nil, err
	}
	created, err := objectEvents(KindCreated, typ, childPath(msg.NewParentPath, entry.Name))
	if err != nil {
		return nil, err
	}
	return append(removed, created...), nil
}

// objectEvents is the event of a change at a filer path: one when the path
// is an S3 object, none when it is not.
func objectEvents(kind, typ, path string) ([]Event, error) {
	bucket, key, ok, err := bucketObject(path)
	if err != nil || !ok {
		return nil, err
	}
	return []Event{{
		Source:   SourceS3,
		Kind:     kind,
		Type:     typ,
		Bucket:   bucket,
		Key:      key,
		Location: "s3://" + bucket + "/" + key,
	}}, nil
}

// childPath joins a directory's filer path and an entry's name as the
// filer does (util.FullPath.Child): one "/" between them, unless the
// directory ends in one, and a leading "/" of the name dropped.
func childPath(dir, name string) string {
	name = strings.TrimPrefix(name, "/")
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// bucketObject splits a filer path under bucketsDir into the S3 bucket and
// key it holds, the key exactly as it is in the path (see Event.Key); ok is
// false for a path that is no S3 object: outside every bucket, a bucket
// itself, in the filer's own folders, or a multipart upload's part.
func bucketObject(path string) (bucket, key string, ok bool, err error) {
	if !strings.HasPrefix(path, "/") {
		return "", "", false, fmt.Errorf("path %q is not an absolute filer path", path)
	}
	rest, found := strings.CutPrefix(path, bucketsDir)
	if !found {
		return "", "", false, nil
	}
	bucket, key, found = strings.Cut(rest, "/")
	switch {
	case !found, strings.HasPrefix(bucket, "."):
		return "", "", false, nil
	case bucket == "":
		return "", "", false, fmt.Errorf("path %q names no bucket", path)
	case key == "":
		return "", "", false, fmt.Errorf("path %q names no object in bucket %q", path, bucket)
	case strings.HasPrefix(key, uploadsDir):
		return "", "", false, nil
	}
	return bucket, key, true, nil
}
