package status

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// icebergErasure is configured through the S3 Tables maintenance route
// with its own settings member, with keys on: a signed PUT stores it, GET
// returns it when asked for icekeeper's own types (and only then: an AWS
// SDK cannot decode the member), and a deadline that is missing or out of range is refused
// naming deadlineDays, storing nothing; a read-only key may not write it;
// statistics may not then be enabled beside it.
// Its runs, with their proofs, come from the run history route.
func TestErasureThroughTheAPI(t *testing.T) {
	f := keyedServer(t)
	table := "/tables/" + url.PathEscape(bucketARN) + "/demo/events/maintenance"
	do := func(method, path, body, key, secret string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, f.url+path, strings.NewReader(body))
		resp, err := signedDo(req, key, secret)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, bad := range []string{
		`{"value":{"status":"enabled"}}`,
		`{"value":{"status":"enabled","settings":{"icebergErasure":{"deadlineDays":0}}}}`,
		`{"value":{"status":"enabled","settings":{"icebergErasure":{"deadlineDays":36501}}}}`,
	} {
		if code, body := do(http.MethodPut, table+"/icebergErasure", bad, "AKADMIN", adminSecret); code != http.StatusBadRequest || !strings.Contains(body, "deadlineDays") {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	own := table + "?include=icekeeper"
	if _, body := do(http.MethodGet, own, "", "AKADMIN", adminSecret); strings.Contains(body, "deadlineDays") {
		t.Fatalf("a refused PUT stored something: %s", body)
	}
	good := `{"value":{"status":"enabled","settings":{"icebergErasure":{"deadlineDays":7}}}}`
	if code, body := do(http.MethodPut, table+"/icebergErasure", good, "AKVIEW", viewSecret); code != http.StatusForbidden {
		t.Errorf("read-only key: %d %s", code, body)
	}
	if code, body := do(http.MethodPut, table+"/icebergErasure", good, "AKADMIN", adminSecret); code != http.StatusNoContent {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if code, body := do(http.MethodGet, own, "", "AKVIEW", viewSecret); code != http.StatusOK || !strings.Contains(body, `"icebergErasure":{"status":"enabled","settings":{"icebergErasure":{"deadlineDays":7}}}`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	if code, body := do(http.MethodGet, table, "", "AKVIEW", viewSecret); code != http.StatusOK || strings.Contains(body, "icebergErasure") || !strings.Contains(body, "icebergCompaction") {
		t.Fatalf("GET without asking for icekeeper's types: %d %s", code, body)
	}
	// Statistics are not enabled beside erasure (their sketches would keep
	// hashes of removed rows past the deadline): refused, naming erasure.
	if code, body := do(http.MethodPut, table+"/icebergStatistics", `{"value":{"status":"enabled"}}`, "AKADMIN", adminSecret); code != http.StatusBadRequest || !strings.Contains(body, "icebergErasure") {
		t.Errorf("statistics beside erasure: %d %s", code, body)
	}
	runs := "/icekeeper/v1/tables/" + url.PathEscape(bucketARN) + "/demo/events/runs?type=icebergErasure"
	if code, body := do(http.MethodGet, runs, "", "AKVIEW", viewSecret); code != http.StatusOK || !strings.Contains(body, `"icebergErasure":[]`) {
		t.Fatalf("runs: %d %s", code, body)
	}
}
