package charts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kdrift.dev/kdrift/internal/privfile"
)

// The chart cache (Fetcher.CacheDir):
//
//	sha256/<hex>.tgz   archives, named by the SHA-256 of their content
//	refs/<hex>.json    one record per location, chart and version: the
//	                   archive's digest (and for OCI the manifest's)
//	index/<hex>.json   one answer per Helm repository, chart and exact
//	                   version: what its index.yaml said (the archive's
//	                   URL and digest), when, and the index's validators
//	                   (ETag, Last-Modified)
//
// Every file is written through privfile.WriteAtomic and read through
// privfile.Open, so a file someone else could have written is ignored. An
// archive is hashed again when read; one that does not match its name is
// removed. The cache does not grow without bound: each write removes the
// archives and records unused (neither read nor written) for cacheMaxAge,
// and temporary files a killed process left.
const cacheMaxAge = 30 * 24 * time.Hour

// indexFresh is how long an index answer serves without asking the
// repository again (ARCHITECTURE.md, "Remote Helm charts"): long enough
// that the commands of one session (status, then diff, then status
// again) read index.yaml once, short enough that a version re-published
// under the same number is seen within minutes. After it the index is
// asked again, conditionally: unchanged, it costs a 304 and no body.
const indexFresh = 10 * time.Minute

// answer is an index/ file.
type answer struct {
	ArchiveURL   string    `json:"archiveURL"`
	Digest       string    `json:"digest,omitempty"`
	At           time.Time `json:"at"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"lastModified,omitempty"`
}

// fresh says whether a is recent enough at now to serve without asking
// the index (a time in the future is not).
func (a *answer) fresh(now time.Time) bool {
	age := now.Sub(a.At)
	return age >= 0 && age < indexFresh
}

// answer reads the kept index answer for ref at loc, or nil.
func (c *cache) answer(ref Ref, loc *url.URL) *answer {
	if c == nil {
		return nil
	}
	p := c.keyPath("index", ref, loc)
	data := c.read(p, 64<<10)
	if data == nil {
		return nil
	}
	var a answer
	if json.Unmarshal(data, &a) != nil || a.ArchiveURL == "" || a.Digest != "" && !sha256Digest.MatchString(a.Digest) {
		return nil
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return &a
}

// storeAnswer keeps an index answer for ref at loc.
func (c *cache) storeAnswer(ref Ref, loc *url.URL, a *answer) {
	if c == nil {
		return
	}
	if data, err := json.Marshal(a); err == nil {
		_ = privfile.WriteAtomic(c.keyPath("index", ref, loc), data)
	}
}

// cache is the cache of one Fetcher; a nil cache keeps nothing.
type cache struct {
	dir string
	max int64
}

// record is a refs/ file.
type record struct {
	Location string `json:"location"`
	Chart    string `json:"chart"`
	Version  string `json:"version"`
	Digest   string `json:"digest"`
	Manifest string `json:"manifest,omitempty"`
}

// cache returns f's cache, nil when f keeps none.
func (f *Fetcher) cache() *cache {
	if f.CacheDir == "" {
		return nil
	}
	return &cache{dir: f.CacheDir, max: limit(f.MaxArchive, defaultMaxArchive)}
}

// pinned returns the cached chart whose content ref.Digest pins, or nil.
func (c *cache) pinned(ref Ref, loc *url.URL) *Chart {
	if c == nil {
		return nil
	}
	digest := ref.Digest
	if loc.Scheme == "oci" {
		rec := c.record(ref, loc)
		if rec == nil || rec.Manifest != ref.Digest {
			return nil
		}
		digest = rec.Digest
	}
	return c.chart(ref, digest)
}

// last returns the chart the last successful fetch of ref brought, or nil.
func (c *cache) last(ref Ref, loc *url.URL) *Chart {
	if c == nil {
		return nil
	}
	rec := c.record(ref, loc)
	if rec == nil {
		return nil
	}
	if ref.Digest != "" && ref.Digest != rec.Digest && ref.Digest != rec.Manifest {
		return nil
	}
	return c.chart(ref, rec.Digest)
}

// chart returns the cached archive of digest as ref's chart, or nil.
func (c *cache) chart(ref Ref, digest string) *Chart {
	data := c.archive(digest)
	if data == nil {
		return nil
	}
	return &Chart{Ref: ref, Digest: digest, Archive: data, FromCache: true}
}

// archive reads the cached archive of digest, hashing it again; one that
// does not match is removed.
func (c *cache) archive(digest string) []byte {
	if c == nil {
		return nil
	}
	hexsum, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || !sha256Digest.MatchString(digest) {
		return nil
	}
	p := filepath.Join(c.dir, "sha256", hexsum+".tgz")
	data := c.read(p, c.max)
	if data == nil {
		return nil
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexsum {
		_ = os.Remove(p)
		return nil
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // used: kept another cacheMaxAge
	return data
}

// record reads ref's record, or nil.
func (c *cache) record(ref Ref, loc *url.URL) *record {
	data := c.read(c.recordPath(ref, loc), 64<<10)
	if data == nil {
		return nil
	}
	var rec record
	if json.Unmarshal(data, &rec) != nil || !sha256Digest.MatchString(rec.Digest) {
		return nil
	}
	now := time.Now()
	_ = os.Chtimes(c.recordPath(ref, loc), now, now)
	return &rec
}

// recordPath is ref's refs/ file.
func (c *cache) recordPath(ref Ref, loc *url.URL) string { return c.keyPath("refs", ref, loc) }

// keyPath is ref's file in the folder sub: named by the SHA-256 of the
// normalized location, chart and version.
func (c *cache) keyPath(sub string, ref Ref, loc *url.URL) string {
	sum := sha256.Sum256([]byte(loc.String() + "|" + ref.Chart + "|" + strings.TrimPrefix(ref.Version, "v")))
	return filepath.Join(c.dir, sub, hex.EncodeToString(sum[:])+".json")
}

// read reads the private file p, at most max bytes; nil when it is
// missing, not private or larger.
func (c *cache) read(p string, max int64) []byte {
	f, err := privfile.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(data)) > max {
		return nil
	}
	return data
}

// store keeps what a fetch of ref brought, then prunes. A cache that
// cannot be written only costs the next fetch a download.
func (c *cache) store(ref Ref, loc *url.URL, got *fetched) {
	if c == nil {
		return
	}
	hexsum := strings.TrimPrefix(got.digest, "sha256:")
	if !got.cached && c.writeArchive(hexsum, got.archive) != nil {
		return
	}
	rec, err := json.Marshal(record{Location: loc.String(), Chart: ref.Chart, Version: ref.Version, Digest: got.digest, Manifest: got.manifest})
	if err == nil {
		_ = privfile.WriteAtomic(c.recordPath(ref, loc), rec)
	}
	c.prune(time.Now())
}

// prune removes the archives, records and answers unused for cacheMaxAge, and
// temporary files older than an hour.
func (c *cache) prune(now time.Time) {
	for _, sub := range []string{"sha256", "refs", "index"} {
		dir := filepath.Join(c.dir, sub)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			age := now.Sub(info.ModTime())
			if age > cacheMaxAge || privfile.IsTemp(e.Name()) && age > time.Hour {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}
