package configs

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/robfig/cron/v3"

	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/planner"
)

// CatalogTypes are the catalog implementations icekeeper links in.
var CatalogTypes = []string{"sql", "rest", "glue", "hive"}

// finish applies defaults and validates; the first problem is returned.
func (c *Config) finish() error {
	errf := func(p, format string, args ...any) error {
		return &Error{File: c.File, Path: p, Msg: fmt.Sprintf(format, args...)}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		return errf("listen", "%q is not a host:port address", c.Listen)
	}
	if c.State == "" {
		return errf("state", "is required (sqlite://PATH or postgres://USER@HOST:PORT/DB)")
	}
	state, err := c.resolveState(c.State)
	if err != nil {
		return errf("state", "%v", err)
	}
	c.State = state

	for name, v := range map[string]float64{"putPer1000": c.Prices.PutPer1000, "getPer1000": c.Prices.GetPer1000,
		"objectsPer1000": c.Prices.ObjectsPer1000, "binpackPerGB": c.Prices.BinpackPerGB, "sortPerGB": c.Prices.SortPerGB} {
		if v < 0 {
			return errf("prices."+name, "%g is below the minimum 0", v)
		}
	}
	if len(c.Buckets) == 0 {
		return errf("buckets", "at least one bucket is required")
	}
	seen := map[string]int{}
	for i := range c.Buckets {
		b := &c.Buckets[i]
		p := fmt.Sprintf("buckets[%d]", i)
		if b.ARN == "" {
			return errf(p+".arn", "is required")
		}
		parsed, err := arn.Parse(b.ARN)
		if err != nil {
			return errf(p+".arn", "%v", err)
		}
		b.Parsed = parsed
		if j, dup := seen[parsed.Name]; dup {
			return errf(p+".arn", "bucket name %q is already used by buckets[%d]", parsed.Name, j)
		}
		seen[parsed.Name] = i
		if b.CatalogName == "" {
			b.CatalogName = parsed.Name
		}
		typ := b.Catalog["type"]
		if typ == "" {
			return errf(p+".catalog.type", "is required (one of %s)", strings.Join(CatalogTypes, ", "))
		}
		if !slices.Contains(CatalogTypes, typ) {
			return errf(p+".catalog.type", "%q is not one of %s", typ, strings.Join(CatalogTypes, ", "))
		}
		for _, key := range slices.Sorted(maps.Keys(b.Catalog)) {
			if why := checkProperty(typ, key, b.PassThroughProperties); why != "" {
				return errf(p+".catalog."+key, "%s", why)
			}
			if why := checkValue(typ, key, b.Catalog[key]); why != "" {
				return errf(p+".catalog."+key, "%s", why)
			}
		}
		for j, key := range b.PassThroughProperties {
			if key == "" || strings.ContainsAny(key, " \t") {
				return errf(fmt.Sprintf("%s.passThroughProperties[%d]", p, j), "%q is not a property name", key)
			}
		}
		if (typ == "sql" || typ == "rest") && b.Catalog["uri"] == "" {
			return errf(p+".catalog.uri", "is required for a %s catalog", typ)
		}
		for _, key := range []string{"uri", "warehouse"} {
			if v, ok := b.Catalog[key]; ok {
				b.Catalog[key] = c.resolveFileURI(v)
			}
		}
		switch b.TableRetentionProperties {
		case "":
			b.TableRetentionProperties = "conservative"
		case "conservative", "strict":
		default:
			return errf(p+".tableRetentionProperties", "%q is not conservative or strict", b.TableRetentionProperties)
		}
		if b.Compaction.MinFileAgeMinutes < 0 {
			return errf(p+".compaction.minFileAgeMinutes", "%d is below the minimum 0", b.Compaction.MinFileAgeMinutes)
		}
		if m := b.Compaction.MinManifestsToRewrite; m != nil && *m < 0 {
			return errf(p+".compaction.minManifestsToRewrite", "%d is below the minimum 0 (0 turns manifest rewrite off)", *m)
		}
		if m := b.Compaction.MinDeleteFilesToRewrite; m != nil && *m < 0 {
			return errf(p+".compaction.minDeleteFilesToRewrite", "%d is below the minimum 0 (0 turns delete-file compaction off)", *m)
		}
		if m := b.Compaction.MinEqualityDeleteFilesToConvert; m != nil && *m < 0 {
			return errf(p+".compaction.minEqualityDeleteFilesToConvert", "%d is below the minimum 0 (0 turns equality-delete conversion off)", *m)
		}
		if b.FreshnessTarget < 0 || (b.FreshnessTarget > 0 && b.FreshnessTarget < time.Second) {
			return errf(p+".freshnessTarget", "%v is not a target: set at least 1s, or 0s for none", b.FreshnessTarget)
		}
		if sa := b.Coexistence.StepAside; sa == nil {
			d := DefaultStepAside
			b.Coexistence.StepAside = &d
		} else if *sa < 0 {
			return errf(p+".coexistence.stepAside", "%v is negative (0s never steps aside)", *sa)
		}
		if fl := b.Coexistence.FlinkLock; fl != nil {
			if fl.Database == "" {
				return errf(p+".coexistence.flinkLock.database", "is required: the sqlite:// or postgres:// database of the Flink job's lock table")
			}
			db, err := c.resolveState(fl.Database)
			if err != nil {
				return errf(p+".coexistence.flinkLock.database", "%v", err)
			}
			fl.Database = db
			if fl.LockID == "" {
				fl.LockID = DefaultFlinkLockID
			}
			if len(fl.LockID) > 100 {
				return errf(p+".coexistence.flinkLock.lockId", "%q is longer than Flink's LOCK_ID column (100)", fl.LockID)
			}
		}
		if compat, _ := strconv.ParseBool(b.Catalog[icebergio.S3CompatMode]); b.S3UnsignedPayload && compat {
			// Unsigned, an upload's body is checked by its checksum alone,
			// which compat mode strips.
			return errf(p+".s3UnsignedPayload", "cannot be true with catalog %s: uploads would carry neither a signed body nor a checksum", icebergio.S3CompatMode)
		}
		if b.MaxDeletesPerRun < 0 {
			return errf(p+".maxDeletesPerRun", "%d is below the minimum 0 (0 means the default)", b.MaxDeletesPerRun)
		}
		if err := b.Budget.finish(p + ".budget"); err != nil {
			err.File = c.File
			return err
		}
		if err := b.CommitRate.finish(p+".commitRate", typ); err != nil {
			err.File = c.File
			return err
		}
		for gi, g := range b.SchemeEquivalence {
			if len(g) < 2 {
				return errf(fmt.Sprintf("%s.schemeEquivalence[%d]", p, gi), "a group needs at least two schemes")
			}
			for _, sc := range g {
				if sc == "" || strings.ContainsAny(sc, ":/ ") {
					return errf(fmt.Sprintf("%s.schemeEquivalence[%d]", p, gi), "%q is not a URI scheme", sc)
				}
			}
		}
		for _, t := range maintenance.JobTypes() {
			if err := b.Maintenance.For(t).Validate(t); err != nil {
				fes := maintenance.FieldErrors(err)
				if len(fes) == 0 {
					return errf(fmt.Sprintf("%s.maintenance.%s", p, t), "%v", err)
				}
				key := strings.TrimPrefix(fes[0].Key, "settings.")
				return errf(fmt.Sprintf("%s.maintenance.%s.%s", p, t, key), "%s", fes[0].Reason)
			}
		}
		// As planner.StatisticsSettingsOf refuses it for a table: the
		// sketches would keep hashes of removed rows past erasure's deadline.
		if b.Maintenance.For(maintenance.Statistics).Status == maintenance.Enabled && b.Maintenance.For(maintenance.Erasure).Status == maintenance.Enabled {
			return errf(fmt.Sprintf("%s.maintenance.%s", p, maintenance.Statistics), "cannot be enabled beside %s: its sketches keep hashes of the values of removed rows until they are computed afresh, which erasure's deadline does not yet cover", maintenance.Erasure)
		}
		for name, f := range map[string]Filter{"namespaces": b.Namespaces, "tables": b.Tables} {
			for _, pat := range slices.Concat(f.Include, f.Exclude) {
				if _, err := path.Match(pat, ""); err != nil {
					return errf(fmt.Sprintf("%s.%s", p, name), "pattern %q: %v", pat, err)
				}
			}
		}
	}

	for i, tok := range c.Events.Tokens {
		if n := len([]rune(tok)); n < MinSecretLength {
			return errf(fmt.Sprintf("events.tokens[%d]", i), "a token is %d characters, at least %d are required", n, MinSecretLength)
		}
	}
	if c.Events.Debounce < 0 {
		return errf("events.debounce", "%v is negative", c.Events.Debounce)
	}
	if c.Events.Backstop < 0 {
		return errf("events.backstop", "%v is negative", c.Events.Backstop)
	}
	if c.Events.Backstop == 0 && c.Events.On() {
		c.Events.Backstop = DefaultEventsBackstop
	}

	if err := c.Budget.finish("budget"); err != nil {
		err.File = c.File
		return err
	}

	switch c.API.SigningName {
	case "":
		c.API.SigningName = "s3tables"
	case "s3tables", "osstables":
	default:
		return errf("api.signingName", "%q is not s3tables or osstables", c.API.SigningName)
	}
	seenKeys := map[string]bool{}
	for i, k := range c.API.Keys {
		p := fmt.Sprintf("api.keys[%d]", i)
		if k.AccessKeyID == "" {
			return errf(p+".accessKeyId", "is required")
		}
		if k.SecretAccessKey == "" {
			return errf(p+".secretAccessKey", "is required")
		}
		if n := len([]rune(k.SecretAccessKey)); n < MinSecretLength {
			return errf(p+".secretAccessKey", "the secret of key %s is %d characters, at least %d are required", k.AccessKeyID, n, MinSecretLength)
		}
		if seenKeys[k.AccessKeyID] {
			return errf(p+".accessKeyId", "%q is listed twice", k.AccessKeyID)
		}
		seenKeys[k.AccessKeyID] = true
		for _, sc := range k.Scopes {
			if _, err := path.Match(sc, ""); err != nil || sc == "" {
				return errf(p+".scopes", "%q is not a BUCKET or BUCKET/NAMESPACE pattern", sc)
			}
		}
	}

	for i, h := range c.API.AllowedHosts {
		if !validHostName(h) {
			return errf(fmt.Sprintf("api.allowedHosts[%d]", i), "%q is not a host name or IP address without a port", h)
		}
	}

	for t := range c.Schedules {
		if _, ok := maintenance.Lookup(t); !ok {
			return errf("schedules."+string(t), "unknown job type (valid keys: %s)", strings.Join(typeNames(), ", "))
		}
	}
	if c.Schedules == nil {
		c.Schedules = Schedules{}
	}
	for _, typ := range maintenance.Types() {
		if c.Schedules[typ.Name] == "" {
			c.Schedules[typ.Name] = typ.Schedule
		}
		if _, err := cron.ParseStandard(c.Schedules[typ.Name]); err != nil {
			return errf("schedules."+string(typ.Name), "%q is not a cron expression: %v", c.Schedules[typ.Name], err)
		}
	}
	return nil
}

