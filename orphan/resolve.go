package orphan

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// resolver names local files as the file system resolves them: the
// symlinks of every existing ancestor, then of the file itself when it is
// one, in the order the kernel follows them (a ".." after a symlink leaves
// the symlink's target, not its name). A warehouse reachable by two paths
// (a symlinked mount point, an alias of a table's directory) then names
// each file once, and a reference, a listed object and another table's
// location compare as the files they are. A part that does not exist is
// kept as written below its deepest existing ancestor.
//
// Object stores resolve nothing: a resolver leaves every other scheme
// alone. Directories are resolved once per run; safe for concurrent use.
type resolver struct {
	mu   sync.Mutex
	dirs map[string]string
}

func newResolver() *resolver { return &resolver{dirs: map[string]string{}} }

// loc returns l resolved; a nil resolver, or a location in an object
// store, is returned unchanged.
func (r *resolver) loc(l loc) loc {
	if r == nil || l.scheme != "file" {
		return l
	}
	l.path = r.file(l.path)
	return l
}

// prefix resolves a listing prefix (ending in a slash).
func (r *resolver) prefix(l loc) loc {
	if r == nil || l.scheme != "file" {
		return l
	}
	l.path = r.dir(path.Clean(l.path))
	if l.path != "/" {
		l.path += "/"
	}
	return l
}

// file resolves the absolute path p.
func (r *resolver) file(p string) string {
	dir, base := path.Split(p)
	if dir = strings.TrimSuffix(dir, "/"); dir == "" {
		dir = "/"
	}
	q := path.Join(r.dir(dir), base)
	if base == "" || base == "." || base == ".." {
		return q
	}
	if fi, err := os.Lstat(q); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(q); err == nil {
			return t
		}
	}
	return q
}

// dir resolves the directory d (written as a reference wrote it, which
// may hold ".." after a symlink: path.Clean is applied only to what was
// resolved).
func (r *resolver) dir(d string) string {
	r.mu.Lock()
	got, ok := r.dirs[d]
	r.mu.Unlock()
	if ok {
		return got
	}
	resolved, err := filepath.EvalSymlinks(d)
	if err != nil {
		parent := path.Dir(d)
		switch {
		case parent == d:
			resolved = d
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, os.ErrInvalid):
			resolved = path.Join(r.dir(parent), path.Base(d))
		default: // a loop, a name too long: not resolvable, kept as written
			resolved = path.Clean(d)
		}
	}
	r.mu.Lock()
	r.dirs[d] = resolved
	r.mu.Unlock()
	return resolved
}
