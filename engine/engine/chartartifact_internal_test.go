package engine

import (
	"strings"
	"testing"
)

// TestProxyTarget: only source-controller's Service, over http or https,
// with a clean path and no credentials or query, is read; the port goes
// by number (the scheme's when the URL has none).
func TestProxyTarget(t *testing.T) {
	for _, c := range []struct {
		url, want, err string
	}{
		{url: "http://source-controller.flux-system.svc.cluster.local./helmchart/flux-system/x/c-1.2.0.tgz", want: "|flux-system|source-controller|80|/helmchart/flux-system/x/c-1.2.0.tgz"},
		{url: "http://source-controller.flux.svc/ocirepository/flux/web/sha256:ab.tar.gz", want: "|flux|source-controller|80|/ocirepository/flux/web/sha256:ab.tar.gz"},
		{url: "https://source-controller.flux-system:9443/a.tgz", want: "https|flux-system|source-controller|9443|/a.tgz"},
		{url: "https://SOURCE-CONTROLLER.flux-system.svc.example.internal/a.tgz", want: "https|flux-system|source-controller|443|/a.tgz"},
		{url: "http://kubernetes.default.svc/a.tgz", err: "is not the Service source-controller"},
		{url: "http://source-controller/a.tgz", err: "is not the Service source-controller"},
		{url: "http://source-controller.flux-system.default.svc/a.tgz", err: "is not the Service source-controller"},
		{url: "http://169.254.169.254/latest/meta-data", err: "is not the Service source-controller"},
		{url: "file:///etc/passwd", err: "scheme"},
		{url: "http://user:pass@source-controller.flux-system/a.tgz", err: "credentials"},
		{url: "http://source-controller.flux-system/a.tgz?x=1", err: "query"},
		{url: "http://source-controller.flux-system/a/../../api/v1/secrets", err: "clean absolute path"},
		{url: "http://source-controller.flux-system/a//b.tgz", err: "clean absolute path"},
		{url: "http://source-controller.flux-system", err: "clean absolute path"},
		{url: "http://source-controller.flux-system:0/a.tgz", err: "not a port"},
	} {
		got, err := proxyTarget(c.url)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: want an error saying %q, got %+v, %v", c.url, c.err, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if s := strings.Join([]string{got.scheme, got.namespace, got.name, got.port, got.path}, "|"); s != c.want {
			t.Errorf("%s: %s, want %s", c.url, s, c.want)
		}
	}
}
