// Package charttest runs real chart servers for tests, on loopback: a Helm
// HTTP repository (index.yaml and archives packaged by Helm's own SDK) and
// an OCI registry (distribution's, in memory, in this process) that charts
// are pushed to as helm push does.
package charttest

import (
	"crypto/subtle"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Chart is a chart for tests: its name, version and files (paths relative
// to the chart's folder). Chart.yaml is generated from Name and Version
// when Files has none.
type Chart struct {
	Name, Version string
	Files         map[string]string
}

// Package returns the .tgz archive helm package would make of c.
func Package(t testing.TB, c Chart) []byte {
	t.Helper()
	var files []*archive.BufferedFile
	if _, ok := c.Files["Chart.yaml"]; !ok {
		meta := "apiVersion: v2\nname: " + c.Name + "\nversion: " + c.Version + "\n"
		files = append(files, &archive.BufferedFile{Name: "Chart.yaml", Data: []byte(meta)})
	}
	names := make([]string, 0, len(c.Files))
	for name := range c.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		files = append(files, &archive.BufferedFile{Name: name, Data: []byte(c.Files[name])})
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		t.Fatalf("charttest: load chart %s %s: %v", c.Name, c.Version, err)
	}
	out, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatalf("charttest: package chart %s %s: %v", c.Name, c.Version, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// counter counts the connections and requests a test server accepts, and
// the requests that carried an Authorization header.
type counter struct {
	conns, requests, authorized atomic.Int64
}

// connState counts each new connection (http.Server.ConnState).
func (c *counter) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		c.conns.Add(1)
	}
}

// handler counts each request h serves.
func (c *counter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			c.authorized.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

// Connections is how many connections the server accepted.
func (c *counter) Connections() int64 { return c.conns.Load() }

// Requests is how many requests the server answered.
func (c *counter) Requests() int64 { return c.requests.Load() }

// WithAuthorization is how many requests came with an Authorization
// header (any credentials, right or wrong).
func (c *counter) WithAuthorization() int64 { return c.authorized.Load() }

// Credentials are a username and password a server requires (HTTP basic
// auth); the zero value requires none.
type Credentials struct{ Username, Password string }

// require answers 401 with a basic challenge to a request without c's
// username and password, and passes the others to h; zero c passes all.
func (c Credentials) require(h http.Handler) http.Handler {
	if c == (Credentials{}) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(c.Username)) != 1 || subtle.ConstantTimeCompare([]byte(pass), []byte(c.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="charttest"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// tag is the OCI tag Helm pushes a chart version under.
func tag(version string) string { return strings.ReplaceAll(version, "+", "_") }
