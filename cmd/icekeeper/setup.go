package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/internal/suggest"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/tables"
)

// commonFlags are accepted by every command that touches tables.
type commonFlags struct {
	config         string
	connectTimeout time.Duration
	// createHome lets the command create the embedded default's data
	// directory (serve does); the others refuse to run on one that does
	// not exist rather than leave an empty one behind.
	createHome bool
	logLevel   string
	// daemon logs JSON at info by default (serve); the one-shot commands
	// log text, and only warnings unless asked.
	daemon bool
	// maintains refuses a table of a read-only bucket before its catalog
	// is opened (run does).
	maintains bool
	stderr    io.Writer // where logs go: the flag set's output
}

// logger is the command's logger on stderr, at --log-level.
func (c *commonFlags) logger() (*slog.Logger, error) {
	level := slog.LevelWarn
	if c.daemon {
		level = slog.LevelInfo
	}
	if c.logLevel != "" {
		if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
			return nil, usagef("--log-level: %q is not one of debug, info, warn, error", c.logLevel)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.daemon {
		return slog.New(redact.Handler(slog.NewJSONHandler(c.stderr, opts))), nil
	}
	return slog.New(redact.Handler(slog.NewTextHandler(c.stderr, opts))), nil
}

// newFlagSet returns a command's flag set, printing to stderr.
func newFlagSet(env *cliEnv, name, args, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: icekeeper %s %s\n\n%s\n\nFlags:\n", name, args, summary)
		fs.PrintDefaults()
	}
	return fs
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	c.stderr = fs.Output()
	fs.StringVar(&c.config, "config", "", "configuration file (default $"+configs.EnvConfig+", else the embedded default)")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", 30*time.Second, "how long to wait for a catalog or state store to answer")
	fs.StringVar(&c.logLevel, "log-level", os.Getenv(EnvLogLevel), "debug, info, warn or error; debug logs catalog opens, table loads and the state store with their durations (default $"+EnvLogLevel+", else info for serve and warn for the others)")
}

// EnvLogLevel is the environment variable that sets --log-level.
const EnvLogLevel = "ICEKEEPER_LOG_LEVEL"

// parseFlags parses args silently: -h prints the usage once, and a bad
// flag becomes one error, with a suggestion, that Main prints.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
			name = "--" + strings.TrimLeft(name, "-")
			return usagef("unknown flag %s%s; icekeeper %s -h lists the flags", name, suggest.DidYouMean(name, flagNames(fs)), fs.Name())
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q; icekeeper %s -h lists the flags", fs.Arg(0), fs.Name())
	}
	return checkPositive(fs)
}

// checkPositive refuses a count or duration flag below 1 (below 0 for a
// grace period, and for --fan-out-groups, where 0 turns fan-out off):
// every one of them bounds something, and none has a meaning for zero or
// less that a replacement default would honour.
func checkPositive(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		min := 1
		if strings.HasSuffix(f.Name, "-grace") || f.Name == "fan-out-groups" {
			min = 0
		}
		switch v := f.Value.(flag.Getter).Get().(type) {
		case int:
			if v < min {
				err = usagef("--%s: %d is below the minimum %d", f.Name, v, min)
			}
		case time.Duration:
			if min == 1 && v <= 0 {
				err = usagef("--%s: %v must be positive", f.Name, v)
			} else if v < 0 {
				err = usagef("--%s: %v must not be negative", f.Name, v)
			}
		}
	})
	return err
}

// loadConfig reads --config, $ICEKEEPER_CONFIG, or the embedded default.
func (c *commonFlags) loadConfig() (*configs.Config, error) {
	file := c.config
	if file == "" {
		file = os.Getenv(configs.EnvConfig)
	}
	if file == "" {
		home, err := configs.Home()
		if err != nil {
			return nil, err
		}
		if c.createHome {
			if home, err = embeddedHome(); err != nil {
				return nil, err
			}
		} else if !configs.EmbeddedCreated(home) {
			return nil, usagef("the embedded default in %s has no tables yet: run `icekeeper demo` to create the demo table, or give --config FILE", home)
		}
		return configs.Embedded(home), nil
	}
	cfg, err := configs.Load(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("configuration file %s does not exist", file)
		}
		return nil, err
	}
	return cfg, nil
}

// world is what most commands need: configuration, buckets, the store and
// the settings resolver over both.
type world struct {
	cfg      *configs.Config
	registry *bucket.Registry
	store    state.Store
	resolver *jobs.Resolver
	logger   *slog.Logger
	// loaded is the table --table named, when resolving it had to load
	// it (a REST catalog), for the first run to start from.
	loaded *table.Table
}

func (w *world) Close() {
	if w.registry != nil {
		w.registry.Close()
	}
	if w.store != nil {
		w.store.Close()
	}
}

