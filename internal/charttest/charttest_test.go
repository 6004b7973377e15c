package charttest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"kdrift.dev/kdrift/internal/charttest"
)

var demo = charttest.Chart{Name: "demo", Version: "1.0.0+rc.1", Files: map[string]string{"templates/cm.yaml": "kind: ConfigMap\n"}}

func TestPackageLoadsInHelm(t *testing.T) {
	ch, err := loader.LoadArchive(bytes.NewReader(charttest.Package(t, demo)))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "demo" || ch.Metadata.Version != "1.0.0+rc.1" || len(ch.Templates) != 1 {
		t.Errorf("loaded %s %s with %d templates", ch.Name(), ch.Metadata.Version, len(ch.Templates))
	}
}

func TestHelmRepoServesIndexAndArchives(t *testing.T) {
	repo := charttest.HelmRepo(t, demo)
	index := get(t, repo.URL+"/index.yaml")
	if !strings.Contains(index, "charts/demo-1.0.0+rc.1.tgz") || !strings.Contains(index, strings.TrimPrefix(repo.Digest("demo", "1.0.0+rc.1"), "sha256:")) {
		t.Errorf("index.yaml:\n%s", index)
	}
	archive := get(t, repo.URL+"/charts/demo-1.0.0+rc.1.tgz")
	repo.Corrupt("demo", "1.0.0+rc.1")
	if corrupt := get(t, repo.URL+"/charts/demo-1.0.0+rc.1.tgz"); corrupt == archive || len(corrupt) != len(archive) {
		t.Error("Corrupt did not change the archive served")
	}
	if repo.Requests() != 3 || repo.Connections() == 0 {
		t.Errorf("%d requests over %d connections, want 3 over some", repo.Requests(), repo.Connections())
	}
}

func TestRegistryPushChartAsHelm(t *testing.T) {
	reg := charttest.Registry(t)
	digest := reg.PushChart(t, "team/charts/demo", demo)
	repo, err := remote.NewRepository(reg.Host + "/team/charts/demo")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	ctx := context.Background()
	desc, err := repo.Resolve(ctx, "1.0.0_rc.1")
	if err != nil || desc.Digest.String() != digest {
		t.Fatalf("tag 1.0.0_rc.1: %v %v, want %s", desc.Digest, err, digest)
	}
	manifest, err := content.FetchAll(ctx, repo, desc)
	if err != nil || !bytes.Contains(manifest, []byte("application/vnd.cncf.helm.chart.content.v1.tar+gzip")) ||
		!bytes.Contains(manifest, []byte("application/vnd.cncf.helm.config.v1+json")) {
		t.Errorf("manifest %s, %v", manifest, err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(data)
}
