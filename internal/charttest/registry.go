package charttest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the storage driver Registry names
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// The media types helm push writes.
const (
	helmConfig = "application/vnd.cncf.helm.config.v1+json"
	helmLayer  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// quietOnce silences distribution's logging once per process.
var quietOnce sync.Once

// RegistryServer is an OCI registry on loopback: distribution's registry,
// in memory, served from this process over plain HTTP.
type RegistryServer struct {
	// Host is the registry's address, 127.0.0.1:PORT.
	Host string
	counter
	srv     *httptest.Server
	require Credentials
}

// Registry starts an empty OCI registry, stopped when the test ends.
func Registry(t testing.TB) *RegistryServer {
	t.Helper()
	return RegistryWith(t, Credentials{})
}

// RegistryWith starts an empty OCI registry that requires the username
// and password of require (basic auth, the challenge a registry without a
// token service gives), stopped when the test ends.
func RegistryWith(t testing.TB, require Credentials) *RegistryServer {
	t.Helper()
	config := &configuration.Configuration{
		Storage: configuration.Storage{
			"inmemory":    configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	config.Log.AccessLog.Disabled = true
	quietOnce.Do(func() {
		// distribution logs every request through logrus's standard
		// logger, which tests do not read.
		logrus.SetOutput(io.Discard)
	})
	config.HTTP.Secret = "charttest"
	app := handlers.NewApp(context.Background(), config)
	r := &RegistryServer{require: require}
	r.srv = httptest.NewUnstartedServer(r.handler(require.require(app)))
	r.srv.Config.ConnState = r.connState
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// Close stops the registry: later requests find nothing listening.
func (r *RegistryServer) Close() { r.srv.Close() }

// PushChart pushes c to repository repoPath (below the registry's root,
// the chart's name last, as helm push makes it) as helm push does: a
// config of the chart's metadata, one chart layer, tagged with the version
// ("+" written "_"). It returns the manifest's digest.
func (r *RegistryServer) PushChart(t testing.TB, repoPath string, c Chart) (manifestDigest string) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(r.Host + "/" + strings.Trim(repoPath, "/"))
	if err != nil {
		t.Fatalf("charttest: repository %s: %v", repoPath, err)
	}
	repo.PlainHTTP = true
	repo.Client = http.DefaultClient
	if r.require != (Credentials{}) {
		repo.Client = &auth.Client{Client: http.DefaultClient, Credential: auth.StaticCredential(r.Host, auth.Credential{Username: r.require.Username, Password: r.require.Password})}
	}
	archive := Package(t, c)
	config, err := json.Marshal(map[string]string{"apiVersion": "v2", "name": c.Name, "version": c.Version})
	if err != nil {
		t.Fatal(err)
	}
	configDesc := push(t, ctx, repo, helmConfig, config)
	layerDesc := push(t, ctx, repo, helmLayer, archive)
	layerDesc.Annotations = map[string]string{ocispec.AnnotationTitle: c.Name + "-" + c.Version + ".tgz"}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      configDesc,
		Layers:      []ocispec.Descriptor{layerDesc},
		Annotations: map[string]string{ocispec.AnnotationTitle: c.Name, ocispec.AnnotationVersion: c.Version},
	})
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	if err := repo.PushReference(ctx, desc, bytes.NewReader(manifest), tag(c.Version)); err != nil {
		t.Fatalf("charttest: push manifest of %s %s: %v", c.Name, c.Version, err)
	}
	return desc.Digest.String()
}

// push pushes one blob and returns its descriptor.
func push(t testing.TB, ctx context.Context, repo *remote.Repository, mediaType string, data []byte) ocispec.Descriptor {
	t.Helper()
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
		t.Fatalf("charttest: push %s: %v", mediaType, err)
	}
	return desc
}
