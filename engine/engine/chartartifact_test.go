package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/charttest"
	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/fluxtest"
	"kdrift.dev/kdrift/internal/gittest"
)

// hostAddress is an IPv4 address of this machine other than loopback:
// the apiserver's service proxy refuses loopback endpoints.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("this machine's addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Fatal("this test needs an IPv4 address other than loopback on this machine: the apiserver's service proxy, which it tests, refuses loopback endpoints")
	return ""
}

// sourceController runs what the apiserver's service proxy reaches as
// Service source-controller (port 80, named http) in namespace ns: an
// HTTP server on this machine's address serving files, behind a Pod whose
// IP is that address and an EndpointSlice naming the Pod. It counts the
// requests it answers.
func sourceController(t *testing.T, ns string, files map[string][]byte) *atomic.Int64 {
	t.Helper()
	ctx := context.Background()
	ip := hostAddress(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	requests := &atomic.Int64{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := int32(l.Addr().(*net.TCPAddr).Port)

	cs := enginetest.Clientset(t)
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "source-controller", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(port)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "source-controller-0", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "source-controller:test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP, pod.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	name, ready, proto := "http", true, corev1.ProtocolTCP
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "source-controller-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "source-controller"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod.Name, Namespace: ns}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return requests
}

// TestFluxChartArtifactThroughTheServiceProxy: a HelmRelease whose
// HelmRepository kdrift cannot reach (a private repository: here an
// address that only counts connections). The live HelmChart's status
// names the artifact source-controller serves; kdrift reads it through
// the real apiserver's service proxy, verifies its digest, renders it and
// compares the Deployment Synced, contacting the repository never; a
// second engine reads it from the content-addressed cache. A status whose
// digest the artifact does not have, or whose URL names another Service,
// is not used: kdrift turns to the repository and says why.
func TestFluxChartArtifactThroughTheServiceProxy(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "flux-served")
	fluxNS := namespace(t, "flux-served-system")
	private, privateConns := countingListener(t)

	archive := charttest.Package(t, charttest.Chart{Name: "cache", Version: "1.2.0", Files: fluxtest.RemoteChart("cache", "1.2.0", "redis:7.2")})
	sum := sha256.Sum256(archive)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	artifactPath := "/helmchart/flux-system/" + ns + "-cache/cache-1.2.0.tgz"
	requests := sourceController(t, fluxNS, map[string][]byte{artifactPath: archive})

	const url = "https://git.example.com/team/fleet.git"
	files := fluxtest.ReferenceLayout(url, ns)
	fluxtest.RemoteReleases(files, ns, "http://"+private+"/charts", "oci://"+private+"/charts/web")
	repo := gittest.Init(t)
	repo.Git("remote", "add", "origin", url)
	repo.Commit("Flux reference layout with a private chart repository", files)

	bootstrapFlux(t, url)
	createFlux(t, helmRepositoriesGVR, map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
		"metadata": map[string]any{"name": "cache", "namespace": "flux-system"},
		"spec":     map[string]any{"url": "http://" + private + "/charts", "interval": "1h", "secretRef": map[string]any{"name": "charts-auth"}},
	})
	artifact := func(digest, url string) map[string]any {
		return map[string]any{"artifact": map[string]any{"revision": "1.2.0", "digest": digest, "size": int64(len(archive)),
			"path": strings.TrimPrefix(artifactPath, "/"), "url": url, "lastUpdateTime": "2026-12-06T00:00:00Z"}}
	}
	artifactURL := "http://source-controller." + fluxNS + ".svc.cluster.local." + artifactPath
	hc := map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": ns + "-cache", "namespace": "flux-system"},
		"spec": map[string]any{"chart": "cache", "version": "1.x", "interval": "10m",
			"sourceRef": map[string]any{"kind": "HelmRepository", "name": "cache"}},
		"status": artifact(digest, artifactURL),
	}
	createFluxStatus(t, helmChartsGVR, hc)
	m, l, a := remoteAsHelmApplies("cache", "redis:7.2", ns)
	applyAs(t, ns, "helm-controller", m, l, a)

	cacheDir := t.TempDir()
	e := newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = cacheDir })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cache := appStatus(t, e, "cache")
	if cache.Sync != status.SyncSynced || len(cache.Resources) != 1 {
		t.Fatalf("the chart source-controller serves must render and compare Synced:\n%s", describe(cache))
	}
	if !strings.Contains(cache.Chart, "chart cache 1.2.0 ("+digest[:15]) || !strings.Contains(cache.Chart, "read from the artifact source-controller serves for HelmChart flux-system/"+ns+"-cache") {
		t.Fatalf("which chart was rendered, and from where: %q", cache.Chart)
	}
	if n := privateConns.Load(); n != 0 {
		t.Fatalf("the private repository was contacted %d times, though its artifact was served", n)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("source-controller answered %d requests, want 1", n)
	}

	// Another engine on the same chart cache: the digest is kept, no read.
	e = newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = cacheDir })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if cache = appStatus(t, e, "cache"); cache.Sync != status.SyncSynced || requests.Load() != 1 {
		t.Fatalf("a kept artifact must serve with no request (%d requests):\n%s", requests.Load(), describe(cache))
	}

	// A status whose digest the artifact does not have: not rendered; the
	// repository is tried, and the app says both.
	wrong := "sha256:" + strings.Repeat("ab", 32)
	setFluxStatus(t, helmChartsGVR, "flux-system", ns+"-cache", artifact(wrong, artifactURL))
	e = newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = t.TempDir() })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cache = appStatus(t, e, "cache")
	if cache.Sync != status.SyncError || !strings.Contains(cache.Error, "is not the status's "+wrong) || privateConns.Load() == 0 {
		t.Fatalf("an artifact that does not match its status must not render (repository contacted %d times):\n%s", privateConns.Load(), describe(cache))
	}

	// A URL naming another Service is not followed.
	setFluxStatus(t, helmChartsGVR, "flux-system", ns+"-cache", artifact(digest, "http://kubernetes.default.svc/helmchart/x.tgz"))
	before := requests.Load()
	e = newEngine(t, repo, func(o *engine.Options) { o.ChartCacheDir = t.TempDir() })
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	cache = appStatus(t, e, "cache")
	if cache.Sync != status.SyncError || !strings.Contains(cache.Error, `is not the Service source-controller.NAMESPACE.svc`) || requests.Load() != before {
		t.Fatalf("a URL naming another Service must not be followed:\n%s", describe(cache))
	}
}
