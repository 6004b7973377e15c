// Package controlplane builds and runs the throwaway local Kubernetes control
// plane of testdata/localcluster (etcd, the real kube-apiserver and an
// optional kube-controller-manager in one process). Tests start one per
// package through enginetest; `kdrift demo` runs one as its embedded default.
package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// KubeVersion is the Kubernetes release the control plane runs.
const KubeVersion = "v1.37.2"

// ModuleDir is the nested module's folder relative to kdrift's repository root.
const ModuleDir = "testdata/localcluster"

// BuildOptions says where the sources are and where the binary is cached.
type BuildOptions struct {
	// SourceDir is the testdata/localcluster folder.
	SourceDir string
	// CacheDir holds built binaries, one folder per source hash. Default:
	// $KDRIFT_CACHE_DIR, else the user cache folder + /kdrift/localcluster.
	CacheDir string
	// Log receives the go command's own output while a build runs (module
	// downloads, compiler errors; not the package names of -v); nil
	// discards it.
	Log io.Writer
	// Progress, when set, is called as a build goes: once the packages to
	// compile are counted, for every package compiled, when linking starts
	// and when the build ends. It is not called when the binary is cached.
	Progress func(BuildProgress)
	// Name is the binary's name and its cache folder's; default
	// "localcluster". Another nested module (testdata/gitea) is built and
	// cached the same way under its own name.
	Name string
	// Tags are build tags, e.g. "sqlite sqlite_unlock_notify".
	Tags string
	// LDFlags replace the default linker flags (the control plane's
	// Kubernetes version stamps).
	LDFlags []string
	// Package is the main package to build, relative to SourceDir;
	// default ".".
	Package string
	// Release, when set, names an immutable module release
	// ("github.com/fluxcd/flagger@v1.41.0") whose extracted copy in the
	// module cache is SourceDir: the cache key is then the release, the
	// package and the Go version, and the thousands of files of its
	// source tree are not hashed at every test start.
	Release string
}

// pkg is the package the go command builds.
func (o BuildOptions) pkg() string {
	if o.Package == "" {
		return "."
	}
	return o.Package
}

// DefaultCacheDir is where built control-plane binaries are kept.
func DefaultCacheDir() (string, error) { return CacheDirFor("localcluster") }

// CacheDirFor is where binaries of the nested module built as name are
// kept: $KDRIFT_CACHE_DIR/name, else the user cache folder + /kdrift/name.
func CacheDirFor(name string) (string, error) {
	if d := os.Getenv("KDRIFT_CACHE_DIR"); d != "" {
		return filepath.Join(d, name), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder: %w (set KDRIFT_CACHE_DIR)", err)
	}
	return filepath.Join(d, "kdrift", name), nil
}

// Binary returns the path of the control-plane binary for the sources in
// opts.SourceDir, building it first when no binary of these exact sources is
// cached. Concurrent callers (test packages run in parallel) wait for one
// build through a file lock instead of building twice.
func Binary(ctx context.Context, opts BuildOptions) (string, error) {
	if opts.Name == "" {
		opts.Name = "localcluster"
	}
	if opts.CacheDir == "" {
		d, err := CacheDirFor(opts.Name)
		if err != nil {
			return "", err
		}
		opts.CacheDir = d
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	hash, err := cacheKey(opts)
	if err != nil {
		return "", fmt.Errorf("%s sources at %s: %w", opts.Name, opts.SourceDir, err)
	}
	dir := filepath.Join(opts.CacheDir, hash)
	bin := filepath.Join(dir, opts.Name)
	if fileExists(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache folder: %w", err)
	}
	waitStart := time.Now()
	unlock, err := lockFile(ctx, filepath.Join(dir, ".lock"), func() {
		if opts.Progress != nil {
			opts.Progress(BuildProgress{Phase: PhaseWait, Elapsed: time.Since(waitStart)})
		}
	})
	if err != nil {
		return "", err
	}
	defer unlock()
	if fileExists(bin) { // built by whoever held the lock before us
		return bin, nil
	}
	tmp := bin + ".tmp"
	start := time.Now()
	if err := build(ctx, opts, tmp, start); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("cache the control-plane binary: %w", err)
	}
	pruneOld(opts.CacheDir, hash)
	return bin, nil
}

// CachedPath is where Binary keeps (or will keep) the binary for the
// sources in opts.SourceDir.
func CachedPath(opts BuildOptions) (string, error) {
	if opts.Name == "" {
		opts.Name = "localcluster"
	}
	if opts.CacheDir == "" {
		d, err := CacheDirFor(opts.Name)
		if err != nil {
			return "", err
		}
		opts.CacheDir = d
	}
	hash, err := cacheKey(opts)
	if err != nil {
		return "", err
	}
	return filepath.Join(opts.CacheDir, hash, opts.Name), nil
}

// cacheKey names the folder a build of opts is kept in.
func cacheKey(opts BuildOptions) (string, error) {
	if opts.Release == "" {
		return sourceHash(opts.SourceDir, opts.Tags)
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build %s: %w", opts.Name, err)
	}
	h := sha256.Sum256(fmt.Appendf(nil, "release\x00%s\x00%s\x00%s\x00%s", goVersion, opts.Release, opts.pkg(), opts.Tags))
	return hex.EncodeToString(h[:])[:16], nil
}

// sourceHash hashes what decides the binary: every Go file, go.mod and
// go.sum of the nested module, plus the Go version that builds it.
func sourceHash(dir, tags string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", errors.New("no Go sources found")
	}
	sort.Strings(files)
	h := sha256.New()
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build the control plane: %w", err)
	}
	h.Write(goVersion)
	if tags != "" { // the control plane's hash stays what it was
		fmt.Fprintf(h, "tags\x00%s\x00", tags)
	}
	for _, f := range files {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return "", err
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// lockFile takes an exclusive flock on path, waiting while ctx allows;
// waiting is called once if another process holds it.
func lockFile(ctx context.Context, path string, waiting func()) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("build lock %s: %w", path, err)
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another build of the control plane: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// pruneOld removes binaries of other source hashes unused for a day, so the
// cache does not grow with every change to the sources; a younger one may
// belong to another checkout's test run that is still going.
func pruneOld(cacheDir, keep string) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < 24*time.Hour {
			continue
		}
		if e.IsDir() && e.Name() != keep {
			_ = os.RemoveAll(filepath.Join(cacheDir, e.Name()))
		}
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// RepoRoot finds kdrift's source checkout: the nearest folder at or above
// the working directory whose go.mod declares module kdrift.dev/kdrift.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), "module kdrift.dev/kdrift\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside kdrift's source checkout (no go.mod of module kdrift.dev/kdrift above the working directory); the local control plane is built from testdata/localcluster there: run this from a clone of kdrift")
		}
		dir = parent
	}
}
