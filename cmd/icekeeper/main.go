// Command icekeeper keeps Apache Iceberg tables healthy: compaction,
// snapshot management and unreferenced file removal, as a daemon, as a
// one-shot job per table, and through an S3 Tables–compatible API.
//
// This package parses flags and wires the packages together; the work is
// done elsewhere.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/errtext"
	"github.com/icekeeper/icekeeper/internal/initgc"
	"github.com/icekeeper/icekeeper/internal/progress"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/suggest"
	"github.com/icekeeper/icekeeper/orphan"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // a job failed, or a server or store could not be reached
	exitUsage  = 2 // bad flags, configuration, bucket or table reference
)

// usageError marks an error that is the user's input (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type command struct {
	name, summary string
	run           func(ctx context.Context, env *cliEnv, args []string) error
}

var commands = []command{
	{"serve", "run the daemon: scheduler and API", cmdServe},
	{"run", "run maintenance on one table now", cmdRun},
	{"check", "validate the configuration and print it resolved; --connect reaches each endpoint", cmdCheck},
	{"tables", "list every table with its health", cmdTables},
	{"noncurrent", "list a table's noncurrent (marked unreferenced) objects", cmdNoncurrent},
	{"restore", "protect noncurrent objects: keep them, and do not mark them again", cmdRestore},
	{"release", "end restore's protection, so removal evaluates the objects afresh", cmdRelease},
	{"erasure", "show the proof icebergErasure recorded: what held removed rows, and when it went", cmdErasure},
	{"verify", "recompute from storage whether a commit kept exactly the rows it rewrote", cmdVerify},
	{"status", "show a table's status and recent runs from a running daemon", cmdStatus},
	{"settings", "get or put a table's or bucket's job settings (every type) through a running daemon", cmdSettings},
	{"demo", "create the embedded default's demo table", cmdDemo},
	{"version", "print the version", cmdVersion},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cliEnv carries the process's streams to the commands.
type cliEnv struct {
	stdout, stderr io.Writer
}

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	initgc.Done()
	// Progress bars and log lines share stderr: through one Terminal, a
	// log line clears the bar before it and draws it again after.
	env := &cliEnv{stdout: stdout, stderr: progress.For(stderr)}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "-v" {
		args = append([]string{"version"}, args[1:]...)
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, env, args[1:])
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.Is(err, errJobFailed), errors.Is(err, errNotVerified):
			return exitFailed
		}
		fmt.Fprintf(stderr, "icekeeper %s: %s\n", c.name, redact.Text(oneLine(err)))
		if isUsage(err) {
			return exitUsage
		}
		return exitFailed
	}
	fmt.Fprintf(stderr, "icekeeper: unknown command %q%s\n\n", args[0], suggest.DidYouMean(args[0], names))
	printUsage(stderr)
	return exitUsage
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u) ||
		errors.Is(err, configs.ErrInvalid) ||
		errors.Is(err, bucket.ErrBadRef) ||
		errors.Is(err, bucket.ErrUnknownBucket) ||
		errors.Is(err, bucket.ErrNoSuchTable) ||
		errors.Is(err, orphan.ErrNotMarked)
}

// oneLine folds a multi-line error (errors.Join, wrapped driver errors)
// into one line, as the CLI promises, with the AWS SDK's long operation
// errors shortened to service, operation, status and cause.
func oneLine(err error) string { return errtext.Short(err) }

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "icekeeper keeps Apache Iceberg tables healthy.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: icekeeper COMMAND [flags]   (icekeeper COMMAND -h for a command's flags)")
	fmt.Fprintln(w, "       icekeeper --version")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Configuration: --config FILE or $%s; without either, the embedded\n", configs.EnvConfig)
	fmt.Fprintf(w, "default in $%s (default ./icekeeper-data) is used.\n", configs.EnvHome)
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 a job failed or a service was unreachable, 2 bad usage or configuration.")
}
