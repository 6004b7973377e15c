package live_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/live"
)

func TestContextServers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: "https://api.prod.example.com"}
- name: stage
  cluster: {server: "https://stage.example.com:6443"}
contexts:
- name: prod-admin
  context: {cluster: prod, user: admin}
- name: stage
  context: {cluster: stage, user: admin}
- name: orphan
  context: {cluster: gone, user: admin}
users:
- name: admin
  user: {token: x}
current-context: prod-admin
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := live.ContextServers(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["prod-admin"] != "https://api.prod.example.com" || got["stage"] != "https://stage.example.com:6443" {
		t.Errorf("servers = %v", got)
	}
	if err := os.WriteFile(path, []byte("clusters: [oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := live.ContextServers(path); err == nil || !strings.Contains(err.Error(), "cannot load it") {
		t.Errorf("a broken kubeconfig: %v", err)
	}
}
