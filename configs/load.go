package configs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/icekeeper/icekeeper/internal/cost"
	"github.com/icekeeper/icekeeper/internal/suggest"
	"github.com/icekeeper/icekeeper/maintenance"
)

// ErrInvalid is wrapped by every error Load returns for a file that exists
// but is not a valid configuration, so the CLI can exit with code 2.
var ErrInvalid = errors.New("invalid configuration")

// Error is one problem in a configuration file.
type Error struct {
	File string // as given by the user
	// Line is the line of the key the problem is at, or of the nearest
	// key above it when the key is missing (0: none, or no file).
	Line int
	Path string // key path, e.g. buckets[1].maintenance.icebergCompaction.targetFileSizeMB
	Msg  string
}

// Error reads file:line: path: message, the form editors and terminals
// jump to.
func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	if e.Path == "" {
		return where + ": " + e.Msg
	}
	return where + ": " + e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return ErrInvalid }

// MaxFileSize bounds what Load reads: a configuration is a few KiB, and a
// wrong path (a device, a log) must not be read without end.
const MaxFileSize = 1 << 20

// Load reads, interpolates, decodes, defaults and validates the file.
func Load(file string) (*Config, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", file, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &Error{File: file, Msg: "is a directory, not a configuration file"}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", file, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Msg: "is larger than 1 MiB, the most a configuration file may be"}
	}
	return Parse(file, data, os.LookupEnv)
}

// Parse is Load on bytes already read; lookupEnv resolves ${NAME}.
func Parse(file string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	cfg := &Config{File: file, Prices: cost.DefaultPrices()}
	d := &decoder{file: file, env: lookupEnv, lines: map[string]int{}}
	if len(doc.Content) > 0 {
		if err := d.decode(doc.Content[0], reflect.ValueOf(cfg).Elem(), ""); err != nil {
			return nil, err
		}
	}
	if err := d.unsetError(); err != nil {
		return nil, err
	}
	if err := cfg.finish(); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Line == 0 {
			e.Line = d.lineOf(e.Path)
		}
		return nil, err
	}
	return cfg, nil
}

// decoder walks the YAML tree against the Go types so that unknown keys,
// wrong types and unset environment variables are reported with the key
// path where they occur; yaml.v3's own errors carry only line numbers.
type decoder struct {
	file string
	env  func(string) (string, bool)
	// lines is the line of every key path met, for errors found after
	// decoding (validation) as well as during it.
	lines map[string]int
	// unset are the unset variables met, all named in one error.
	unset []unsetVar
}

// unsetVar is an unset ${NAME} and the first key that uses it.
type unsetVar struct {
	name, path string
	line       int
}

func (d *decoder) errorf(path, format string, args ...any) error {
	return &Error{File: d.file, Line: d.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)}
}

