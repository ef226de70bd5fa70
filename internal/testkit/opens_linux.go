package testkit

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// Opens counts the files opened in one directory of the local disk, by
// kind, with inotify: what the kernel saw opened, whichever code opened
// it, so a test can bound the reads of a run without a hook in the code.
type Opens struct {
	t  testing.TB
	fd int
}

// OpenCounts are the opens of a table's metadata directory since the last
// Take, by kind.
type OpenCounts struct {
	Metadata      int // *.metadata.json
	ManifestLists int // snap-*.avro
	Manifests     int // other *.avro
	Other         int
}

// WatchOpens starts counting the opens of files in dir and more (not
// recursive), together: one inotify instance however many directories,
// since a user may have few instances but many watches.
func WatchOpens(t testing.TB, dir string, more ...string) *Opens {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	for _, d := range append([]string{dir}, more...) {
		if _, err := syscall.InotifyAddWatch(fd, d, syscall.IN_OPEN); err != nil {
			syscall.Close(fd)
			t.Fatalf("watch %s: %v", d, err)
		}
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return &Opens{t: t, fd: fd}
}

// Take returns the opens counted since the last Take, and starts again.
// The kernel queues an event when open returns, so every open made
// before Take is counted.
func (o *Opens) Take() OpenCounts {
	o.t.Helper()
	var c OpenCounts
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(o.fd, buf)
		if errors.Is(err, syscall.EAGAIN) {
			return c
		}
		if err != nil {
			o.t.Fatalf("read inotify events: %v", err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			switch s := string(name); {
			case strings.HasSuffix(s, ".metadata.json"):
				c.Metadata++
			case strings.HasPrefix(s, "snap-") && strings.HasSuffix(s, ".avro"):
				c.ManifestLists++
			case strings.HasSuffix(s, ".avro"):
				c.Manifests++
			default:
				c.Other++
			}
		}
	}
}
