package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/internal/privfile"
)

// A disk cache keeps renders between processes, as kubectl keeps
// discovery: a one-shot command (`kdrift diff`, `status`) run again on the
// same commit skips kustomize and Helm. An entry is used only when every
// folder its render read has the same Git tree hash now, for the same
// repository, App path, Helm and overlay settings, budgets and kdrift
// binary; anything else renders again. A render that holds a Secret or
// touched a SOPS file is never written: decrypted or generated secrets
// stay in memory. Each entry is one file, written atomically (0600, in a
// 0700 folder); a file that cannot be read or decoded is a miss and is
// removed.

// DefaultCacheDir is where one-shot commands keep renders: the user's
// cache folder (XDG_CACHE_HOME on Linux), kdrift/render; "" when there is
// none.
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "kdrift", "render")
}

// Disk cache bounds: an entry larger than maxDiskEntry is not written
// (or read); one process writes at most maxDiskWrites bytes, whatever a
// repository renders; past maxDiskEntries files, maxDiskBytes in all or
// maxDiskAge the least recently used go, checked at most every
// diskPruneEvery.
const (
	maxDiskEntry   = 16 << 20
	maxDiskWrites  = 256 << 20
	maxDiskEntries = 2000
	maxDiskBytes   = 1 << 30
	maxDiskAge     = 14 * 24 * time.Hour
	diskPruneEvery = time.Hour
)

// diskFormat names the file format; a change makes every old file a miss.
const diskFormat = "kdrift-render/1"

// diskCache is a Renderer's disk layer; nil when there is none.
type diskCache struct {
	dir     string
	scope   string       // the repository identity and the binary
	written atomic.Int64 // bytes this process wrote
}

// diskFile is what one cache file holds.
type diskFile struct {
	Format  string            `json:"format"`
	Key     string            `json:"key"`
	Inputs  map[string]string `json:"inputs"`
	Objects []json.RawMessage `json:"objects"`
}

// SetDiskCache keeps this Renderer's results in dir too (see
// DefaultCacheDir), for the repository whose identity is repo: a later
// process rendering the same inputs reads them instead of rendering. An
// empty dir, or a binary kdrift cannot identify, keeps renders in memory
// only.
func (r *Renderer) SetDiskCache(dir, repo string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disk = nil
	bin := binaryID()
	if dir == "" || bin == "" {
		return
	}
	r.disk = &diskCache{dir: dir, scope: diskFormat + "\x00" + bin + "\x00" + repo}
}

// BinaryID identifies the running kdrift build, for caches of what it
// computed: "" when it cannot tell (keep nothing on disk then).
func BinaryID() string { return binaryID() }

// binaryID identifies the running kdrift build: a rebuilt binary (another
// renderer) never reads what an older one wrote. "" when it cannot tell.
var binaryID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	id := exe + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
	if bi, ok := debug.ReadBuildInfo(); ok {
		id += "\x00" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				id += "\x00" + s.Value
			}
		}
	}
	return id
})

// path is the file of key rendered with opts.
func (d *diskCache) path(key string, opts Options) string {
	o, _ := json.Marshal(opts) // plain numbers: cannot fail
	sum := sha256.Sum256([]byte(d.scope + "\x00" + string(o) + "\x00" + key))
	return filepath.Join(d.dir, hex.EncodeToString(sum[:16])+".json")
}

// load returns the entry kept for key and opts when its inputs are
// tree's, or nil.
func (d *diskCache) load(tree Tree, key string, opts Options) *cacheEntry {
	p := d.path(key, opts)
	// Only a file of this user that no one else may write: what it holds
	// is desired state, which a sync applies.
	f, err := privfile.Open(p)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxDiskEntry+1))
	f.Close()
	var df diskFile
	if err != nil || len(data) > maxDiskEntry || json.Unmarshal(data, &df) != nil || df.Format != diskFormat || df.Key != key || df.Inputs == nil {
		_ = os.Remove(p) // unreadable: the next render writes it again
		return nil
	}
	if !sameInputs(tree, df.Inputs) {
		return nil
	}
	objs := make([]*unstructured.Unstructured, 0, len(df.Objects))
	for _, raw := range df.Objects {
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(raw); err != nil {
			_ = os.Remove(p)
			return nil
		}
		objs = append(objs, o)
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // recently used: pruned last
	return &cacheEntry{inputs: df.Inputs, objs: objs}
}

// keepable says whether e may be written to disk: a complete, successful
// render with no Secret and no SOPS file.
func keepable(e *cacheEntry) bool {
	if e.inputs == nil || e.err != nil || len(e.sealed) > 0 || len(e.secrets) > 0 {
		return false
	}
	for _, o := range e.objs {
		if o.GetKind() == "Secret" && o.GroupVersionKind().Group == "" {
			return false
		}
	}
	return true
}

// store writes e, rendered for key with opts, when it is keepable. A failure only costs the
// next process a render.
func (d *diskCache) store(key string, opts Options, e *cacheEntry) {
	if !keepable(e) {
		return
	}
	df := diskFile{Format: diskFormat, Key: key, Inputs: e.inputs, Objects: make([]json.RawMessage, 0, len(e.objs))}
	size := 0
	for _, o := range e.objs {
		raw, err := o.MarshalJSON()
		if err != nil {
			return
		}
		if size += len(raw); size > maxDiskEntry {
			return
		}
		df.Objects = append(df.Objects, raw)
	}
	data, err := json.Marshal(df)
	if err != nil || len(data) > maxDiskEntry || d.written.Add(int64(len(data))) > maxDiskWrites {
		return
	}
	if err := privfile.WriteAtomic(d.path(key, opts), data); err != nil {
		return
	}
	d.prune(time.Now(), maxDiskEntries, maxDiskBytes)
}

// prune removes files unused for maxDiskAge, then the least recently used
// past maxEntries files or maxBytes in all; at most once per
// diskPruneEvery (a stamp file's time says when it last ran).
func (d *diskCache) prune(now time.Time, maxEntries int, maxBytes int64) {
	stamp := filepath.Join(d.dir, ".pruned")
	if st, err := os.Stat(stamp); err == nil && now.Sub(st.ModTime()) < diskPruneEvery {
		return
	}
	if err := os.WriteFile(stamp, nil, 0o600); err != nil {
		return
	}
	_ = os.Chtimes(stamp, now, now)
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		used time.Time
		size int64
	}
	var files []file
	for _, de := range entries {
		if de.IsDir() || filepath.Ext(de.Name()) != ".json" && !privfile.IsTemp(de.Name()) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		p := filepath.Join(d.dir, de.Name())
		if now.Sub(info.ModTime()) > maxDiskAge || (privfile.IsTemp(de.Name()) && now.Sub(info.ModTime()) > diskPruneEvery) {
			_ = os.Remove(p)
			continue
		}
		if !privfile.IsTemp(de.Name()) {
			files = append(files, file{p, info.ModTime(), info.Size()})
		}
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for n := len(files); n > 0 && (n > maxEntries || total > maxBytes); n-- {
		f := files[len(files)-n]
		_ = os.Remove(f.path)
		total -= f.size
	}
}