// finish validates a budget at key path p and applies its default share.
func (b *Budget) finish(p string) *Error {
	if b.MaxConcurrentRewrites < 0 {
		return &Error{Path: p + ".maxConcurrentRewrites", Msg: fmt.Sprintf("%d is below the minimum 0 (0: no bound)", b.MaxConcurrentRewrites)}
	}
	if b.RewriteBytesPerHour < 0 {
		return &Error{Path: p + ".rewriteBytesPerHour", Msg: fmt.Sprintf("%d is below the minimum 0 (0: no bound)", b.RewriteBytesPerHour)}
	}
	if s := b.TableSharePercent; s != 0 && (s < 1 || s > 100) {
		return &Error{Path: p + ".tableSharePercent", Msg: fmt.Sprintf("%d is not from 1 to 100", s)}
	}
	if b.TableSharePercent == 0 && b.RewriteBytesPerHour > 0 {
		b.TableSharePercent = planner.DefaultTableSharePercent
	}
	return nil
}

// resolveState checks the DSN scheme and makes a relative SQLite path
// relative to the configuration file, which is what a user reading the file
// expects regardless of the directory icekeeper was started from.
func (c *Config) resolveState(dsn string) (string, error) {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return "", fmt.Errorf("%q has no scheme (want sqlite://PATH or postgres://…)", dsn)
	}
	switch scheme {
	case "postgres", "postgresql":
		return dsn, nil
	case "sqlite":
		if rest == "" {
			return "", errors.New("sqlite:// needs a file path")
		}
		return "sqlite://" + c.resolvePath(rest), nil
	}
	return "", fmt.Errorf("scheme %q is not sqlite or postgres", scheme)
}

