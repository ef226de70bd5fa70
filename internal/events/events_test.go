package events

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// awsNotification has the shape AWS documents for S3 event notification
// messages, with keys form-encoded as S3 sends them.
const awsNotification = `{
  "Records": [
    {
      "eventVersion": "2.1",
      "eventSource": "aws:s3",
      "awsRegion": "us-east-1",
      "eventTime": "2024-05-01T12:00:00.123Z",
      "eventName": "ObjectCreated:Put",
      "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
      "requestParameters": {"sourceIPAddress": "203.0.113.7"},
      "responseElements": {"x-amz-request-id": "C3D13FE58DE4C810", "x-amz-id-2": "FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
      "s3": {
        "s3SchemaVersion": "1.0",
        "configurationId": "icekeeper",
        "bucket": {"name": "lake", "ownerIdentity": {"principalId": "A3NL1KOZZKExample"}, "arn": "arn:aws:s3:::lake"},
        "object": {"key": "sales/orders/data/ts_day%3D2024-05-01/part+00001+copy.parquet", "size": 1024, "eTag": "d41d8cd98f00b204e9800998ecf8427e", "sequencer": "0055AED6DCD90281E5"}
      }
    },
    {
      "eventVersion": "2.1",
      "eventSource": "aws:s3",
      "awsRegion": "us-east-1",
      "eventTime": "2024-05-01T12:00:01Z",
      "eventName": "ObjectCreated:CompleteMultipartUpload",
      "s3": {
        "s3SchemaVersion": "1.0",
        "bucket": {"name": "lake", "arn": "arn:aws:s3:::lake"},
        "object": {"key": "sales/orders/data/a%2Bb.parquet", "size": 2048}
      }
    },
    {
      "eventVersion": "2.1",
      "eventSource": "aws:s3",
      "eventTime": "2024-05-01T12:00:02Z",
      "eventName": "ObjectRestore:Completed",
      "s3": {"bucket": {"name": "lake"}, "object": {"key": "sales/orders/data/old.parquet"}}
    },
    {
      "eventVersion": "2.1",
      "eventSource": "aws:s3",
      "eventTime": "2024-05-01T12:00:03Z",
      "eventName": "ObjectCreated:Copy",
      "s3": {"bucket": {"name": "lake"}, "object": {"key": "sales/orders/metadata/caf%C3%A9-00002.metadata.json", "size": 3000}}
    },
    {
      "eventVersion": "2.1",
      "eventSource": "aws:s3",
      "eventTime": "2024-05-01T12:00:04Z",
      "eventName": "ObjectRemoved:Delete",
      "s3": {"bucket": {"name": "lake"}, "object": {"key": "sales/orders/data/gone.parquet", "sequencer": "0055AED6DCD90281E6"}}
    }
  ]
}`

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseAWSNotification(t *testing.T) {
	got, err := Parse(http.Header{"Content-Type": {"application/json"}}, []byte(awsNotification))
	if err != nil {
		t.Fatal(err)
	}
	obj := func(kind, typ, key, ts string) Event {
		return Event{Source: SourceS3, Kind: kind, Type: typ, Bucket: "lake", Key: key, Location: "s3://lake/" + key, Time: at(ts)}
	}
	want := []Event{
		obj(KindCreated, "ObjectCreated:Put", "sales/orders/data/ts_day=2024-05-01/part 00001 copy.parquet", "2024-05-01T12:00:00.123Z"),
		obj(KindCreated, "ObjectCreated:CompleteMultipartUpload", "sales/orders/data/a+b.parquet", "2024-05-01T12:00:01Z"),
		// ObjectRestore:Completed is not a change to the table.
		obj(KindCreated, "ObjectCreated:Copy", "sales/orders/metadata/café-00002.metadata.json", "2024-05-01T12:00:03Z"),
		obj(KindRemoved, "ObjectRemoved:Delete", "sales/orders/data/gone.parquet", "2024-05-01T12:00:04Z"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseMinIOWebhook(t *testing.T) {
	// MinIO wraps the records, prefixes event names with "s3:" and
	// encodes the slashes of keys too.
	body := `{"EventName":"s3:ObjectCreated:Put","Key":"lake/sales/orders/data/x y.parquet","Records":[{
	  "eventVersion":"2.0","eventSource":"minio:s3","awsRegion":"","eventTime":"2024-05-01T12:00:00.558Z",
	  "eventName":"s3:ObjectCreated:Put","userIdentity":{"principalId":"minioadmin"},
	  "requestParameters":{"principalId":"minioadmin","region":"","sourceIPAddress":"127.0.0.1"},
	  "responseElements":{"x-amz-id-2":"dd9025bab4ad464b","x-amz-request-id":"17C0F8E7A3D9B6D1","x-minio-deployment-id":"c3a4","x-minio-origin-endpoint":"http://127.0.0.1:9000"},
	  "s3":{"s3SchemaVersion":"1.0","configurationId":"Config","bucket":{"name":"lake","ownerIdentity":{"principalId":"minioadmin"},"arn":"arn:aws:s3:::lake"},
	        "object":{"key":"sales%2Forders%2Fdata%2Fx+y.parquet","size":5,"eTag":"6f5902ac237024bdd0c176cb93063dc4","contentType":"application/octet-stream","userMetadata":{"content-type":"application/octet-stream"},"sequencer":"17C0F8E7A3F0A1B2"}},
	  "source":{"host":"127.0.0.1","port":"","userAgent":"MinIO (linux; amd64) minio-go/v7.0.70"}}]}`
	got, err := Parse(http.Header{"Content-Type": {"application/json"}}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Source: SourceS3, Kind: KindCreated, Type: "s3:ObjectCreated:Put", Bucket: "lake",
		Key: "sales/orders/data/x y.parquet", Location: "s3://lake/sales/orders/data/x y.parquet", Time: at("2024-05-01T12:00:00.558Z")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseCephSizeAsString(t *testing.T) {
	body := `{"Records":[{"eventVersion":"2.2","eventSource":"ceph:s3","eventTime":"2019-11-22T13:47:35.124724Z","eventName":"ObjectCreated:Put",
	  "s3":{"bucket":{"name":"lake","id":"503a4c37.5332.38"},"object":{"key":"t/data/f.parquet","size":"1024"}}}]}`
	got, err := Parse(nil, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "t/data/f.parquet" || !got[0].Time.Equal(at("2019-11-22T13:47:35.124724Z")) {
		t.Errorf("got %+v", got)
	}
}

func TestParseS3TestEvent(t *testing.T) {
	body := `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-05-01T12:00:00.089Z","Bucket":"lake","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`
	got, err := Parse(http.Header{"Content-Type": {"application/json"}}, []byte(body))
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v; want no events and no error", got, err)
	}
}

// TestParseKeysKeptAsSent: a key that a path cleaner would resolve
// elsewhere is reported as storage names it, for the caller to refuse.
func TestParseKeysKeptAsSent(t *testing.T) {
	for sent, want := range map[string]string{
		"t1/../t2/data/x.parquet":       "t1/../t2/data/x.parquet",
		"t1/%2e%2e/t2/data/x.parquet":   "t1/../t2/data/x.parquet",
		"t1%2F%2E%2E%2Ft2/x":            "t1/../t2/x",
		"t1//data/x.parquet":            "t1//data/x.parquet",
		"t1/./data/x.parquet":           "t1/./data/x.parquet",
		"t1/data/x%00.parquet":          "t1/data/x\x00.parquet",
		"t1/data/%252e%252e/x.parquet":  "t1/data/%2e%2e/x.parquet", // decoded once only
		"t1/data/%E6%97%A5%E6%9C%AC.db": "t1/data/日本.db",
	} {
		body := `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"` + sent + `"}}}]}`
		got, err := Parse(nil, []byte(body))
		if err != nil {
			t.Errorf("%s: %v", sent, err)
			continue
		}
		if len(got) != 1 || got[0].Key != want || got[0].Location != "s3://b/"+want {
			t.Errorf("%s: got %+v, want key %q", sent, got, want)
		}
	}
}

// SeaweedFS filer webhook bodies as the filer posted them, captured from
// the version scripts/servers.sh runs: an object put through its S3 API, and
// a file written, overwritten, renamed and deleted through its HTTP API.
const (
	seaweedPut    = `{"event_type":"create","key":"/buckets/lake/wh/sales/orders/data/ts_day=2024-05-01/part 00001+é.parquet","message":{"new_entry":{"name":"part 00001+é.parquet","chunks":[{"size":4,"modified_ts_ns":1796392817938300212,"e_tag":"K4Wvar+b6Omou01mHN6UiA==","fid":{"volume_id":3,"file_key":1,"cookie":1901949585}}],"attributes":{"file_size":4,"mtime":1796392817,"file_mode":432,"crtime":1796392817,"md5":"K4Wvar+b6Omou01mHN6UiA==","inode":8181218114152717670,"ctime":1796392817,"atime":1796392817},"extended":{"Seaweed-X-Amz-Acl":"W3siR3JhbnRlZSI6eyJEaXNwbGF5TmFtZSI6bnVsbCwiRW1haWxBZGRyZXNzIjpudWxsLCJJRCI6ImFkbWluIiwiVHlwZSI6IkNhbm9uaWNhbFVzZXIiLCJVUkkiOm51bGx9LCJQZXJtaXNzaW9uIjoiRlVMTF9DT05UUk9MIn1d","Seaweed-X-Amz-ETag":"MmI4NWFmNmFiZjliZThlOWE4YmI0ZDY2MWNkZTk0ODg=","Seaweed-X-Amz-Owner":"YWRtaW4=","x-seaweedfs-write-id":"ZTBiZDZmZWUtZDE0NC00MGUxLThmNDQtYzZjNGUxMzIzZjhj"},"commit_ts_ns":1796392821944944913},"delete_chunks":true,"new_parent_path":"/buckets/lake/wh/sales/orders/data/ts_day=2024-05-01","signatures":[-34865287]}}`
	seaweedUpdate = `{"event_type":"update","key":"/buckets/lake/wh/t1/data/a.parquet","message":{"old_entry":{"name":"a.parquet","chunks":[{"file_id":"4,0192ecc121","size":5,"modified_ts_ns":1796392514610444964,"e_tag":"XUFAKrxLKna5cZ2REBfFkg==","fid":{"volume_id":4,"file_key":1,"cookie":2464989473}}],"attributes":{"file_size":5,"mtime":1796392514,"file_mode":432,"crtime":1796392514,"mime":"application/x-www-form-urlencoded","md5":"XUFAKrxLKna5cZ2REBfFkg==","inode":5740609761809174361,"ctime":-62135596800,"mtime_ns":610555363,"atime":1796392514,"atime_ns":610555363},"commit_ts_ns":1796392514610602693},"new_entry":{"name":"a.parquet","chunks":[{"size":6,"modified_ts_ns":1796392514640425610,"e_tag":"boCcvaBzKsSEWRalkBb5VA==","fid":{"volume_id":6,"file_key":2,"cookie":3909580104}}],"attributes":{"file_size":6,"mtime":1796392514,"file_mode":432,"crtime":1796392514,"mime":"application/x-www-form-urlencoded","md5":"boCcvaBzKsSEWRalkBb5VA==","inode":5740609761809174361,"ctime":-62135596800,"mtime_ns":640479091,"atime":1796392514,"atime_ns":640479091},"commit_ts_ns":1796392514640489030},"delete_chunks":true,"new_parent_path":"/buckets/lake/wh/t1/data","signatures":[1219170616]}}`
	seaweedRename = `{"event_type":"rename","key":"/buckets/lake/wh/t1/data/a.parquet","message":{"old_entry":{"name":"a.parquet","chunks":[{"file_id":"6,02e9077548","size":6,"modified_ts_ns":1796392514640425610,"e_tag":"boCcvaBzKsSEWRalkBb5VA==","fid":{"volume_id":6,"file_key":2,"cookie":3909580104}}],"attributes":{"file_size":6,"mtime":1796392514,"file_mode":432,"crtime":1796392514,"mime":"application/x-www-form-urlencoded","md5":"boCcvaBzKsSEWRalkBb5VA==","inode":5740609761809174361,"ctime":-62135596800,"mtime_ns":640479091,"atime":1796392514,"atime_ns":640479091},"commit_ts_ns":1796392514640489030},"new_entry":{"name":"b c.parquet","chunks":[{"file_id":"6,02e9077548","size":6,"modified_ts_ns":1796392514640425610,"e_tag":"boCcvaBzKsSEWRalkBb5VA==","fid":{"volume_id":6,"file_key":2,"cookie":3909580104}}],"attributes":{"file_size":6,"mtime":1796392514,"file_mode":432,"crtime":1796392514,"mime":"application/x-www-form-urlencoded","md5":"boCcvaBzKsSEWRalkBb5VA==","inode":5740609761809174361,"ctime":-62135596800,"mtime_ns":640479091,"atime":1796392514,"atime_ns":640479091},"commit_ts_ns":1796392514663840418},"new_parent_path":"/buckets/lake/wh/t1/data","signatures":[1219170616]}}`
	seaweedDelete = `{"event_type":"delete","key":"/buckets/lake/wh/t1/data/b c.parquet","message":{"old_entry":{"name":"b c.parquet","chunks":[{"file_id":"6,02e9077548","size":6,"modified_ts_ns":1796392514640425610,"e_tag":"boCcvaBzKsSEWRalkBb5VA==","fid":{"volume_id":6,"file_key":2,"cookie":3909580104}}],"attributes":{"file_size":6,"mtime":1796392514,"file_mode":432,"crtime":1796392514,"mime":"application/x-www-form-urlencoded","md5":"boCcvaBzKsSEWRalkBb5VA==","inode":5740609761809174361,"ctime":-62135596800,"mtime_ns":640479091,"atime":1796392514,"atime_ns":640479091},"commit_ts_ns":1796392514663840418},"delete_chunks":true,"signatures":[1219170616]}}`
	// The bucket's directory, and the file the S3 gateway keeps of its
	// owner in the filer's own folder under /buckets.
	seaweedBucket = `{"event_type":"create","key":"/buckets/lake","message":{"new_entry":{"name":"lake","is_directory":true,"attributes":{"mtime":1796392813,"file_mode":2147484159,"crtime":1796392813,"inode":6400316421697724314,"ctime":1796392813,"atime":1796392813},"extended":{"Seaweed-X-Amz-Owner":"YWRtaW4=","s3-identity-id":"YWRtaW4taWNla2VlcGU="},"commit_ts_ns":1796392813103745728},"delete_chunks":true,"new_parent_path":"/buckets","signatures":[-34865287]}}`
	seaweedOwner  = `{"event_type":"update","key":"/buckets/.system/owners/admin-icekeepe/lake","message":{"old_entry":{"name":"lake","attributes":{"mtime":1796392813,"file_mode":504,"crtime":1796392813,"inode":1987810634341758139,"ctime":1796392813,"atime":1796392813},"commit_ts_ns":1796392813104533628},"new_entry":{"name":"lake","attributes":{"mtime":1796392813,"file_mode":504,"crtime":1796392813,"inode":1987810634341758139,"ctime":1796392813,"atime":1796392813},"commit_ts_ns":1796392813104934296},"delete_chunks":true,"new_parent_path":"/buckets/.system/owners/admin-icekeepe","signatures":[-34865287]}}`
)

// seaweedBody builds a webhook body the way the filer does
// (weed/notification/webhook/http.go): a map marshalled by encoding/json,
// so its members are sorted and "<", ">", "&" and control characters in
// the key are escaped.
func seaweedBody(t *testing.T, eventType, key, message string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"key": key, "event_type": eventType, "message": json.RawMessage(message)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSeaweedFS(t *testing.T) {
	obj := func(kind, typ, key string) Event {
		return Event{Source: SourceS3, Kind: kind, Type: typ, Bucket: "lake", Key: key, Location: "s3://lake/" + key}
	}
	for _, tc := range []struct {
		name string
		body string
		want []Event
	}{
		{"an object put through S3", seaweedPut,
			[]Event{obj(KindCreated, "seaweedfs:create", "wh/sales/orders/data/ts_day=2024-05-01/part 00001+é.parquet")}},
		{"an overwrite is a write", seaweedUpdate,
			[]Event{obj(KindCreated, "seaweedfs:update", "wh/t1/data/a.parquet")}},
		{"a rename removes the old key and writes the new", seaweedRename,
			[]Event{obj(KindRemoved, "seaweedfs:rename", "wh/t1/data/a.parquet"), obj(KindCreated, "seaweedfs:rename", "wh/t1/data/b c.parquet")}},
		{"a delete", seaweedDelete,
			[]Event{obj(KindRemoved, "seaweedfs:delete", "wh/t1/data/b c.parquet")}},
		{"a bucket is no object", seaweedBucket, nil},
		{"the filer's own folder under /buckets holds no bucket", seaweedOwner, nil},
	} {
		got, err := Parse(http.Header{"Content-Type": {"application/json"}}, []byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got\n%+v\nwant\n%+v", tc.name, got, tc.want)
		}
	}
}

// TestParseSeaweedFSSkipped: changes that are to no S3 object are valid
// bodies that yield no events.
func TestParseSeaweedFSSkipped(t *testing.T) {
	const file = `{"new_entry":{"name":"f","attributes":{"file_size":1}},"new_parent_path":"/x"}`
	for _, tc := range []struct{ name, typ, key, message string }{
		{"a directory in a bucket", "create", "/buckets/lake/wh/t1", `{"new_entry":{"name":"t1","is_directory":true},"new_parent_path":"/buckets/lake/wh"}`},
		{"a directory deleted", "delete", "/buckets/lake/wh/t1", `{"old_entry":{"name":"t1","is_directory":true},"delete_chunks":true}`},
		{"a directory renamed", "rename", "/buckets/lake/wh/t1", `{"old_entry":{"name":"t1","is_directory":true},"new_entry":{"name":"t2","is_directory":true},"new_parent_path":"/buckets/lake/wh"}`},
		{"the buckets folder", "create", "/buckets", `{"new_entry":{"name":"buckets","is_directory":true},"new_parent_path":"/"}`},
		{"a file beside the buckets", "create", "/buckets/notes.txt", file},
		{"the filer's configuration", "update", "/etc/iam/identity.json", `{"old_entry":{"name":"identity.json"},"new_entry":{"name":"identity.json"},"new_parent_path":"/etc/iam"}`},
		{"a message queue's topic", "create", "/topics/.system/log/2024-05-01-12-00.00000001", file},
		{"a prefix of /buckets/ that is not it", "create", "/bucketsx/lake/k", file},
		{"a multipart upload's part", "create", "/buckets/lake/.uploads/0b6ca2d4-1f4c-4a7a-9b9e-6a0f2c7b1e3d/0001_7c1e.part", file},
		{"a rename between the filer's own files", "rename", "/etc/a", `{"old_entry":{"name":"a"},"new_entry":{"name":"b"},"new_parent_path":"/etc"}`},
	} {
		got, err := Parse(http.Header{"Content-Type": {"application/json"}}, seaweedBody(t, tc.typ, tc.key, tc.message))
		if err != nil || len(got) != 0 {
			t.Errorf("%s: got %+v, %v; want no events and no error", tc.name, got, err)
		}
	}
}

// TestParseSeaweedFSKeysKeptAsSent: the filer's paths are not encoded,
// so a key is taken as it is, "%2e%2e" included, and what a path cleaner
// would resolve elsewhere is left for the caller to refuse.
func TestParseSeaweedFSKeysKeptAsSent(t *testing.T) {
	for _, key := range []string{
		"t1/../t2/data/x.parquet",
		"t1//data/x.parquet",
		"t1/./data/x.parquet",
		"t1/%2e%2e/t2/x.parquet",
		"t1/data/a+b%2B.parquet",
		"t1/data/x\x00.parquet",
		"t1/data/<&>.parquet",
		"t1/data/x.parquet/",
		"../../etc/passwd",
	} {
		got, err := Parse(nil, seaweedBody(t, "create", "/buckets/lake/"+key, `{"new_entry":{"name":"x"}}`))
		want := []Event{{Source: SourceS3, Kind: KindCreated, Type: "seaweedfs:create", Bucket: "lake", Key: key, Location: "s3://lake/" + key}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, %v", key, got, err)
		}
	}
}

// TestParseSeaweedFSRenamePaths: a rename's new path is its new parent and
// the new entry's name joined as the filer joins them, and each side is
// reported only where it is an object.
func TestParseSeaweedFSRenamePaths(t *testing.T) {
	rename := func(parent, name string) string {
		return `{"old_entry":{"name":"old"},"new_entry":{"name":` + strconv.Quote(name) + `},"new_parent_path":` + strconv.Quote(parent) + `}`
	}
	ev := func(kind, bucket, key string) Event {
		return Event{Source: SourceS3, Kind: kind, Type: "seaweedfs:rename", Bucket: bucket, Key: key, Location: "s3://" + bucket + "/" + key}
	}
	for _, tc := range []struct {
		name, key, message string
		want               []Event
	}{
		{"to another bucket", "/buckets/a/t/x", rename("/buckets/b/u", "y"),
			[]Event{ev(KindRemoved, "a", "t/x"), ev(KindCreated, "b", "u/y")}},
		{"to a bucket's top", "/buckets/a/t/x", rename("/buckets/a", "x"),
			[]Event{ev(KindRemoved, "a", "t/x"), ev(KindCreated, "a", "x")}},
		{"out of the buckets", "/buckets/a/t/x", rename("/tmp", "x"),
			[]Event{ev(KindRemoved, "a", "t/x")}},
		{"into a bucket", "/tmp/x", rename("/buckets/a/t", "x"),
			[]Event{ev(KindCreated, "a", "t/x")}},
		{"a completed upload's part", "/buckets/a/.uploads/u1/0001.part", rename("/buckets/a/t", "x"),
			[]Event{ev(KindCreated, "a", "t/x")}},
		{"a name with a leading slash", "/buckets/a/t/x", rename("/buckets/a/t", "/y"),
			[]Event{ev(KindRemoved, "a", "t/x"), ev(KindCreated, "a", "t/y")}},
		{"a parent with a trailing slash", "/buckets/a/t/x", rename("/buckets/a/t/", "y"),
			[]Event{ev(KindRemoved, "a", "t/x"), ev(KindCreated, "a", "t/y")}},
		{"a hostile name kept as sent", "/buckets/a/t1/x", rename("/buckets/a/t1", "../t2/x"),
			[]Event{ev(KindRemoved, "a", "t1/x"), ev(KindCreated, "a", "t1/../t2/x")}},
	} {
		got, err := Parse(nil, seaweedBody(t, "rename", tc.key, tc.message))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseSeaweedFSErrors(t *testing.T) {
	const file = `{"new_entry":{"name":"x"}}`
	for _, tc := range []struct{ name, body, want string }{
		{"missing key", `{"event_type":"create","message":` + file + `}`, "seaweedfs webhook: key is missing"},
		{"null key", `{"event_type":"create","key":null,"message":` + file + `}`, "seaweedfs webhook: key is missing"},
		{"empty key", `{"event_type":"create","key":"","message":` + file + `}`, "seaweedfs webhook: key is empty"},
		{"key not a string", `{"event_type":"create","key":7,"message":` + file + `}`, "seaweedfs webhook: json: cannot unmarshal number"},
		{"relative key", `{"event_type":"create","key":"buckets/lake/x","message":` + file + `}`, `seaweedfs webhook: path "buckets/lake/x" is not an absolute filer path`},
		{"no bucket", `{"event_type":"create","key":"/buckets//x","message":` + file + `}`, `seaweedfs webhook: path "/buckets//x" names no bucket`},
		{"no object", `{"event_type":"create","key":"/buckets/lake/","message":` + file + `}`, `seaweedfs webhook: path "/buckets/lake/" names no object in bucket "lake"`},
		{"unknown event_type", `{"event_type":"chmod","key":"/buckets/lake/x","message":` + file + `}`, `seaweedfs webhook: event_type "chmod" is none of create, update, delete and rename`},
		{"empty event_type", `{"event_type":"","key":"/buckets/lake/x","message":` + file + `}`, "seaweedfs webhook: event_type is missing"},
		{"null message", `{"event_type":"create","key":"/buckets/lake/x","message":null}`, "seaweedfs webhook: message is missing"},
		{"message not an object", `{"event_type":"create","key":"/buckets/lake/x","message":"x"}`, "seaweedfs webhook: json: cannot unmarshal string"},
		{"create without new_entry", `{"event_type":"create","key":"/buckets/lake/x","message":{}}`, `seaweedfs webhook: create of "/buckets/lake/x" has no message.new_entry`},
		{"delete without old_entry", `{"event_type":"delete","key":"/buckets/lake/x","message":` + file + `}`, `seaweedfs webhook: delete of "/buckets/lake/x" has no message.old_entry`},
		{"rename without new_parent_path", `{"event_type":"rename","key":"/buckets/lake/x","message":{"old_entry":{"name":"x"},"new_entry":{"name":"y"}}}`, `seaweedfs webhook: rename of "/buckets/lake/x" has no message.new_parent_path or message.new_entry.name`},
		{"rename to a hostile path", `{"event_type":"rename","key":"/buckets/lake/x","message":{"new_entry":{"name":"y"},"new_parent_path":"/buckets//t"}}`, `path "/buckets//t/y" names no bucket`},
		{"invalid UTF-8 in the key", "{\"event_type\":\"create\",\"key\":\"/buckets/lake/t/\xff.parquet\",\"message\":" + file + "}", "body is not valid UTF-8"},
		{"neither event_type nor message", `{"key":"/buckets/lake/x"}`, `nor a SeaweedFS webhook (no "event_type" and "message")`},
	} {
		_, err := Parse(http.Header{"Content-Type": {"application/json"}}, []byte(tc.body))
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v does not wrap ErrMalformed", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
	}
}

// lakekeeperUpdate is an updateTable event as Lakekeeper's publisher
// builds it (crates/lakekeeper/src/service/events/publisher.rs) and the
// CloudEvents SDK serialises it for NATS: the CommitTableRequest as data,
// the table in extensions with the namespace's levels joined by U+001F.
const lakekeeperUpdate = `{
  "specversion": "1.0",
  "id": "0198c7e2-5b1a-7f3c-9a41-2f8d3c6b7e10",
  "type": "updateTable",
  "source": "uri:iceberg-catalog-service:lakekeeper-6c9f7d7b5-x2kq4",
  "datacontenttype": "application/json",
  "data": {
    "identifier": {"namespace": ["sales", "eu"], "name": "orders"},
    "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 3051729675574597004}],
    "updates": [
      {"action": "add-snapshot", "snapshot": {"snapshot-id": 3055729675574597004, "parent-snapshot-id": 3051729675574597004, "sequence-number": 2, "timestamp-ms": 1714564800000, "manifest-list": "s3://lake/wh/sales/eu/orders/metadata/snap-3055729675574597004-1-a0b1.avro", "summary": {"operation": "append"}, "schema-id": 0}},
      {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 3055729675574597004}
    ]
  },
  "tabular-type": "Table",
  "tabular-id": "0198c7d0-1111-7aaa-8bbb-0c0c0c0c0c0c",
  "warehouse-id": "0198c7c0-2222-7ccc-8ddd-0e0e0e0e0e0e",
  "name": "orders",
  "namespace": "sales\u001feu",
  "prefix": "",
  "num-events": 1,
  "sequence-number": 0,
  "trace-id": "0198c7e2-5b19-7000-8000-000000000001",
  "actor": "{\"type\":\"anonymous\"}"
}`

func TestParseCloudEventStructured(t *testing.T) {
	for _, ct := range []string{"application/cloudevents+json; charset=utf-8", "application/json"} {
		got, err := Parse(http.Header{"Content-Type": {ct}}, []byte(lakekeeperUpdate))
		if err != nil {
			t.Fatalf("%s: %v", ct, err)
		}
		want := []Event{{Source: SourceCloudEvents, Kind: KindTableChanged, Type: "updateTable",
			Namespace: []string{"sales", "eu"}, Name: "orders",
			WarehouseID: "0198c7c0-2222-7ccc-8ddd-0e0e0e0e0e0e", TableID: "0198c7d0-1111-7aaa-8bbb-0c0c0c0c0c0c"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", ct, got, want)
		}
	}
}

// TestParseLakekeeperTypes covers the other types Lakekeeper publishes:
// those about tables name theirs, the rest are skipped.
func TestParseLakekeeperTypes(t *testing.T) {
	ce := func(typ, tabular, namespace, name, data string) string {
		return `{"specversion":"1.0","id":"0198c7e2-0000-7000-8000-00000000000a","type":"` + typ +
			`","source":"uri:iceberg-catalog-service:lk","datacontenttype":"application/json","data":` + data +
			`,"tabular-type":"` + tabular + `","tabular-id":"0198c7d0-1111-7aaa-8bbb-0c0c0c0c0c0c","warehouse-id":"0198c7c0-2222-7ccc-8ddd-0e0e0e0e0e0e","name":"` +
			name + `","namespace":"` + namespace + `","prefix":"0198c7c0-2222-7ccc-8ddd-0e0e0e0e0e0e","num-events":1,"sequence-number":0,"trace-id":"t","actor":"{\"type\":\"anonymous\"}"}`
	}
	for _, tc := range []struct {
		name, body string
		kind       string // "": skipped
		namespace  []string
		table, loc string
	}{
		{"createTable", ce("createTable", "Table", "sales.eu", "orders", `{"name":"orders","location":"s3://lake/wh/orders","schema":{"type":"struct","schema-id":0,"fields":[]},"stage-create":false,"properties":{}}`),
			KindTableChanged, []string{"sales", "eu"}, "orders", "s3://lake/wh/orders"},
		{"registerTable", ce("registerTable", "Table", "sales.eu", "orders", `null`), KindTableChanged, []string{"sales", "eu"}, "orders", ""},
		{"dropTable", ce("dropTable", "Table", "sales.eu", "orders", `null`), KindTableDropped, []string{"sales", "eu"}, "orders", ""},
		{"renameTable names the table as it is now called",
			ce("renameTable", "Table", `sales\u001feu`, "orders", `{"source":{"namespace":["sales","eu"],"name":"orders"},"destination":{"namespace":["sales","us"],"name":"orders_v2"}}`),
			KindTableChanged, []string{"sales", "us"}, "orders_v2", ""},
		{"undropTabulars of a table", ce("undropTabulars", "Table", `sales\u001feu`, "orders", `null`), KindTableChanged, []string{"sales", "eu"}, "orders", ""},
		{"undropTabulars of a view", ce("undropTabulars", "View", `sales\u001feu`, "v", `null`), "", nil, "", ""},
		{"updateTable setting a location", ce("updateTable", "Table", `sales\u001feu`, "orders", `{"identifier":{"namespace":["sales","eu"],"name":"orders"},"requirements":[],"updates":[{"action":"set-location","location":"s3://lake/moved/orders"}]}`),
			KindTableChanged, []string{"sales", "eu"}, "orders", "s3://lake/moved/orders"},
		{"createView", ce("createView", "View", "sales.eu", "v", `{"name":"v"}`), "", nil, "", ""},
		{"updateView", ce("updateView", "View", "sales.eu", "v", `{}`), "", nil, "", ""},
		{"dropGenericTable", ce("dropGenericTable", "GenericTable", "sales.eu", "g", `null`), "", nil, "", ""},
	} {
		got, err := Parse(http.Header{"Content-Type": {"application/cloudevents+json"}}, []byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.kind == "" {
			if len(got) != 0 {
				t.Errorf("%s: got %+v, want it skipped", tc.name, got)
			}
			// ParseAll says why.
			all, err := ParseAll(http.Header{"Content-Type": {"application/cloudevents+json"}}, []byte(tc.body))
			if err != nil || len(all) != 1 || !strings.HasPrefix(all[0].Ignored, "cloudevent: type ") || all[0].Type == "" {
				t.Errorf("%s: ParseAll %+v, %v; want it ignored with the reason", tc.name, all, err)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s: got %d events, want 1", tc.name, len(got))
			continue
		}
		ev := got[0]
		if ev.Kind != tc.kind || !reflect.DeepEqual(ev.Namespace, tc.namespace) || ev.Name != tc.table || ev.Location != tc.loc || !strings.HasPrefix(tc.name, ev.Type) {
			t.Errorf("%s: got %+v", tc.name, ev)
		}
	}
}

func TestParseCloudEventBatch(t *testing.T) {
	body := `[
	  {"specversion":"1.0","id":"1","source":"flink://orders-writer","type":"icekeeper.table.changed","time":"2024-05-01T12:00:00Z",
	   "data":{"namespace":"sales.eu","name":"orders","warehouse":"lake"}},
	  {"specversion":"1.0","id":"2","source":"k8s","type":"dev.knative.apiserver.resource.update","data":{"name":"pod"}},
	  {"specversion":"1.0","id":"3","source":"airflow","type":"icekeeper.table.changed","datacontenttype":"application/json",
	   "data_base64":"eyJsb2NhdGlvbiI6InMzOi8vbGFrZS93aC9jbGlja3MifQ=="},
	  {"specversion":"1.0","id":"4","source":"airflow","type":"icekeeper.table.dropped","data":{"namespace":["a.b","c"],"name":"t"}}
	]`
	got, err := Parse(http.Header{"Content-Type": {"application/cloudevents-batch+json"}}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Source: SourceCloudEvents, Kind: KindTableChanged, Type: TypeTableChanged, Namespace: []string{"sales", "eu"}, Name: "orders", Warehouse: "lake", Time: at("2024-05-01T12:00:00Z")},
		{Source: SourceCloudEvents, Kind: KindTableChanged, Type: TypeTableChanged, Location: "s3://lake/wh/clicks"},
		{Source: SourceCloudEvents, Kind: KindTableDropped, Type: TypeTableDropped, Namespace: []string{"a.b", "c"}, Name: "t"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if got, err := Parse(http.Header{"Content-Type": {"application/cloudevents-batch+json"}}, []byte(" [] ")); err != nil || len(got) != 0 {
		t.Errorf("empty batch: got %v, %v", got, err)
	}
}

func TestParseCloudEventBinary(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("ce-specversion", "1.0")
	h.Set("ce-id", "0198c7e2-0000-7000-8000-00000000000b")
	h.Set("ce-source", "uri:iceberg-catalog-service:lk")
	h.Set("ce-type", "updateTable")
	h.Set("ce-time", "2024-05-01T12:00:00+02:00")
	h.Set("ce-namespace", "sales%1Feu")
	h.Set("ce-name", "orders")
	h.Set("ce-warehouse-id", "0198c7c0-2222-7ccc-8ddd-0e0e0e0e0e0e")
	h.Set("ce-tabular-type", "Table")

	// The extensions name the table when the data does not.
	got, err := Parse(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{Source: SourceCloudEvents, Kind: KindTableChanged, Type: "updateTable", Namespace: []string{"sales", "eu"}, Name: "orders",
		WarehouseID: "0198c7c0-2222-7ccc-8ddd-0e0e0e0e0e0e", Time: at("2024-05-01T12:00:00+02:00")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	// The plain shape as the body; "+" in a header is a plus.
	h.Set("ce-type", TypeTableChanged)
	h.Set("ce-name", "a+b")
	got, err = Parse(h, []byte(`{"namespace":["sales"],"location":"s3://lake/wh/a+b"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "a+b" || !reflect.DeepEqual(got[0].Namespace, []string{"sales"}) || got[0].Location != "s3://lake/wh/a+b" {
		t.Errorf("got %+v", got)
	}

	// Data of another content type is not read, so the extensions must do.
	h.Set("Content-Type", "application/avro")
	if got, err = Parse(h, []byte{0x00, 0xff, 0xfe}); err != nil || len(got) != 1 || got[0].Name != "a+b" {
		t.Errorf("avro data: got %+v, %v", got, err)
	}
}

func TestParseErrors(t *testing.T) {
	rec := func(s3 string) string {
		return `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}},{"eventName":"ObjectCreated:Put","s3":` + s3 + `}]}`
	}
	structured := http.Header{"Content-Type": {"application/cloudevents+json"}}
	binary := func(drop string) http.Header {
		h := http.Header{}
		for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "1", "ce-source": "s", "ce-type": TypeTableChanged} {
			if k != drop {
				h.Set(k, v)
			}
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
		want string
	}{
		{"not JSON", nil, `{"Records": [`, "body is not JSON: "},
		{"empty body", nil, "  ", "body is empty"},
		{"neither format", nil, `{"hello":"world"}`, `neither an S3 event notification (no "Records"), a CloudEvent (no "specversion") nor a SeaweedFS webhook`},
		{"a number", nil, `42`, "not a JSON object or array"},
		{"invalid UTF-8 in the body", nil, "{\"Records\":[{\"eventName\":\"ObjectCreated:Put\",\"s3\":{\"bucket\":{\"name\":\"b\"},\"object\":{\"key\":\"t/\xff\"}}}]}", "body is not valid UTF-8"},
		{"invalid UTF-8 in a decoded key", nil, rec(`{"bucket":{"name":"b"},"object":{"key":"t/%FF.parquet"}}`), `record 2 of 2: s3.object.key "t/%FF.parquet" is not UTF-8 once decoded`},
		{"bad escape in a key", nil, rec(`{"bucket":{"name":"b"},"object":{"key":"t/%zz"}}`), `record 2 of 2: s3.object.key "t/%zz" is not form-encoded`},
		{"empty Records", nil, `{"Records":[]}`, "Records is empty"},
		{"null Records", nil, `{"Records":null}`, "Records is empty"},
		{"Records not an array", nil, `{"Records":{}}`, "Records is not an array"},
		{"missing s3.object.key", nil, rec(`{"bucket":{"name":"b"},"object":{"size":1}}`), "record 2 of 2: s3.object.key is missing"},
		{"missing s3.object", nil, rec(`{"bucket":{"name":"b"}}`), "record 2 of 2: s3.object.key is missing"},
		{"empty key", nil, rec(`{"bucket":{"name":"b"},"object":{"key":""}}`), "record 2 of 2: s3.object.key is empty"},
		{"missing bucket", nil, rec(`{"object":{"key":"k"}}`), "record 2 of 2: s3.bucket.name is missing"},
		{"slash in bucket", nil, rec(`{"bucket":{"name":"b/t1"},"object":{"key":"k"}}`), `record 2 of 2: s3.bucket.name "b/t1" is not a bucket name`},
		{"missing s3", nil, `{"Records":[{"eventName":"ObjectCreated:Put"}]}`, "record 1 of 1: s3 is missing"},
		{"missing eventName", nil, `{"Records":[{"s3":{}}]}`, "record 1 of 1: eventName is missing"},
		{"bad eventTime", nil, `{"Records":[{"eventName":"ObjectCreated:Put","eventTime":"yesterday","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}]}`, `record 1 of 1: eventTime "yesterday" is not an RFC 3339 time`},
		{"key not a string", nil, rec(`{"bucket":{"name":"b"},"object":{"key":7}}`), "record 2 of 2: not an S3 event record: "},
		{"wrong specversion", structured, `{"specversion":"0.3","id":"1","source":"s","type":"t"}`, `cloudevent: specversion "0.3" is not 1.0`},
		{"missing specversion", structured, `{"id":"1","source":"s","type":"t"}`, "cloudevent: specversion is missing"},
		{"missing ce-id", binary("ce-id"), `{"name":"t","namespace":"a"}`, "cloudevent: id is missing"},
		{"missing ce-source", binary("ce-source"), ``, "cloudevent: source is missing"},
		{"missing type", structured, `{"specversion":"1.0","id":"1","source":"s"}`, "cloudevent: type is missing"},
		{"id not a string", structured, `{"specversion":"1.0","id":1,"source":"s","type":"t"}`, "cloudevent: id is not a string"},
		{"bad time", structured, `{"specversion":"1.0","id":"1","source":"s","type":"t","time":"now"}`, `cloudevent: time "now" is not an RFC 3339 time`},
		{"structured not an object", structured, `[{"specversion":"1.0"}]`, "body is not a JSON object"},
		{"batch item not an object", http.Header{"Content-Type": {"application/cloudevents-batch+json"}}, `[{"specversion":"1.0","id":"1","source":"s","type":"t"}, 3]`, "cloudevent 2 of 2 is not a JSON object"},
		{"batch item missing id", nil, `[{"specversion":"1.0","source":"s","type":"t"}]`, "cloudevent 1 of 1: id is missing"},
		{"table event naming no table", structured, `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":{}}`, `cloudevent: type "icekeeper.table.changed": names no table`},
		{"name without namespace", structured, `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":{"name":"t"}}`, `names table "t" but no namespace`},
		{"empty namespace level", structured, `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":{"namespace":"a..b","name":"t"}}`, `data.namespace "a..b" has an empty level`},
		{"namespace of numbers", structured, `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":{"namespace":[1],"name":"t"}}`, "data.namespace is neither a list of levels nor a string"},
		{"location not a URI", structured, `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":{"location":"/wh/t"}}`, `location "/wh/t" is not a URI`},
		{"data not an object", structured, `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":["t"]}`, "data is not a JSON object"},
		{"binary data not JSON", binary(""), `name=t`, "data is not JSON"},
		{"both data and data_base64", structured, `{"specversion":"1.0","id":"1","source":"s","type":"t","data":{},"data_base64":"e30="}`, "has both data and data_base64"},
		{"identifier without name", structured, `{"specversion":"1.0","id":"1","source":"s","type":"updateTable","data":{"identifier":{"namespace":["a"]}}}`, "data's table identifier has no name"},
		{"header not percent-encoded", func() http.Header { h := binary(""); h.Set("ce-name", "50%"); return h }(), `{"namespace":"a"}`, `header ce-name "50%" is not percent-encoded`},
	} {
		_, err := Parse(tc.h, []byte(tc.body))
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
			continue
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v does not wrap ErrMalformed", tc.name, err)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.want)
		}
	}
}

func TestParseTooLarge(t *testing.T) {
	body := make([]byte, MaxBody+1)
	_, err := Parse(nil, body)
	if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrMalformed) {
		t.Errorf("got %v, want ErrTooLarge alone", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		awsNotification, lakekeeperUpdate, `[]`, `{"Records":[]}`, `{"Event":"s3:TestEvent"}`,
		`[{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":{"namespace":"a.b","name":"t"}}]`,
		`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"t%2F..%2Fu"}}}]}`,
		`{"namespace":["a"],"name":"t","location":"s3://b/t"}`,
		seaweedPut, seaweedRename,
		`{"event_type":"rename","key":"/buckets/a/t/x","message":{"old_entry":{"name":"x"},"new_entry":{"name":"../y"},"new_parent_path":"/buckets/b/.uploads"}}`,
	} {
		for mode := range uint8(4) {
			f.Add(mode, "a%1Fb", []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, mode uint8, namespace string, body []byte) {
		h := http.Header{}
		switch mode % 4 {
		case 1:
			h.Set("Content-Type", "application/cloudevents+json")
		case 2:
			h.Set("Content-Type", "application/cloudevents-batch+json")
		case 3:
			h.Set("ce-specversion", "1.0")
			h.Set("ce-id", "1")
			h.Set("ce-source", "s")
			h.Set("ce-type", "updateTable")
			h.Set("ce-name", "t")
			h.Set("ce-namespace", namespace)
		}
		evs, err := Parse(h, body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		for _, ev := range evs {
			switch ev.Source {
			case SourceS3:
				if ev.Location != "s3://"+ev.Bucket+"/"+ev.Key || !utf8.ValidString(ev.Key) || strings.Contains(ev.Bucket, "/") {
					t.Fatalf("object event %+v", ev)
				}
			case SourceCloudEvents:
				if ev.Name == "" && ev.Location == "" || ev.Name != "" && len(ev.Namespace) == 0 {
					t.Fatalf("table event naming no table: %+v", ev)
				}
			default:
				t.Fatalf("event from %q", ev.Source)
			}
		}
	})
}

// An event naming a table by a level a path resolves or splits is
// ignored, with the level named; it never reaches the scheduler.
func TestParseUnsafeNames(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"namespace":[".."],"name":"t"}`, `".." is not a name a table can have here`},
		{`{"namespace":["a","."],"name":"t"}`, `"." is not a name a table can have here`},
		{`{"namespace":["a"],"name":"../t"}`, `"../t" holds a path separator`},
		{`{"namespace":["a\\b"],"name":"t"}`, `holds a path separator`},
		{`{"namespace":["a"],"name":"t\u0000"}`, `holds a control character`},
	} {
		body := `{"specversion":"1.0","id":"1","source":"s","type":"icekeeper.table.changed","data":` + tc.data + `}`
		all, err := ParseAll(http.Header{"Content-Type": {"application/cloudevents+json"}}, []byte(body))
		if err != nil || len(all) != 1 || !strings.Contains(all[0].Ignored, tc.want) || all[0].Name != "" {
			t.Errorf("%s: %+v, %v; want it ignored saying %q", tc.data, all, err, tc.want)
		}
		if evs, err := Parse(http.Header{"Content-Type": {"application/cloudevents+json"}}, []byte(body)); err != nil || len(evs) != 0 {
			t.Errorf("%s: Parse %+v, %v; want nothing", tc.data, evs, err)
		}
	}
}
