package commit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// metadataWithLog is v2 metadata of a table at loc whose log holds files,
// with delete-after-commit on.
func metadataWithLog(t *testing.T, loc string, files ...string) table.Metadata {
	t.Helper()
	var log []map[string]any
	for i, f := range files {
		log = append(log, map[string]any{"metadata-file": f, "timestamp-ms": 1000 + i})
	}
	doc := map[string]any{
		"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": loc,
		"last-sequence-number": 0, "last-updated-ms": 2000, "last-column-id": 1,
		"schemas":           []any{map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "required": true, "type": "long"}}}},
		"current-schema-id": 0, "partition-specs": []any{map[string]any{"spec-id": 0, "fields": []any{}}}, "default-spec-id": 0,
		"last-partition-id": 999, "sort-orders": []any{map[string]any{"order-id": 0, "fields": []any{}}}, "default-sort-order-id": 0,
		"properties":   map[string]string{table.MetadataDeleteAfterCommitEnabledKey: "true"},
		"metadata-log": log,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

// The files a commit trims from the log are deleted only when they lie
// directly in the table's own metadata directory and no other table holds
// them: a log entry reaching elsewhere — "..", "%2e%2e", "//", a
// subdirectory, another table's file, a symlink's target — stays.
func TestPruneMetadataOnlyOwnFiles(t *testing.T) {
	home := t.TempDir()
	write := func(rel string) string {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		return "file://" + p
	}
	loc := "file://" + filepath.Join(home, "a")
	own := write("a/metadata/00001-own.metadata.json")
	forked := write("a/metadata/00002-forked.metadata.json")
	other := write("b/metadata/00001-b.metadata.json")
	sub := write("a/metadata/sub/00001-x.metadata.json")
	if err := os.Symlink(filepath.Join(home, "b/metadata/00001-b.metadata.json"), filepath.Join(home, "a/metadata/00003-link.metadata.json")); err != nil {
		t.Fatal(err)
	}
	link := loc + "/metadata/00003-link.metadata.json"
	hostile := []string{
		loc + "/metadata/../../b/metadata/00001-b.metadata.json",
		loc + "/metadata/%2e%2e/%2e%2e/b/metadata/00001-b.metadata.json",
		loc + "/metadata/%2E%2E%2Fb.metadata.json",
		loc + "/metadata//00001-own.metadata.json",
		loc + "/metadata/..",
		sub,
		other,
	}
	base := metadataWithLog(t, loc, append([]string{own, forked, link}, hostile...)...)
	next := metadataWithLog(t, loc)
	current := func() (map[string]string, error) {
		return map[string]string{"db.a": loc + "/metadata/00009.metadata.json", "db.fork": forked}, nil
	}

	n, err := PruneMetadata(icebergio.LocalFS{}, base, next, current)
	if err != nil || n != 2 {
		t.Fatalf("PruneMetadata = %d, %v; want the own file and the link removed", n, err)
	}
	gone := func(uri string) bool {
		_, err := os.Lstat(uri[len("file://"):])
		return errors.Is(err, os.ErrNotExist)
	}
	if !gone(own) || !gone(link) {
		t.Errorf("own file or link kept")
	}
	for _, f := range []string{forked, other, sub} {
		if gone(f) {
			t.Errorf("%s was deleted", f)
		}
	}
	// The link's target is another table's file: removing the link left it.
	if gone(other) {
		t.Error("the symlink's target was deleted")
	}

	// When the catalog cannot say which tables hold what, nothing goes.
	own = write("a/metadata/00001-own.metadata.json")
	n, err = PruneMetadata(icebergio.LocalFS{}, metadataWithLog(t, loc, own), next, func() (map[string]string, error) {
		return nil, fmt.Errorf("catalog down")
	})
	if err == nil || n != 0 || gone(own) {
		t.Errorf("with the catalog down: %d removed, %v", n, err)
	}
}
