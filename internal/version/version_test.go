package version

import "testing"

// A stamped build reports what the linker set; an unstamped one never
// reports an empty string.
func TestStamped(t *testing.T) {
	for _, f := range []func() string{Version, Commit, Date} {
		if f() == "" {
			t.Fatal("an unstamped build reports an empty value")
		}
	}
	version, commit, date = "v1.2.3", "abc123", "2026-12-01T00:00:00Z"
	t.Cleanup(func() { version, commit, date = "", "", "" })
	if Version() != "v1.2.3" || Commit() != "abc123" || Date() != "2026-12-01T00:00:00Z" {
		t.Fatalf("stamped: %s %s %s", Version(), Commit(), Date())
	}
}
