package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/redact"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// cmdCheck validates a configuration and prints it resolved, touching no
// network and writing nothing; with --connect it also reaches every
// catalog, storage and the state store, still without changing any.
func cmdCheck(ctx context.Context, env *cliEnv, args []string) error {
	var c commonFlags
	fs := newFlagSet(env, "check", "[--connect]",
		"Validates the configuration and prints it resolved (secrets masked) with what each job type does by default. "+
			"Touches no network and writes nothing; --connect also reaches each catalog, storage and the state store.")
	c.register(fs)
	connect := fs.Bool("connect", false, "reach each catalog, its storage and the state store, and report each")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := c.checkedConfig()
	if err != nil {
		return err
	}
	printConfig(env.stdout, cfg)
	if !*connect {
		return nil
	}
	// The embedded default's catalog is created by its first open: before
	// demo there is nothing to reach, and reaching would create it.
	if home, err := configs.Home(); err == nil && cfg.File == "" && !configs.EmbeddedCreated(home) {
		return usagef("the embedded default has no tables yet: run `icekeeper demo` first, or give --config FILE")
	}
	logger, err := c.logger()
	if err != nil {
		return err
	}
	writeln(env.stdout, "\nconnecting (each within %v):", c.connectTimeout)
	failed := 0
	report := func(what string, err error, ok string) {
		if err != nil {
			failed++
			writeln(env.stdout, "  %-28s FAILED: %s", what, redact.Text(err.Error()))
			return
		}
		writeln(env.stdout, "  %-28s ok: %s", what, ok)
	}
	sctx, cancel := c.bounded(ctx)
	have, want, err := state.Probe(sctx, cfg.State)
	cancel()
	switch {
	case errors.Is(err, state.ErrNotCreated):
		writeln(env.stdout, "  %-28s ok: %v", "state store", err)
	case err == nil && have > want:
		report("state store", fmt.Errorf("schema version %d is newer than this icekeeper's %d: upgrade icekeeper", have, want), "")
	case err == nil && have < want:
		report("state store", nil, fmt.Sprintf("reached, schema version %d (the next run or serve migrates it to %d)", have, want))
	default:
		report("state store", err, fmt.Sprintf("reached, schema version %d", have))
	}
	registry := cfg.Registry().WithLogger(logger)
	defer registry.Close()
	for _, b := range registry.Buckets() {
		lctx, cancel := c.bounded(ctx)
		ids, err := b.Tables(lctx)
		cancel()
		report("bucket "+b.Name()+" catalog", err, fmt.Sprintf("%d tables", len(ids)))
		if err != nil {
			continue
		}
		// Storage is reached where a table lives: a REST catalog's
		// warehouse is a name (an ARN), not a location.
		location := b.Properties()["warehouse"]
		if len(ids) > 0 {
			lctx, cancel := c.bounded(ctx)
			tbl, err := b.LoadTable(lctx, ids[0])
			cancel()
			if err != nil {
				report("bucket "+b.Name()+" storage", fmt.Errorf("load %s: %w", ids[0], err), "")
				continue
			}
			location = tbl.Location()
		} else if !strings.Contains(location, "://") {
			writeln(env.stdout, "  %-28s not reached: no table, and the warehouse %q is not a location", "bucket "+b.Name()+" storage", location)
			continue
		}
		lctx, cancel = c.bounded(ctx)
		err = orphan.Reach(lctx, location, b.Properties())
		cancel()
		report("bucket "+b.Name()+" storage", err, redact.URI(location))
	}
	if failed > 0 {
		return fmt.Errorf("check: %d of the configuration's endpoints could not be reached", failed)
	}
	return nil
}

// checkedConfig is loadConfig for check: the embedded default is shown
// even before `demo` created it, and nothing is created.
func (c *commonFlags) checkedConfig() (*configs.Config, error) {
	if c.config == "" && os.Getenv(configs.EnvConfig) == "" {
		home, err := configs.Home()
		if err != nil {
			return nil, err
		}
		return configs.Embedded(home), nil
	}
	return c.loadConfig()
}

// bounded is ctx within the connect timeout.
func (c *commonFlags) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, c.connectTimeout, fmt.Errorf("no answer within %v", c.connectTimeout))
}

