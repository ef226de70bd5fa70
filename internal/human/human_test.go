package human

import (
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Bytes(0), "0 B"},
		{Bytes(1023), "1023 B"},
		{Bytes(1536), "1.5 KiB"},
		{Bytes(5 << 30), "5.0 GiB"},
		{Duration(850 * time.Millisecond), "850 ms"},
		{Duration(3210 * time.Millisecond), "3.2 s"},
		{Duration(3*time.Minute + 4*time.Second), "3 min 4 s"},
		{Duration(2*time.Hour + 5*time.Minute), "2 h 5 min"},
		{USD(0), "$0"},
		{USD(0.0000123), "$0.000012"},
		{USD(0.0012), "$0.0012"},
		{USD(0.5), "$0.50"},
		{USD(12.345), "$12.35"},
		{Count(1, "file"), "1 file"},
		{Count(0, "snapshot"), "0 snapshots"},
		{Count(21, "file"), "21 files"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
