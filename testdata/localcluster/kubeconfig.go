package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
)

// writeKubeconfig writes an admin kubeconfig atomically: a reader never sees
// a half-written file, because it appears under its name only when complete.
func writeKubeconfig(path, server string, caPEM []byte, token string) error {
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: localcluster
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: kdrift-admin
  user:
    token: %s
contexts:
- name: localcluster
  context:
    cluster: localcluster
    user: kdrift-admin
    namespace: default
current-context: localcluster
`, server, base64.StdEncoding.EncodeToString(caPEM), token)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("kubeconfig folder: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".kubeconfig-*")
	if err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
