package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// settingsSecret is the daemon's one API key's secret in these tests.
const settingsSecret = "settings-secret-0123456789"

// serveWithKeys starts a daemon on the demo table with API keys on and
// returns its endpoint; the test's end stops it.
func serveWithKeys(t *testing.T, c *cli) string {
	t.Helper()
	c.must("demo")
	cfgFile := filepath.Join(t.TempDir(), "icekeeper.yaml")
	addr := servers.FreeAddr(t)
	writeHomeConfig(t, cfgFile, c.home, addr, "", "{}")
	f, err := os.OpenFile(cfgFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "api:\n  keys:\n    - {accessKeyId: AKSETTINGS, secretAccessKey: %s}\n", settingsSecret)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"serve", "--config", cfgFile, "--shutdown-grace", "10s"}, io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within its grace period")
		}
	})
	endpoint := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(endpoint + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not answer /healthz: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settings put then get against a daemon with keys, for erasure (which
// the AWS CLI cannot send), a table type, record expiration and the
// bucket type; a misspelt setting, a value the server refuses, a missing
// --type, a bad sub-command and a missing key are each refused with what
// was wrong, in one line.
func TestSettingsCommand(t *testing.T) {
	c := newCLI(t)
	endpoint := serveWithKeys(t, c)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	keys := []string{"--endpoint", endpoint, "--access-key-id", "AKSETTINGS", "--secret-access-key", settingsSecret}
	settings := func(sub string, args ...string) (int, string, string) {
		return c.run(append(append([]string{"settings", sub}, keys...), args...)...)
	}
	table := []string{"--table", "local/demo/events"}

	for _, put := range [][]string{
		append([]string{"--type", "erasure", "--status", "enabled", "deadlineDays=7"}, table...),
		// Flags after the settings too.
		append([]string{"--type", "icebergCompaction", "targetFileSizeMB=256", "strategy=binpack"}, table...),
		append([]string{"--type", "records", "--status", "enabled", "days=30"}, table...),
		{"--bucket", "local", "--type", "icebergUnreferencedFileRemoval", "unreferencedDays=4", "nonCurrentDays=11"},
	} {
		if code, out, errOut := settings("put", put...); code != 0 {
			t.Fatalf("settings put %v: exit %d\n%s%s", put, code, out, errOut)
		}
	}
	code, out, errOut := settings("get", table...)
	if code != 0 {
		t.Fatalf("settings get: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"deadlineDays=7", "targetFileSizeMB=256 strategy=binpack", "days=30", "icebergSnapshotManagement"} {
		if !strings.Contains(out, want) {
			t.Errorf("settings get lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "icebergUnreferencedFileRemoval") {
		t.Errorf("a table's settings list the bucket's type:\n%s", out)
	}
	_, out, _ = settings("get", "--bucket", "local")
	if !strings.Contains(out, "icebergUnreferencedFileRemoval") || !strings.Contains(out, "unreferencedDays=4 nonCurrentDays=11") {
		t.Errorf("settings get --bucket:\n%s", out)
	}
	code, out, errOut = settings("get", append([]string{"--type", "icebergErasure", "--json"}, table...)...)
	var got struct {
		TableARN      string `json:"tableARN"`
		Configuration map[string]struct {
			Status   string                    `json:"status"`
			Settings map[string]map[string]int `json:"settings"`
		} `json:"configuration"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("settings get --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if e := got.Configuration["icebergErasure"]; len(got.Configuration) != 1 || e.Status != "enabled" || e.Settings["icebergErasure"]["deadlineDays"] != 7 {
		t.Errorf("settings get --json: %s", out)
	}
	// Without --status a put keeps the type's status.
	if code, out, errOut := settings("put", append([]string{"--type", "erasure", "deadlineDays=3"}, table...)...); code != 0 || !strings.Contains(out, "enabled deadlineDays=3") {
		t.Errorf("put without --status: exit %d\n%s%s", code, out, errOut)
	}

	for _, bad := range []struct {
		args []string
		code int
		want []string
	}{
		{append([]string{"--type", "erasure", "deadlineDay=7"}, table...), exitUsage, []string{`"deadlineDay"`, "did you mean deadlineDays?"}},
		{append([]string{"--type", "erasure", "deadlineDays=seven"}, table...), exitUsage, []string{"deadlineDays=seven", "whole number"}},
		{append([]string{"--type", "erasure", "deadlineDays=0"}, table...), exitFailed, []string{"BadRequestException", "deadlineDays"}},
		{append([]string{"deadlineDays=7"}, table...), exitUsage, []string{"--type is required"}},
		{append([]string{"--type", "unreferenced", "unreferencedDays=4"}, table...), exitUsage, []string{"--bucket"}},
		{append([]string{"--type", "erasur", "deadlineDays=7"}, table...), exitUsage, []string{"did you mean erasure?"}},
	} {
		code, out, errOut := settings("put", bad.args...)
		if code != bad.code {
			t.Errorf("settings put %v: exit %d, want %d\n%s%s", bad.args, code, bad.code, out, errOut)
		}
		for _, w := range bad.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("settings put %v: stderr lacks %q:\n%s", bad.args, w, errOut)
			}
		}
	}
	for _, args := range [][]string{
		{"settings"},
		{"settings", "gte"},
		{"settings", "get", "--endpoint", endpoint, "--table", "local/demo/events", "--bucket", "local"},
		{"settings", "put", "--endpoint", endpoint, "--table", "local/demo/events", "--type", "erasure", "deadlineDays"},
		{"settings", "put", "--endpoint", endpoint, "--table", "local/demo/events", "--type", "erasure"},
	} {
		if code, _, errOut := c.run(args...); code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || strings.Contains(errOut, "***") {
			t.Errorf("icekeeper %v: exit %d, want %d with one line:\n%s", args, code, exitUsage, errOut)
		}
	}
	// The refused value changed nothing.
	if _, out, _ := settings("get", append([]string{"--type", "erasure"}, table...)...); !strings.Contains(out, "deadlineDays=3") {
		t.Errorf("after a refused put:\n%s", out)
	}
	// Without the key, the daemon refuses, and the message says why.
	code, _, errOut = c.run(append([]string{"settings", "get", "--endpoint", endpoint}, table...)...)
	if code != exitFailed || !strings.Contains(errOut, "icekeeper settings:") {
		t.Errorf("settings get without a key: exit %d\n%s", code, errOut)
	}
}

// -h of the commands that sign with keys from the environment never
// prints the secret.
func TestHelpHidesSecret(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "visible-secret-123")
	c := newCLI(t)
	for _, cmd := range []string{"status", "settings"} {
		_, out, errOut := c.run(cmd, "-h")
		if strings.Contains(out+errOut, "visible-secret-123") {
			t.Errorf("%s -h prints the secret:\n%s%s", cmd, out, errOut)
		}
	}
}
