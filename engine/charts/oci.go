package charts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// helmChartLayer is the media type of the chart layer Helm pushes.
const helmChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// fetchOCI fetches ref from an OCI registry: the manifest of tag
// ref.Version (Helm's tags spell "+" as "_"), or of ref.Digest when set,
// then its chart layer. Anonymous unless cr gives credentials, which go
// to the registry's host alone (oras exchanges them for a token where the
// registry asks); loopback registries are spoken to over plain HTTP,
// every other over HTTPS.
func (f *Fetcher) fetchOCI(ctx context.Context, client *http.Client, ref Ref, loc *url.URL, cr *creds) (*fetched, error) {
	repoPath := strings.TrimPrefix(loc.Path, "/")
	if ref.Artifact == "" {
		repoPath = strings.TrimPrefix(repoPath+"/"+ref.Chart, "/")
	}
	repo, err := remote.NewRepository(loc.Host + "/" + repoPath)
	if err != nil {
		return nil, fail(ref, err, "give the location as oci://HOST/PATH with a lower-case repository path", "%s is not an OCI repository: %v", display(loc.String()), err)
	}
	repo.PlainHTTP = loopback(loc.Hostname())
	repo.Client = &auth.Client{Client: client, Cache: auth.NewCache(), Credential: cr.registry(loc)}
	repo.MaxMetadataBytes = maxManifest

	reference := ref.Digest
	if reference == "" {
		reference = strings.ReplaceAll(ref.Version, "+", "_")
	}
	desc, rc, err := repo.Manifests().FetchReference(ctx, reference)
	if errors.Is(err, errdef.ErrNotFound) && ref.Digest == "" && strings.HasPrefix(reference, "v") {
		// Chart versions are written with and without the "v".
		desc, rc, err = repo.Manifests().FetchReference(ctx, strings.TrimPrefix(reference, "v"))
	}
	if err != nil {
		return nil, ociError(ref, cr, err, "the manifest")
	}
	data, err := readBounded(rc, maxManifest)
	rc.Close()
	if err != nil {
		return nil, ociError(ref, cr, err, "the manifest")
	}
	if data == nil {
		return nil, tooBig(ref, "the manifest", maxManifest)
	}
	sum := sha256.Sum256(data)
	manifest := "sha256:" + hex.EncodeToString(sum[:])
	if ref.Digest != "" && manifest != ref.Digest {
		return nil, fail(ref, nil, "check the digest the source pins", "the manifest's digest %s is not the expected %s", manifest, ref.Digest)
	}
	if desc.Digest.Algorithm() == "sha256" && desc.Digest.String() != manifest {
		return nil, fail(ref, nil, "fetch again later; if it persists, tell the registry's owner", "the registry gave the manifest's digest as %s but its content is %s", desc.Digest, manifest)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fail(ref, err, "check that the location holds a Helm chart (helm push)", "the manifest is not an OCI image manifest: %v", err)
	}
	var layer *ocispec.Descriptor
	for i, l := range m.Layers {
		if l.MediaType == helmChartLayer {
			if layer != nil {
				return nil, fail(ref, nil, "push the chart with helm push", "the manifest has more than one chart layer")
			}
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return nil, fail(ref, nil, "check that the location holds a Helm chart (helm push), not an image", "the manifest (config %s) has no layer of type %s", m.Config.MediaType, helmChartLayer)
	}
	max := limit(f.MaxArchive, defaultMaxArchive)
	if layer.Size < 0 || layer.Size > max {
		return nil, tooBig(ref, "the chart archive", max)
	}
	if layer.Digest.Algorithm() != "sha256" || layer.Digest.Validate() != nil {
		return nil, fail(ref, nil, "push the chart with helm push", "the chart layer's digest %q is not a SHA-256 digest", layer.Digest)
	}
	archive, err := content.FetchAll(ctx, repo, *layer)
	if err != nil {
		return nil, ociError(ref, cr, err, "the chart archive")
	}
	asum := sha256.Sum256(archive)
	digest := "sha256:" + hex.EncodeToString(asum[:])
	if digest != layer.Digest.String() {
		return nil, fail(ref, nil, "fetch again later; if it persists, tell the registry's owner", "the chart archive's digest %s is not the manifest's %s", digest, layer.Digest)
	}
	return &fetched{archive: archive, digest: digest, manifest: manifest}, nil
}

// readBounded reads r to its end, nil when it holds more than max bytes.
func readBounded(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil || int64(len(data)) > max {
		return nil, err
	}
	return data, nil
}

// ociError is the Error of a registry request that failed.
func ociError(ref Ref, cr *creds, err error, what string) *Error {
	var er *errcode.ErrorResponse
	switch {
	case errors.As(err, &er) && (er.StatusCode == 401 || er.StatusCode == 403), errors.Is(err, auth.ErrBasicCredentialNotFound):
		return needsCredentials(ref, cr, cr != nil, err)
	case (errors.Is(err, errdef.ErrNotFound) || errors.As(err, &er) && er.StatusCode == 404) && ref.Digest != "":
		return fail(ref, err, "check the pinned digest: the cluster's source may name an artifact the registry no longer holds", "%s %s is not in the registry", what, ref.Digest)
	case errors.Is(err, errdef.ErrNotFound), errors.As(err, &er) && er.StatusCode == 404:
		return fail(ref, err, "check the location, chart and version (the tag is the version, \"+\" written \"_\")", "%s is not in the registry", what)
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData):
		return fail(ref, err, "fetch again later; if it persists, tell the registry's owner", "%s does not match its digest: %v", what, err)
	case errors.As(err, &er):
		e := fail(ref, err, "try again later, or ask the registry's owner", "%s could not be read: %v", what, err)
		e.Offline = unreachableStatus(er.StatusCode)
		return e
	}
	return transportError(ref, err, what)
}

// loopback says whether host is this machine's loopback: the one place a
// registry is spoken to over plain HTTP.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
