package engine

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/charts"
)

// sourceControllerService is the only Service whose artifacts kdrift reads
// through the apiserver's service proxy: Flux's source-controller, which
// serves what it fetched for each source (ARCHITECTURE.md, "Remote charts
// in the engine"). Any other host in a status is not followed.
const sourceControllerService = "source-controller"

// resolver is the live Flux source whose status resolved the exact chart
// resolveChart chose (a HelmChart's version, an OCIRepository's version
// and manifest digest), on the context named on.
type resolver struct {
	kind, namespace, name, on string
	obj                       map[string]any
}

// servedArtifact is the chart archive that by, the live Flux source which
// resolved ref, serves: source-controller fetched it with the source's
// own credentials, and it is what helm-controller installs. nil when
// there is none to read, with why not ("" when no live source resolved
// the version or its status names no artifact).
func (e *core) servedArtifact(a app.App, ref charts.Ref, by *resolver) (*charts.Served, string) {
	if by == nil {
		return nil, ""
	}
	raw, _, _ := unstructured.NestedString(by.obj, "status", "artifact", "url")
	digest, _, _ := unstructured.NestedString(by.obj, "status", "artifact", "digest")
	size, _, _ := unstructured.NestedInt64(by.obj, "status", "artifact", "size")
	if raw == "" || digest == "" {
		return nil, ""
	}
	what := fmt.Sprintf("%s %s/%s", by.kind, by.namespace, by.name)
	svc, err := proxyTarget(raw)
	if err != nil {
		return nil, fmt.Sprintf("the artifact of %s is not read (%v)", what, err)
	}
	kctx := a.Spec.Destination.Context
	if kctx == "" {
		kctx = e.opts.Context
	}
	return &charts.Served{
		Ref: ref, Digest: digest, Size: size,
		By: fmt.Sprintf("the artifact source-controller serves for %s (%s)", what, by.on),
		Open: func(ctx context.Context) (io.ReadCloser, error) {
			cs, err := e.clients.For(kctx)
			if err != nil {
				return nil, err
			}
			core, err := corev1client.NewForConfigAndClient(cs.Config, cs.HTTP)
			if err != nil {
				return nil, err
			}
			return core.Services(svc.namespace).ProxyGet(svc.scheme, svc.name, svc.port, svc.path, nil).Stream(ctx)
		},
	}, ""
}

// proxiedService is a Service path read through the apiserver's service
// proxy.
type proxiedService struct {
	scheme, namespace, name, port, path string
}

// proxyTarget reads an artifact URL source-controller wrote
// (http://source-controller.NAMESPACE.svc.CLUSTER-DOMAIN./KIND/NS/NAME/FILE):
// the Service, its port when the URL names one, and the path. Only
// source-controller's Service, over http or https, with a clean absolute
// path and no credentials or query, is accepted: a status can be written
// by anyone who may write it, and kdrift must not become a way to reach
// other Services.
func proxyTarget(raw string) (proxiedService, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return proxiedService{}, fmt.Errorf("its URL does not parse: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return proxiedService{}, fmt.Errorf("its URL's scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return proxiedService{}, fmt.Errorf("its URL carries credentials, a query or a fragment")
	}
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), ".")
	if len(labels) < 2 || labels[0] != sourceControllerService || (len(labels) > 2 && labels[2] != "svc") {
		return proxiedService{}, fmt.Errorf("its host %q is not the Service %s.NAMESPACE.svc", u.Hostname(), sourceControllerService)
	}
	if labels[1] == "" {
		return proxiedService{}, fmt.Errorf("its host %q names no namespace", u.Hostname())
	}
	if p := u.Path; p == "" || p[0] != '/' || path.Clean(p) != p || strings.Contains(p, "..") {
		return proxiedService{}, fmt.Errorf("its path %q is not a clean absolute path", u.Path)
	}
	// The port goes by number: the proxy maps a number to the Service's
	// port of that number (source-controller's is named "http"), while no
	// port at all would match only an unnamed one.
	port := u.Port()
	if n, err := strconv.Atoi(port); port != "" && (err != nil || n < 1 || n > 65535) {
		return proxiedService{}, fmt.Errorf("its port %q is not a port", port)
	}
	scheme := ""
	switch {
	case u.Scheme == "https":
		scheme = "https"
		if port == "" {
			port = "443"
		}
	case port == "":
		port = "80"
	}
	return proxiedService{scheme: scheme, namespace: labels[1], name: sourceControllerService, port: port, path: u.Path}, nil
}
