// Package forgetest runs a real Gitea server for tests: built from
// testdata/gitea (Gitea's own Go module, SQLite) once and cached like the
// local control plane, started on loopback with an admin user and an API
// token made through Gitea's own CLI.
package forgetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kdrift.dev/kdrift/internal/controlplane"
)

// GiteaModuleDir is the nested module's folder relative to the repository root.
const GiteaModuleDir = "testdata/gitea"

// GiteaBuildOptions are the options that build (or find cached) Gitea.
func GiteaBuildOptions(root string) controlplane.BuildOptions {
	return controlplane.BuildOptions{
		SourceDir: filepath.Join(root, GiteaModuleDir),
		Name:      "gitea",
		// Gitea's SQLite driver (mattn/go-sqlite3, cgo) is built in
		// only with these tags, as Gitea's Makefile does.
		Tags:    "sqlite sqlite_unlock_notify",
		LDFlags: []string{"-s", "-w"},
	}
}

// Gitea is a running Gitea server.
type Gitea struct {
	// URL is the web root, http://127.0.0.1:PORT (no trailing slash).
	URL string
	// Admin is the admin user's name; Token its API token (all scopes).
	Admin, Password, Token string
	bin, config            string
}

// StartGitea builds (or finds cached) Gitea, starts it in a temporary
// folder and stops it when the test ends.
func StartGitea(t *testing.T) *Gitea {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := GiteaBuildOptions(root)
	opts.Log = os.Stderr
	bin, err := controlplane.Binary(ctx, opts)
	if err != nil {
		t.Fatalf("gitea: %v", err)
	}
	// Without Gitea's generated bindata, templates and options are read
	// from its module's source tree.
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "code.gitea.io/gitea")
	list.Dir = opts.SourceDir
	list.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	static, err := list.Output()
	if err != nil {
		t.Fatalf("gitea: locating its module sources: %v", err)
	}
	work := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	g := &Gitea{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Admin: "kdrift-admin", Password: "Kd-test-pass-123", bin: bin, config: filepath.Join(work, "app.ini")}
	ini := fmt.Sprintf(`I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
APP_NAME = kdrift test
RUN_MODE = prod
WORK_PATH = %[1]s
[database]
DB_TYPE = sqlite3
PATH = %[1]s/gitea.db
[repository]
ROOT = %[1]s/repos
[server]
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
ROOT_URL = http://127.0.0.1:%[2]d/
DISABLE_SSH = true
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[3]s
APP_DATA_PATH = %[1]s/data
[security]
INSTALL_LOCK = true
SECRET_KEY = kdrift-test-secret-kdrift-test-secret
INTERNAL_TOKEN = eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJuYmYiOjE3MDAwMDAwMDB9.kdrifttestkdrifttestkdrifttestkdrifttestab
[service]
DISABLE_REGISTRATION = true
[oauth2]
ENABLED = false
[log]
MODE = console
LEVEL = warn
[actions]
ENABLED = false
[packages]
ENABLED = false
[cron]
ENABLED = false
[mailer]
ENABLED = false
`, work, port, strings.TrimSpace(string(static)))
	if err := os.WriteFile(g.config, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	g.cli(t, "migrate")
	g.cli(t, "admin", "user", "create", "--admin", "--username", g.Admin, "--password", g.Password, "--email", g.Admin+"@example.com", "--must-change-password=false")
	out := g.cli(t, "admin", "user", "generate-access-token", "--username", g.Admin, "--scopes", "all", "--raw")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Token = strings.TrimSpace(lines[len(lines)-1])
	var logBuf bytes.Buffer
	web := exec.Command(bin, "web", "-c", g.config)
	web.Dir = work
	web.Stdout, web.Stderr = &logBuf, &logBuf
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = web.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = web.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = web.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(g.URL + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitea did not answer on %s within 2m: %v\n%s", g.URL, err, logBuf.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return g
}

// cli runs a Gitea admin command against the server's config.
func (g *Gitea) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(g.bin, append(args, "-c", g.config)...)
	cmd.Dir = filepath.Dir(g.config)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gitea %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// CreateUser makes a user through Gitea's CLI.
func (g *Gitea) CreateUser(t *testing.T, name string) {
	t.Helper()
	g.cli(t, "admin", "user", "create", "--username", name, "--password", g.Password, "--email", name+"@example.com", "--must-change-password=false")
}

// API calls Gitea's REST API as the admin and decodes the answer into out
// (when not nil); a status of 300 or more fails the test.
func (g *Gitea) API(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.URL+"/api/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+g.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("gitea %s %s: %s: %s", method, path, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("gitea %s %s: %v: %s", method, path, err, data)
		}
	}
}

// CloneURL is the repository's HTTP address with the admin's credentials.
func (g *Gitea) CloneURL(owner, repo string) string {
	return strings.Replace(g.URL, "http://", "http://"+g.Admin+":"+g.Password+"@", 1) + "/" + owner + "/" + repo + ".git"
}

// WaitPushed waits until Gitea has processed a push of branch to
// owner/repo. Gitea records a first push (the repository stops being
// empty, which its pull-request routes require) in a background queue,
// so a test that pushes and at once opens a pull request must wait.
func (g *Gitea) WaitPushed(t *testing.T, owner, repo, branch string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r struct {
			Empty bool `json:"empty"`
		}
		status, err := g.get("/repos/"+owner+"/"+repo, &r)
		if err == nil && status == http.StatusOK && !r.Empty {
			if status, err = g.get("/repos/"+owner+"/"+repo+"/branches/"+branch, nil); err == nil && status == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitea %s/%s: branch %s still not recorded 30 s after the push (last status %d, %v)", owner, repo, branch, status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get is a GET as the admin that reports the status instead of failing.
func (g *Gitea) get(path string, out any) (int, error) {
	req, err := http.NewRequest("GET", g.URL+"/api/v1"+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "token "+g.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || out == nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, json.Unmarshal(data, out)
}