// printConfig writes cfg as resolved: paths made absolute, defaults
// filled, every credential masked.
func printConfig(w io.Writer, cfg *configs.Config) {
	name := cfg.File
	if name == "" {
		name = "the embedded default"
	}
	writeln(w, "configuration %s: valid", name)
	writeln(w, "  listen  %s", cfg.Listen)
	writeln(w, "  state   %s", redact.URI(cfg.State))
	if n := len(cfg.API.Keys); n > 0 {
		ro := 0
		for _, k := range cfg.API.Keys {
			if k.ReadOnly {
				ro++
			}
		}
		writeln(w, "  api     %d keys (%d read-only), SigV4 signing name %s", n, ro, cmp.Or(cfg.API.SigningName, "s3tables"))
	} else {
		writeln(w, "  api     no keys: unauthenticated, loopback only")
	}
	p := cfg.Prices
	writeln(w, "  prices  requests $%g per 1,000 PUT, POST, LIST and $%g per 1,000 GET, HEAD; S3 Tables' compaction $%g per 1,000 objects, $%g per GB bin-packed, $%g sorted",
		p.PutPer1000, p.GetPer1000, p.ObjectsPer1000, p.BinpackPerGB, p.SortPerGB)
	for _, b := range cfg.Buckets {
		writeln(w, "\nbucket %s (%s)", b.Name(), b.ARN)
		writeln(w, "  catalog %s, opened as %q", b.Catalog["type"], b.CatalogName)
		for _, k := range slices.Sorted(maps.Keys(b.Catalog)) {
			if k == "type" {
				continue
			}
			writeln(w, "    %s: %s", k, maskProperty(k, b.Catalog[k]))
		}
		if len(b.PassThroughProperties) > 0 {
			writeln(w, "  passed through unchecked: %s", strings.Join(b.PassThroughProperties, ", "))
		}
		writeln(w, "  jobs (this bucket's defaults, before a table's or the API's settings; schedule; settings):")
		defaults := b.Defaults()
		for _, typ := range maintenance.Types() {
			resolved := maintenance.Resolve(typ.Name, defaults.Configs[typ.Name])
			schedule := cmp.Or(cfg.Schedules.For(typ.Name), typ.Schedule)
			writeln(w, "    %-32s %-8s %-16s %s", typ.Name, resolved.Status, schedule, settingsText(resolved, typ.Name))
		}
	}
	printDomains(w, cfg)
}

// printDomains names the buckets that share a catalog database or
// storage: valid, but their tables can hold each other's files, so
// removal and erasure look at all of them together.
func printDomains(w io.Writer, cfg *configs.Config) {
	name := func(arn string) string {
		if b, ok := cfg.Bucket(arn); ok {
			return b.Name()
		}
		return arn
	}
	for _, d := range cfg.Domains() {
		if len(d.Buckets) < 2 {
			continue
		}
		names := make([]string, len(d.Buckets))
		for i, arn := range d.Buckets {
			names[i] = name(arn)
		}
		writeln(w, "\nbuckets %s are one reference domain: removal and erasure treat them as one, each table's run keeping what any table of them references",
			strings.Join(names, ", "))
		for _, l := range d.Links {
			writeln(w, "  %s and %s %s", name(l.A), name(l.B), redact.Text(l.Why))
		}
		for _, arn := range d.Buckets {
			if b, ok := cfg.Bucket(arn); ok && b.ReadOnly {
				writeln(w, "  %s is readOnly: its tables are read for references, never maintained", name(arn))
			}
		}
	}
}

// settingsText is a job type's settings as key=value pairs, from their
// wire form (the API's).
func settingsText(c maintenance.Config, typ maintenance.JobType) string {
	data, err := json.Marshal(c)
	if err != nil {
		return err.Error()
	}
	var wire struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return string(data)
	}
	// The maintenance types nest their settings under the type's name;
	// record expiration's are flat ({"days": 30}), as S3 Tables has them.
	settings := wire.Settings
	if nested, ok := wire.Settings[string(typ)].(map[string]any); ok {
		settings = nested
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, settings[k]))
	}
	return strings.Join(parts, " ")
}

// maskProperty hides a credential property's value, and the password in
// a URI (a SQL catalog's connection string).
func maskProperty(key, value string) string {
	if redact.Sensitive(key) || strings.HasPrefix(key, "adls.sas-token.") || strings.HasPrefix(key, "adls.connection-string.") {
		return redact.Mask
	}
	return redact.URI(value)
}