func (c *commonFlags) open(ctx context.Context, withStore bool) (*world, error) {
	logger, err := c.logger()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cfg, err := c.loadConfig()
	if err != nil {
		return nil, err
	}
	logger.Debug("configuration loaded", "buckets", len(cfg.Buckets), "duration", time.Since(start))
	w := &world{cfg: cfg, registry: cfg.Registry().WithLogger(logger), logger: logger}
	if withStore {
		if err := c.openStore(ctx, w); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// openStore opens w's state store (creating a SQLite one, and migrating
// either) and its settings resolver. Commands on a table open it once the
// table was found, so a configuration whose catalog cannot be reached
// leaves no store behind.
func (c *commonFlags) openStore(ctx context.Context, w *world) error {
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	defer cancel()
	store, err := state.Open(sctx, w.cfg.State)
	if err != nil {
		return err
	}
	w.logger.Debug("state store opened", "store", redact.URI(w.cfg.State), "duration", time.Since(start))
	w.store, w.resolver = store, &jobs.Resolver{Store: store, Defaults: w.cfg.Defaults()}
	return nil
}

// resolve finds the bucket and table of a --table reference, opening the
// bucket's catalog within the connect timeout.
func (c *commonFlags) resolve(ctx context.Context, w *world, ref string) (*bucket.Bucket, bucket.TableID, error) {
	if ref == "" {
		return nil, bucket.TableID{}, usagef("--table is required (BUCKET/NAMESPACE/TABLE, e.g. local/demo/events)")
	}
	plain, byID := tableRef(ref)
	if byID {
		return c.resolveByID(ctx, w, ref)
	}
	r, err := bucket.ParseRef(plain)
	if err != nil {
		return nil, bucket.TableID{}, err
	}
	b, err := w.registry.Bucket(r.Bucket)
	if err != nil {
		if errors.Is(err, bucket.ErrUnknownBucket) {
			names := make([]string, 0, len(w.cfg.Buckets))
			for _, cb := range w.cfg.Buckets {
				names = append(names, cb.Name())
			}
			err = fmt.Errorf("%w%s", err, suggest.DidYouMean(r.Bucket, names))
		}
		return nil, bucket.TableID{}, err
	}
	if c.maintains {
		if err := jobs.CheckWritable(b); err != nil {
			return nil, bucket.TableID{}, err
		}
	}
	cctx, cancel := context.WithTimeoutCause(ctx, c.connectTimeout, fmt.Errorf("no answer within %v", c.connectTimeout))
	defer cancel()
	if _, err := b.Catalog(cctx); err != nil {
		return nil, bucket.TableID{}, err
	}
	// Whether the table exists, not its metadata: the job loads that
	// itself, once. A REST catalog that advertises no HEAD route answers
	// an existence check with the whole table load, so there the table
	// is loaded here, and the first run starts from it.
	if b.Properties()["type"] == "rest" {
		tbl, err := b.LoadTable(ctx, r.Table)
		if err != nil {
			return nil, bucket.TableID{}, suggestTable(cctx, b, r, err)
		}
		w.loaded = tbl
		return b, r.Table, nil
	}
	if err := b.Exists(cctx, r.Table); err != nil {
		return nil, bucket.TableID{}, suggestTable(cctx, b, r, err)
	}
	return b, r.Table, nil
}

// openDropped opens the world with its store and the bucket ref, records
// dropped the tables of the bucket the registry knows and a listing no
// longer has, and returns the bucket's dropped tables.
func (c *commonFlags) openDropped(ctx context.Context, ref string) (*world, *bucket.Bucket, []state.TableRecord, error) {
	w, err := c.open(ctx, true)
	if err != nil {
		return nil, nil, nil, err
	}
	b, recs, err := func() (*bucket.Bucket, []state.TableRecord, error) {
		b, err := w.registry.Bucket(ref)
		if err != nil {
			return nil, nil, err
		}
		listed, err := b.Tables(ctx)
		if err != nil {
			return nil, nil, err
		}
		if _, err := (&tables.Registry{Store: w.store, Logger: w.logger}).Forget(ctx, b, listed); err != nil {
			return nil, nil, err
		}
		recs, err := w.store.DroppedTables(ctx, b.ARN(), time.Time{})
		return b, recs, err
	}()
	if err != nil {
		w.Close()
		return nil, nil, nil, err
	}
	return w, b, recs, nil
}

// resolveByID finds the table of a table ARN that names it by an ID, as
// S3 Tables prints table ARNs.
func (c *commonFlags) resolveByID(ctx context.Context, w *world, ref string) (*bucket.Bucket, bucket.TableID, error) {
	bucketARN, id, _ := cutTableARN(ref)
	b, err := w.registry.Bucket(bucketARN)
	if err != nil {
		return nil, bucket.TableID{}, err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, c.connectTimeout, fmt.Errorf("no answer within %v", c.connectTimeout))
	defer cancel()
	t, err := tableByID(cctx, b, ref, id)
	if err != nil {
		return nil, bucket.TableID{}, err
	}
	return b, t, nil
}

func writeln(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

// embeddedHome returns the embedded default's data directory, created if
// missing so that its SQLite catalog and store can be opened.
func embeddedHome() (string, error) {
	home, err := configs.Home()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(home, "warehouse"), 0o755); err != nil {
		return "", fmt.Errorf("create data directory: %w", err)
	}
	return home, nil
}

// openTable opens the world with its store and resolves --table; the
// caller closes the world.
func (c *commonFlags) openTable(ctx context.Context, ref string) (*world, jobs.Target, error) {
	w, err := c.open(ctx, false)
	if err != nil {
		return nil, jobs.Target{}, err
	}
	b, id, err := c.resolve(ctx, w, ref)
	if err == nil {
		err = c.openStore(ctx, w)
	}
	if err != nil {
		w.Close()
		return nil, jobs.Target{}, err
	}
	return w, jobs.Target{Bucket: b, Table: id}, nil
}
