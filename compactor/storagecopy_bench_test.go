package compactor

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
	"github.com/icekeeper/icekeeper/internal/testkit/tableenv"
)

// BenchmarkStorageCopies compacts a table of healthy row groups (8 files
// of two row groups of 400,000 rows, about 6 MB each: 100 MB) into one
// file, with the row groups copied by the storage (S3 part copies,
// copy_file_range on local disk) and, side by side, read and written by
// icekeeper (Job.NoStorageCopies), on local disk and on S3 (versitygw on
// loopback). It reports icekeeper's CPU per GB copied, user and system
// apart, and the bytes that passed through icekeeper per byte compacted
// (on S3, the meter's bytes read and uploaded; on local disk not
// counted). The row check is on, as by default.
//
//	go test -run '^$' -bench StorageCopies -benchtime 3x ./compactor   # with scripts/servers.sh's variables for s3
func BenchmarkStorageCopies(b *testing.B) {
	for _, storage := range []string{"local", "s3"} {
		for _, old := range []bool{false, true} {
			name := storage + "/" + map[bool]string{false: "storage-copies", true: "read-and-write"}[old]
			b.Run(name, func(b *testing.B) { benchStorageCopies(b, storage, old) })
		}
	}
}

func benchStorageCopies(b *testing.B, storage string, old bool) {
	var user, sys time.Duration
	var through, in int64
	var wall time.Duration
	for range b.N {
		b.StopTimer()
		e := benchCopyEnv(b, storage)
		healthyTable(e, e.Load(), 8)
		runtime.GC()
		u0, s0 := rusage()
		start := time.Now()
		b.StartTimer()
		out, fig := e.compact(&Job{MinInputFiles: 2, NoStorageCopies: old})
		b.StopTimer()
		wall += time.Since(start)
		u1, s1 := rusage()
		if out.Status != state.Successful || fig.RowGroupsCopied != 16 || fig.OutputFiles != 1 {
			b.Fatalf("%s %s: %d row groups copied, %d outputs", out.Status, out.FailureMessage, fig.RowGroupsCopied, fig.OutputFiles)
		}
		user, sys = user+u1-u0, sys+s1-s0
		through += throughBytes(fig.Cost)
		in += fig.InputBytes
	}
	gb := float64(in) / 1e9
	b.ReportMetric(user.Seconds()/gb, "user-s/GB")
	b.ReportMetric(sys.Seconds()/gb, "sys-s/GB")
	b.ReportMetric((user+sys).Seconds()/gb, "cpu-s/GB")
	b.ReportMetric(float64(in)/1e6/wall.Seconds(), "MB/s")
	if storage == "s3" {
		b.ReportMetric(float64(through)/float64(in), "through-bytes/byte")
	}
}

// benchCopyEnv is a fresh table on local disk or on S3 (versitygw, with
// its SQL catalog on PostgreSQL).
func benchCopyEnv(b *testing.B, storage string) *env {
	home := b.TempDir()
	cfg := configs.Embedded(home)
	if storage == "s3" {
		srv := servers.S3(b)
		props := srv.Props()
		props["type"], props["uri"], props["warehouse"] = "sql", servers.Postgres(b), "s3://"+srv.Bucket+"/warehouse"
		cfg.Buckets[0].Catalog = props
	}
	e, _ := newEnvWith(b, cfg, home, tableenv.BaseSchema, *iceberg.UnpartitionedSpec, "2")
	return e
}

// rusage is the process's user and system time so far.
func rusage() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
