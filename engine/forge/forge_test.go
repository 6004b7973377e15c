package forge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRemote(t *testing.T) {
	cases := []struct {
		url, kind, web string
		want           Remote
		err            string
	}{
		{url: "https://tok:x@GitHub.com/acme/shop.git", want: Remote{GitHub, "https://github.com", "acme/shop"}},
		{url: "git@github.com:acme/shop.git", want: Remote{GitHub, "https://github.com", "acme/shop"}},
		{url: "ssh://git@gitlab.com/grp/sub/shop", want: Remote{GitLab, "https://gitlab.com", "grp/sub/shop"}},
		{url: "https://codeberg.org/me/shop", want: Remote{Gitea, "https://codeberg.org", "me/shop"}},
		{url: "http://127.0.0.1:3000/kd/shop.git", kind: "gitea", want: Remote{Gitea, "http://127.0.0.1:3000", "kd/shop"}},
		{url: "https://git.example.com/gitea/kd/shop.git", kind: "forgejo", web: "https://git.example.com/gitea/", want: Remote{Gitea, "https://git.example.com/gitea", "kd/shop"}},
		{url: "https://git.example.com/kd/shop.git", err: "--forge"},
		{url: "/srv/repos/shop", err: "not a repository on a forge"},
		{url: "https://github.com/a/b/c", err: "owner/name"},
		{url: "https://github.com/a/b", web: "https://u:p@x", err: "without credentials"},
	}
	for _, tc := range cases {
		var k Kind
		if tc.kind != "" {
			var err error
			if k, err = ParseKind(tc.kind); err != nil {
				t.Fatal(err)
			}
		}
		got, err := ParseRemote(tc.url, k, tc.web)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: want error with %q, got %v", tc.url, tc.err, err)
			}
			if err != nil && strings.Contains(err.Error(), "tok") {
				t.Errorf("error shows a credential: %v", err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.url, got, err, tc.want)
		}
	}
	if _, err := ParseKind("bitbucket"); err == nil {
		t.Error("an unknown forge must be refused")
	}
}

func TestNewRequestURL(t *testing.T) {
	gh := Remote{GitHub, "https://github.com", "acme/shop"}
	if got, want := gh.NewRequestURL("main", "kdrift/revert-3f2c1ab"), "https://github.com/acme/shop/compare/main...kdrift/revert-3f2c1ab?expand=1"; got != want {
		t.Errorf("github: %s, want %s", got, want)
	}
	gl := Remote{GitLab, "https://gitlab.com", "grp/shop"}
	if got, want := gl.NewRequestURL("main", "kdrift/ignore-shop-1a2b"), "https://gitlab.com/grp/shop/-/merge_requests/new?merge_request%5Bsource_branch%5D=kdrift%2Fignore-shop-1a2b&merge_request%5Btarget_branch%5D=main"; got != want {
		t.Errorf("gitlab: %s, want %s", got, want)
	}
	gt := Remote{Gitea, "https://codeberg.org", "me/shop"}
	if got, want := gt.NewRequestURL("main", "kdrift/revert-x"), "https://codeberg.org/me/shop/compare/main...kdrift/revert-x"; got != want {
		t.Errorf("gitea: %s, want %s", got, want)
	}
}

func TestTokenFromEnvAndFile(t *testing.T) {
	env := map[string]string{"GITHUB_TOKEN": "gh1", "GITEA_TOKEN": " gt1 "}
	getenv := func(k string) string { return env[k] }
	if tok, _ := Token(GitHub, "", getenv); tok != "gh1" {
		t.Errorf("github token %q", tok)
	}
	if tok, _ := Token(Gitea, "", getenv); tok != "gt1" {
		t.Errorf("gitea token %q", tok)
	}
	env["KDRIFT_FORGE_TOKEN"] = "any"
	if tok, _ := Token(GitLab, "", getenv); tok != "any" {
		t.Errorf("KDRIFT_FORGE_TOKEN first: %q", tok)
	}
	f := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(f, []byte("fromfile\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tok, err := Token(GitHub, f, getenv); err != nil || tok != "fromfile" {
		t.Errorf("file token %q %v", tok, err)
	}
	if err := os.WriteFile(f, make([]byte, maxTokenFile+10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Token(GitHub, f, getenv); err == nil {
		t.Error("an oversized token file must be refused")
	}
}

func TestScrubMasksToken(t *testing.T) {
	err := scrub(os.ErrNotExist, "")
	if err.Error() != os.ErrNotExist.Error() {
		t.Fatal(err)
	}
	err = scrub(errorString("GET https://x:secret123@h/api?token=secret123 failed"), "secret123")
	if strings.Contains(err.Error(), "secret123") {
		t.Errorf("token shown: %v", err)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
