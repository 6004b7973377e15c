package charttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// HelmRepoServer is a Helm HTTP repository on loopback: /index.yaml and
// the archives under /charts/ (or on ArchiveHost: see RepoOptions).
type HelmRepoServer struct {
	// URL is the repository's URL, http://127.0.0.1:PORT (no trailing slash).
	URL string
	counter
	srv *httptest.Server
	// ArchiveHost is the second server that holds the archives, when
	// RepoOptions.Archives puts them there; nil otherwise.
	ArchiveHost *ArchiveServer

	// index and notModified count the requests of index.yaml, and
	// those answered 304 Not Modified.
	index, notModified atomic.Int64

	mu       sync.Mutex
	archives map[string][]byte // by path
	digests  map[string]string // by name and version: "sha256:<hex>"
	corrupt  map[string]bool   // paths served with a byte changed
}

// ArchiveServer is a second loopback server (another port: another
// origin) that serves a repository's archives, with no credentials asked.
type ArchiveServer struct {
	// URL is http://127.0.0.1:PORT.
	URL string
	counter
}

// Archives says where a HelmRepo serves its archives.
type Archives int

// Where a HelmRepo's archives are.
const (
	// ArchivesHere: under the repository's /charts/, the index naming
	// them relative to itself.
	ArchivesHere Archives = iota
	// ArchivesElsewhere: on ArchiveHost, the index naming them by
	// absolute URL.
	ArchivesElsewhere
	// ArchivesRedirected: the index names them under the repository's
	// /charts/, which redirects (302) to ArchiveHost.
	ArchivesRedirected
)

// RepoOptions are how HelmRepoWith serves.
type RepoOptions struct {
	// Require is the username and password every request to the
	// repository itself must carry (basic auth); zero requires none.
	Require Credentials
	// Archives is where the archives are served.
	Archives Archives
}

// HelmRepo starts a Helm repository serving charts (each packaged with
// Package; the index gives each archive's SHA-256 and a URL relative to
// the index), stopped when the test ends.
func HelmRepo(t testing.TB, charts ...Chart) *HelmRepoServer {
	t.Helper()
	return HelmRepoWith(t, RepoOptions{}, charts...)
}

// HelmRepoWith starts a Helm repository serving charts as opts say,
// stopped when the test ends.
func HelmRepoWith(t testing.TB, opts RepoOptions, charts ...Chart) *HelmRepoServer {
	t.Helper()
	s := &HelmRepoServer{archives: map[string][]byte{}, digests: map[string]string{}, corrupt: map[string]bool{}}
	prefix := ""
	if opts.Archives != ArchivesHere {
		s.ArchiveHost = &ArchiveServer{}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /charts/", s.serveArchive)
		srv := httptest.NewUnstartedServer(s.ArchiveHost.handler(mux))
		srv.Config.ConnState = s.ArchiveHost.connState
		srv.Start()
		t.Cleanup(srv.Close)
		s.ArchiveHost.URL = srv.URL
		if opts.Archives == ArchivesElsewhere {
			prefix = srv.URL + "/"
		}
	}
	entries := map[string][]map[string]any{}
	for _, c := range charts {
		data := Package(t, c)
		sum := sha256.Sum256(data)
		p := "charts/" + c.Name + "-" + c.Version + ".tgz"
		s.archives["/"+p] = data
		s.digests[c.Name+" "+c.Version] = "sha256:" + hex.EncodeToString(sum[:])
		entries[c.Name] = append(entries[c.Name], map[string]any{
			"apiVersion": "v2", "name": c.Name, "version": c.Version,
			"urls": []string{prefix + p}, "digest": hex.EncodeToString(sum[:]),
		})
	}
	index, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256(index))
	mux.HandleFunc("GET /index.yaml", func(w http.ResponseWriter, r *http.Request) {
		s.index.Add(1)
		w.Header().Set("Content-Type", "application/x-yaml")
		w.Header().Set("ETag", etag)
		rec := &statusWriter{ResponseWriter: w}
		http.ServeContent(rec, r, "index.yaml", indexTime, bytes.NewReader(index))
		if rec.status == http.StatusNotModified {
			s.notModified.Add(1)
		}
	})
	switch opts.Archives {
	case ArchivesHere:
		mux.HandleFunc("GET /charts/", s.serveArchive)
	case ArchivesRedirected:
		mux.HandleFunc("GET /charts/", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, s.ArchiveHost.URL+r.URL.Path, http.StatusFound)
		})
	}
	s.srv = httptest.NewUnstartedServer(s.handler(opts.Require.require(mux)))
	s.srv.Config.ConnState = s.connState
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// serveArchive answers an archive's path with the archive (a byte
// changed when Corrupt said so).
func (s *HelmRepoServer) serveArchive(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.archives[r.URL.Path]
	if ok && s.corrupt[r.URL.Path] {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0xff
	}
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(data)
}

// indexTime is the Last-Modified of every index the server serves.
var indexTime = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status and writes it.
func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// IndexRequests is how many requests of index.yaml the server answered,
// 304s included.
func (s *HelmRepoServer) IndexRequests() int64 { return s.index.Load() }

// NotModified is how many index.yaml requests were answered 304 Not
// Modified: conditional requests of an unchanged index, with no body.
func (s *HelmRepoServer) NotModified() int64 { return s.notModified.Load() }

// Digest is the "sha256:<hex>" of the archive of chart name's version.
func (s *HelmRepoServer) Digest(name, version string) string {
	return s.digests[name+" "+version]
}

// Corrupt makes the server answer the archive of chart name's version with
// one byte changed, while the index keeps the true digest.
func (s *HelmRepoServer) Corrupt(name, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt["/charts/"+name+"-"+version+".tgz"] = true
}

// Close stops the server: later requests find nothing listening.
func (s *HelmRepoServer) Close() { s.srv.Close() }