// lineOf is the line of path's key, or of the nearest key above it.
func (d *decoder) lineOf(path string) int {
	for path != "" {
		if l, ok := d.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

// keys records the line of every key of mapping n under path, and refuses
// a key given twice: YAML would keep the last one without a word, so a
// value edited in one place and left in another would not be the one used.
func (d *decoder) keys(n *yaml.Node, path string) error {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		p := join(path, k.Value)
		if at, dup := first[k.Value]; dup {
			where := fmt.Sprintf("at lines %d and %d", at, k.Line)
			if at == k.Line {
				where = fmt.Sprintf("on line %d", at)
			}
			return &Error{File: d.file, Line: k.Line, Path: p,
				Msg: "is given twice, " + where + "; YAML would silently keep the last: remove one"}
		}
		first[k.Value] = k.Line
		d.lines[p] = k.Line
	}
	return nil
}

// unsetError names every unset variable the file uses, so one run of
// check finds them all.
func (d *decoder) unsetError() error {
	switch len(d.unset) {
	case 0:
		return nil
	case 1:
		u := d.unset[0]
		return &Error{File: d.file, Line: u.line, Path: u.path, Msg: fmt.Sprintf("environment variable %s is not set", u.name)}
	}
	parts := make([]string, len(d.unset))
	for i, u := range d.unset {
		parts[i] = fmt.Sprintf("%s (line %d, %s)", u.name, u.line, u.path)
	}
	return &Error{File: d.file, Msg: fmt.Sprintf("%d environment variables are not set: %s; set them, or give a default as ${NAME:-default}",
		len(d.unset), strings.Join(parts, ", "))}
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty key leaves the default
	}
	if v.Type() == reflect.TypeFor[Maintenance]() {
		return d.decodeMaintenance(n, v, path)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.errorf(path, "must be a mapping, found %s", kindName(n))
		}
		if err := d.keys(n, path); err != nil {
			return err
		}
		fields := structFields(v)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			f, ok := fields[key]
			if !ok {
				return d.errorf(join(path, key), "unknown key%s (valid keys: %s)", suggest.DidYouMean(key, sortedKeys(fields)), strings.Join(sortedKeys(fields), ", "))
			}
			if err := d.decode(n.Content[i+1], f, join(path, key)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errorf(path, "must be a list, found %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.lines[fmt.Sprintf("%s[%d]", path, i)] = item.Line
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errorf(path, "must be a mapping, found %s", kindName(n))
		}
		if err := d.keys(n, path); err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			val := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(n.Content[i+1], val, join(path, key)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), val)
		}
		v.Set(m)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.errorf(path, "must be a single value, found %s", kindName(n))
	}
	s, missing, err := d.interpolate(n.Value, path)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		// The value is unknown: leave the default and go on, so that
		// every unset variable is found in one pass.
		for _, name := range missing {
			if !slices.ContainsFunc(d.unset, func(u unsetVar) bool { return u.name == name }) {
				d.unset = append(d.unset, unsetVar{name: name, path: path, line: n.Line})
			}
		}
		return nil
	}
	if v.Type() == reflect.TypeFor[time.Duration]() {
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return d.errorf(path, "%q is not a duration such as 90s, 2m or 1h", s)
		}
		v.SetInt(int64(dur))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			return d.errorf(path, "%q is not a whole number", s)
		}
		v.SetInt(i)
	case reflect.Bool:
		// Only the words: strconv.ParseBool would take 1, t and F too,
		// which a reader of the file need not guess.
		switch strings.TrimSpace(s) {
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
			v.SetBool(false)
		default:
			return d.errorf(path, "%q is not true or false", s)
		}
	default:
		return d.errorf(path, "unsupported type %s", v.Type())
	}
	return nil
}

// decodeMaintenance decodes a bucket's maintenance sections, one per job
// type, each into what the type table says its section holds.
func (d *decoder) decodeMaintenance(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errorf(path, "must be a mapping, found %s", kindName(n))
	}
	if err := d.keys(n, path); err != nil {
		return err
	}
	m := Maintenance{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		t := maintenance.JobType(key)
		into, done, ok := maintenance.FileSection(t)
		if !ok {
			var names []string
			for _, t := range maintenance.JobTypes() {
				names = append(names, string(t))
			}
			return d.errorf(join(path, key), "unknown key%s (valid keys: %s)", suggest.DidYouMean(key, names), strings.Join(names, ", "))
		}
		if err := d.decode(n.Content[i+1], reflect.ValueOf(into).Elem(), join(path, key)); err != nil {
			return err
		}
		m[t] = done()
	}
	v.Set(reflect.ValueOf(m))
	return nil
}

// interpolate replaces ${NAME} with the environment variable NAME; $$ is a
// literal $. Unset variables are returned in missing, never replaced by
// an empty string, so that a missing secret is always an error.
func (d *decoder) interpolate(s, path string) (out string, missing []string, err error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", nil, d.errorf(path, "unterminated ${ in %q", s)
			}
			name := s[i+2 : i+2+end]
			if name == "" {
				return "", nil, d.errorf(path, "empty ${} in %q", s)
			}
			// ${NAME:-default}, as in a shell: the default when NAME is
			// unset or empty, so an example runs as written and a
			// deployment overrides it.
			name, def, hasDef := strings.Cut(name, ":-")
			val, ok := d.env(name)
			if hasDef && (!ok || val == "") {
				val, ok = def, true
			}
			if !ok {
				missing = append(missing, name)
			}
			b.WriteString(val)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), missing, nil
}

// structFields maps yaml key → settable field, flattening ",inline" fields.
func structFields(v reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if tag == "-" || !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts == "inline" {
			for k, f := range structFields(v.Field(i)) {
				out[k] = f
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		out[name] = v.Field(i)
	}
	return out
}

func sortedKeys(m map[string]reflect.Value) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}
