package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/suggest"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/status/client"
)

// cmdSettings reads and writes every job type's configuration through a
// running daemon's API, icekeeper's own types included, which the AWS
// CLI cannot send (its settings union has no member for them).
func cmdSettings(ctx context.Context, env *cliEnv, args []string) error {
	usage := "Usage: icekeeper settings get --endpoint URL (--table B/NS/TABLE | --bucket B) [--type TYPE] [--json]\n" +
		"       icekeeper settings put --endpoint URL (--table B/NS/TABLE | --bucket B) --type TYPE [--status S] SETTING=VALUE…\n" +
		"(icekeeper settings get -h, icekeeper settings put -h for their flags)"
	if len(args) == 0 {
		return usagef("settings needs a sub-command, get or put (icekeeper settings -h)")
	}
	switch args[0] {
	case "get":
		return settingsGet(ctx, env, args[1:])
	case "put":
		return settingsPut(ctx, env, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(env.stdout, usage)
		return flag.ErrHelp
	}
	return usagef("unknown sub-command %q%s (want get or put)", args[0], suggest.DidYouMean(args[0], []string{"get", "put"}))
}

// settingsTarget is what a settings command reaches: the API and a table
// or a table bucket.
type settingsTarget struct {
	endpoint, keyID, secret, signing *string
	table, bucket, typ               *string
}

func (s *settingsTarget) register(fs *flag.FlagSet) {
	s.endpoint = fs.String("endpoint", "http://127.0.0.1:8080", "the API's URL")
	s.table = fs.String("table", "", "table: BUCKET/NAMESPACE/TABLE (BUCKET a name or ARN), or the table ARN the API prints")
	s.bucket = fs.String("bucket", "", "table bucket (name or ARN), for the types configured per bucket ("+strings.Join(typeNames(maintenance.BucketScope), ", ")+")")
	s.typ = fs.String("type", "", "job type, by its name or alias: "+strings.Join(typeChoices(), ", "))
	// The environment is read after parsing, not as the flags' defaults:
	// -h prints defaults, and a secret has no place on a terminal.
	s.keyID = fs.String("access-key-id", "", "access key (default $AWS_ACCESS_KEY_ID)")
	s.secret = fs.String("secret-access-key", "", "secret key (default $AWS_SECRET_ACCESS_KEY)")
	s.signing = fs.String("signing-name", "s3tables", "SigV4 service name the API expects")
}

// scope is where the job types named live: resolved --table or --bucket,
// and the bucket's ARN through the API.
type scope struct {
	c               *client.Client
	bucketARN       string
	namespace, name string // empty for a bucket
	ref             string // as the user gave it, for messages
	types           []maintenance.Type
	table           bool
}

func (s *settingsTarget) resolve(ctx context.Context) (*scope, error) {
	if u, err := url.Parse(*s.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--endpoint: %q is not an http:// or https:// URL (e.g. http://127.0.0.1:8080)", *s.endpoint)
	}
	if (*s.table == "") == (*s.bucket == "") {
		return nil, usagef("give one of --table BUCKET/NAMESPACE/TABLE or --bucket BUCKET")
	}
	sc := &scope{table: *s.table != ""}
	want := maintenance.TableScope
	if !sc.table {
		want = maintenance.BucketScope
	}
	if *s.typ != "" {
		typ, err := parseType(*s.typ)
		if err != nil {
			return nil, err
		}
		if typ.Scope != want {
			if typ.Scope == maintenance.BucketScope {
				return nil, usagef("--type %s is configured per table bucket: give --bucket BUCKET, not --table", typ.Name)
			}
			return nil, usagef("--type %s is configured per table: give --table BUCKET/NAMESPACE/TABLE, not --bucket", typ.Name)
		}
		sc.types = []maintenance.Type{typ}
	} else {
		for _, typ := range maintenance.Types() {
			if typ.Scope == want {
				sc.types = append(sc.types, typ)
			}
		}
	}
	bucketRef := *s.bucket
	sc.ref = *s.bucket
	if sc.table {
		plain, byID := tableRef(*s.table)
		if byID {
			return nil, usagef("--table %s names its table by an ID, which settings cannot look up through the API: give BUCKET/NAMESPACE/TABLE or BUCKET_ARN/table/NAMESPACE/TABLE", *s.table)
		}
		r, err := bucket.ParseRef(plain)
		if err != nil {
			return nil, err
		}
		bucketRef, sc.namespace, sc.name, sc.ref = r.Bucket, r.Table.NamespaceString(), r.Table.Name, *s.table
	}
	keyID, secret := *s.keyID, *s.secret
	if keyID == "" && secret == "" {
		keyID, secret = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	sc.c = client.New(*s.endpoint, keyID, secret, *s.signing)
	arn, err := sc.c.BucketARN(ctx, bucketRef)
	if err != nil {
		return nil, err
	}
	sc.bucketARN = arn
	return sc, nil
}

func (sc *scope) tableARN() string { return sc.bucketARN + "/table/" + sc.namespace + "/" + sc.name }

// configs reads the configuration of sc's types, each in the S3 Tables
// wire shape.
func (sc *scope) configs(ctx context.Context) (map[maintenance.JobType]json.RawMessage, error) {
	out := map[maintenance.JobType]json.RawMessage{}
	var maint map[string]json.RawMessage
	for _, typ := range sc.types {
		if typ.Dialect == maintenance.RecordExpirationDialect {
			raw, err := sc.c.RecordExpiration(ctx, sc.tableARN())
			if err != nil {
				return nil, fmt.Errorf("read %s of %s: %w", typ.Name, sc.ref, apiError(err))
			}
			out[typ.Name] = raw
			continue
		}
		if maint == nil {
			var err error
			if sc.table {
				maint, err = sc.c.TableConfig(ctx, sc.bucketARN, sc.namespace, sc.name)
			} else {
				maint, err = sc.c.BucketConfig(ctx, sc.bucketARN)
			}
			if err != nil {
				return nil, fmt.Errorf("read the maintenance configuration of %s: %w", sc.ref, apiError(err))
			}
		}
		if raw, ok := maint[string(typ.Name)]; ok {
			out[typ.Name] = raw
		}
	}
	return out, nil
}

func settingsGet(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "settings get", "--endpoint URL (--table B/NS/TABLE | --bucket B) [--type TYPE] [--json]",
		"Prints the configuration maintenance runs with (status and settings, defaults\n"+
			"filled in) of a table's job types, or of a table bucket's, from a running\n"+
			"icekeeper's API; --type for one type. Credentials: --access-key-id/\n"+
			"--secret-access-key or $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY when the\n"+
			"API requires them.")
	var target settingsTarget
	target.register(fs)
	asJSON := fs.Bool("json", false, "print the configuration as JSON, each type in the S3 Tables wire shape")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sc, err := target.resolve(ctx)
	if err != nil {
		return err
	}
	cfgs, err := sc.configs(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		out := map[string]any{"configuration": cfgs}
		if sc.table {
			out["tableARN"] = sc.tableARN()
		} else {
			out["tableBucketARN"] = sc.bucketARN
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSTATUS\tSETTINGS")
	for _, typ := range sc.types {
		raw, ok := cfgs[typ.Name]
		if !ok {
			continue
		}
		var c maintenance.Config
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("read %s of %s: the API answered %s: %w", typ.Name, sc.ref, raw, err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", typ.Name, c.Status, settingsPairs(c.Settings))
	}
	return tw.Flush()
}

func settingsPut(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "settings put", "--endpoint URL (--table B/NS/TABLE | --bucket B) --type TYPE [--status S] SETTING=VALUE…",
		"Sets a job type's configuration of a table, or of a table bucket, through a\n"+
			"running icekeeper's API, and prints what then holds. As S3 Tables' put calls\n"+
			"do, it replaces the type's configuration: keys not given take the bucket's\n"+
			"defaults. Without --status the type keeps its current status. The server\n"+
			"checks the values; `settings get` shows them. Credentials as for get.\n\n"+
			"Settings by type:\n"+keysHelp())
	var target settingsTarget
	target.register(fs)
	statusFlag := fs.String("status", "", "enabled or disabled (default: the type's current status)")
	pairs, err := parseFlagsAndPairs(fs, args)
	if err != nil {
		return err
	}
	if *target.typ == "" {
		return usagef("--type is required: one of %s", strings.Join(typeChoices(), ", "))
	}
	typ, err := parseType(*target.typ)
	if err != nil {
		return err
	}
	switch maintenance.Status(*statusFlag) {
	case "", maintenance.Enabled, maintenance.Disabled:
	default:
		return usagef("--status %q: want enabled or disabled", *statusFlag)
	}
	if *statusFlag == "" && len(pairs) == 0 {
		return usagef("nothing to put: give --status or SETTING=VALUE pairs of %s (%s)", typ.Name, strings.Join(settingKeys(typ.Name), ", "))
	}
	settings, err := parsePairs(typ.Name, pairs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sc, err := target.resolve(ctx)
	if err != nil {
		return err
	}
	cfg := maintenance.Config{Status: maintenance.Status(*statusFlag), Settings: settings}
	if cfg.Status == "" {
		current, err := sc.configs(ctx)
		if err != nil {
			return err
		}
		var c maintenance.Config
		if err := json.Unmarshal(current[typ.Name], &c); err != nil || c.Status == "" {
			return fmt.Errorf("read the current status of %s of %s (give --status): the API answered %q", typ.Name, sc.ref, current[typ.Name])
		}
		cfg.Status = c.Status
	}
	value, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	switch {
	case typ.Dialect == maintenance.RecordExpirationDialect:
		err = sc.c.PutRecordExpiration(ctx, sc.tableARN(), value)
	case sc.table:
		err = sc.c.PutTableConfig(ctx, sc.bucketARN, sc.namespace, sc.name, string(typ.Name), value)
	default:
		err = sc.c.PutBucketConfig(ctx, sc.bucketARN, string(typ.Name), value)
	}
	if err != nil {
		return fmt.Errorf("put %s of %s: %w", typ.Name, sc.ref, apiError(err))
	}
	now, err := sc.configs(ctx)
	if err != nil {
		return err
	}
	var c maintenance.Config
	if err := json.Unmarshal(now[typ.Name], &c); err != nil {
		return fmt.Errorf("read %s of %s back: %w", typ.Name, sc.ref, err)
	}
	writeln(env.stdout, "%s of %s: %s %s", typ.Name, sc.ref, c.Status, settingsPairs(c.Settings))
	return nil
}

// apiError shortens the API's refusal to its type and message: the URL
// and status line add nothing the user gave or can act on.
func apiError(err error) error {
	var e *client.Error
	if errors.As(err, &e) && e.Message != "" {
		return fmt.Errorf("%s: %s", e.Type, e.Message)
	}
	return err
}

// parseFlagsAndPairs parses flags given before, between or after the
// SETTING=VALUE arguments, and returns those.
func parseFlagsAndPairs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pairs []string
	out := fs.Output()
	for {
		fs.SetOutput(io.Discard)
		err := fs.Parse(args)
		fs.SetOutput(out)
		if err != nil || fs.NArg() == 0 {
			// parseFlags words an error (and prints -h's usage) as every
			// command does; parsing the same arguments again sets the same
			// values.
			return pairs, parseFlags(fs, args)
		}
		pairs = append(pairs, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parsePairs reads SETTING=VALUE settings of t into a new settings value of
// t, each value by the JSON type of its key in t's settings struct, so
// that the server gets deadlineDays as 7, not "7". Ranges are the
// server's to check, as for any client.
func parsePairs(t maintenance.JobType, pairs []string) (any, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	fields := settingFields(t)
	keys := settingKeys(t)
	obj := map[string]json.RawMessage{}
	for _, p := range pairs {
		key, val, ok := strings.Cut(p, "=")
		if !ok || key == "" {
			return nil, usagef("%q is not SETTING=VALUE (settings of %s: %s)", p, t, strings.Join(keys, ", "))
		}
		f, ok := fields[key]
		if !ok {
			return nil, usagef("%s has no setting %q%s (it has %s)", t, key, suggest.DidYouMean(key, keys), strings.Join(keys, ", "))
		}
		if _, dup := obj[key]; dup {
			return nil, usagef("%s is given twice", key)
		}
		raw, err := jsonValue(f, val)
		if err != nil {
			return nil, usagef("%s=%s: %v", key, val, err)
		}
		obj[key] = raw
	}
	b, _ := json.Marshal(obj)
	settings, _ := maintenance.NewSettings(t)
	if err := json.Unmarshal(b, settings); err != nil {
		return nil, usagef("settings of %s: %v", t, err)
	}
	return settings, nil
}

// jsonValue is val as JSON of the field's type.
func jsonValue(f reflect.Type, val string) (json.RawMessage, error) {
	for f.Kind() == reflect.Pointer {
		f = f.Elem()
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return nil, errors.New("not a whole number")
		}
		return json.Marshal(n)
	case reflect.Bool:
		if val != "true" && val != "false" {
			return nil, errors.New("want true or false")
		}
		return json.RawMessage(val), nil
	case reflect.String:
		return json.Marshal(val)
	case reflect.Slice:
		// A list of names (icebergStatistics' columns) is given as
		// a,b,c; a JSON array is taken as it is.
		if f.Elem().Kind() == reflect.String && !strings.HasPrefix(strings.TrimSpace(val), "[") {
			names := strings.Split(val, ",")
			for i := range names {
				names[i] = strings.TrimSpace(names[i])
			}
			return json.Marshal(names)
		}
	}
	if !json.Valid([]byte(val)) {
		return nil, errors.New("not a JSON value")
	}
	return json.RawMessage(val), nil
}

// settingFields are the keys of t's settings by their JSON names, with
// their Go types.
func settingFields(t maintenance.JobType) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	s, ok := maintenance.NewSettings(t)
	if !ok {
		return out
	}
	st := reflect.TypeOf(s).Elem()
	for i := range st.NumField() {
		if name := jsonName(st.Field(i)); name != "" {
			out[name] = st.Field(i).Type
		}
	}
	return out
}

// settingKeys are the keys of t's settings in their struct's order.
func settingKeys(t maintenance.JobType) []string {
	s, ok := maintenance.NewSettings(t)
	if !ok {
		return nil
	}
	var keys []string
	st := reflect.TypeOf(s).Elem()
	for i := range st.NumField() {
		if name := jsonName(st.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

// settingsPairs is a settings struct as SETTING=VALUE in its fields' order,
// unset keys left out; "-" for none.
func settingsPairs(settings any) string {
	v := reflect.ValueOf(settings)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return "-"
	}
	v = v.Elem()
	var parts []string
	for i := range v.NumField() {
		name, f := jsonName(v.Type().Field(i)), v.Field(i)
		if name == "" || f.IsZero() {
			continue
		}
		b, err := json.Marshal(f.Interface())
		if err != nil {
			continue
		}
		parts = append(parts, name+"="+strings.Trim(string(b), `"`))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// parseType reads a job type by its wire name or its alias.
func parseType(s string) (maintenance.Type, error) {
	name := maintenance.JobType(s)
	if t, ok := maintenance.ByAlias(s); ok {
		name = t
	}
	typ, ok := maintenance.Lookup(name)
	if !ok {
		choices := typeChoices()
		return maintenance.Type{}, usagef("--type %q is no job type%s (want one of %s)", s, suggest.DidYouMean(s, choices), strings.Join(choices, ", "))
	}
	return typ, nil
}

// typeChoices are the job types' names and aliases.
func typeChoices() []string {
	var out []string
	for _, typ := range maintenance.Types() {
		out = append(out, string(typ.Name), typ.Alias)
	}
	return out
}

func typeNames(sc maintenance.Scope) []string {
	var out []string
	for _, typ := range maintenance.Types() {
		if typ.Scope == sc {
			out = append(out, string(typ.Name))
		}
	}
	return out
}

// keysHelp lists each type's keys, for put's -h.
func keysHelp() string {
	var b strings.Builder
	for _, typ := range maintenance.Types() {
		where := "--table"
		if typ.Scope == maintenance.BucketScope {
			where = "--bucket"
		}
		fmt.Fprintf(&b, "  %s (%s, %s): %s\n", typ.Name, typ.Alias, where, strings.Join(settingKeys(typ.Name), ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