// resolvePath makes a relative path relative to the configuration file's
// directory, and absolute, so that errors name the file wherever
// icekeeper was started from.
func (c *Config) resolvePath(p string) string {
	if filepath.IsAbs(p) || c.File == "" {
		return p
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(c.File), p))
	if err != nil {
		return filepath.Join(filepath.Dir(c.File), p)
	}
	return abs
}

// resolveFileURI resolves the path of a relative local URI, as a SQL
// catalog's SQLite DSN (file:PATH?…) or a warehouse (file://./PATH,
// file:PATH), against the configuration file; other URIs are returned
// as they are.
func (c *Config) resolveFileURI(uri string) string {
	rest, ok := strings.CutPrefix(uri, "file:")
	if !ok {
		return uri
	}
	prefix := "file:"
	if r, ok := strings.CutPrefix(rest, "//"); ok {
		if strings.HasPrefix(r, "/") {
			return uri // file:///abs
		}
		rest, prefix = r, "file://"
	}
	p, query, hasQuery := strings.Cut(rest, "?")
	if p == "" || strings.HasPrefix(p, "/") || p == ":memory:" {
		return uri
	}
	out := prefix + c.resolvePath(p)
	if hasQuery {
		out += "?" + query
	}
	return out
}

// Bucket returns the bucket whose name or full ARN is ref.
func (c *Config) Bucket(ref string) (*Bucket, bool) {
	for i := range c.Buckets {
		b := &c.Buckets[i]
		if b.ARN == ref || b.Name() == ref {
			return b, true
		}
	}
	return nil, false
}

func globMatch(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// validHostName accepts a DNS name or an IP address (IPv6 with or without
// brackets), without scheme, port or path.
func validHostName(h string) bool {
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); ip != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// typeNames lists the job types' names, for messages.
func typeNames() []string {
	var names []string
	for _, t := range maintenance.JobTypes() {
		names = append(names, string(t))
	}
	return names
}
