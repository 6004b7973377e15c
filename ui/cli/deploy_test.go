package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kustomize/api/krusty"
	kustomizetypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"kdrift.dev/kdrift/engine/publish"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/enginetest"
)

// deployApp is the App the ServiceAccount's kdrift syncs: a Deployment, two
// ConfigMaps and a Service in a namespace the settings list (namespaced
// mode: the namespace exists, kdrift cannot create it).
const deployApp = `apiVersion: kdrift.dev/v1alpha1
kind: App
metadata:
  name: shop
spec:
  path: deploy
  destination:
    namespace: deploy-shop
  syncPolicy:
    selfHeal: true
    prune: true
`

var deployAppFiles = map[string]string{
	".kdrift/shop.yaml":     deployApp,
	".kdrift/settings.yaml": "apiVersion: kdrift.dev/v1alpha1\nkind: Settings\nspec:\n  namespaces: [deploy-shop]\n",
	"deploy/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/web:1.0
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`,
	"deploy/config.yaml": webConfig + "---\n" + webFlags,
}

const (
	webConfig = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hello\n"
	webFlags  = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-flags\ndata:\n  beta: \"off\"\n"
)

// TestDeployLeastPrivilege: deploy/ renders with kustomize; its Namespace,
// ServiceAccount and RBAC apply to the control plane and its Deployment
// passes server-side validation (and the restricted Pod Security profile);
// it binds kdrift's write role nowhere (namespaced mode), and `kdrift
// rbac` binds it in the namespace the repository's settings list; the
// real kdrift binary, run as the Deployment runs it but with a kubeconfig
// holding only the ServiceAccount's token, creates an App's objects there,
// heals a person's drift and prunes what left Git, with no forbidden
// error; and the ServiceAccount cannot do what it does not need (read
// Secrets, grant RBAC, use update, create or delete Namespaces, write in
// another namespace). The components render; cluster-wide binds the write
// role everywhere.
func TestDeployLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	root, err := enginetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := kdriftBinary(t)
	objs := kustomizeBuild(t, filepath.Join(root, "deploy"), false)
	admin := newAdminApplier(t)
	cs := enginetest.Clientset(t)

	var sa, dep *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o
		case "Deployment":
			dep = o
			continue // validated below, never run: no nodes, no image
		case "NetworkPolicy":
			checkMetricsPolicy(t, o)
		case "ClusterRoleBinding":
			if o.GetName() == applyRole {
				t.Fatalf("deploy/ binds %s cluster-wide; the default is namespaced (kdrift rbac)", applyRole)
			}
		case "Namespace", "ClusterRole", "Role", "RoleBinding", "CustomResourceDefinition":
		default:
			t.Fatalf("deploy/ renders a %s (%s) the test does not know how to check", o.GetKind(), o.GetName())
		}
		admin.apply(t, o)
	}
	if sa == nil || dep == nil {
		t.Fatalf("deploy/ must render a ServiceAccount and a Deployment; got %d objects", len(objs))
	}

	// The Deployment: valid for the apiserver, fine for the restricted Pod
	// Security profile its namespace enforces, runs `kdrift controller` as
	// the ServiceAccount, with the Git token env the engine reads and the
	// clone cache on an emptyDir.
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dep.Object, &d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Spec.ServiceAccountName != sa.GetName() || d.Namespace != sa.GetNamespace() {
		t.Fatalf("Deployment %s/%s runs as ServiceAccount %q; want %s/%s", d.Namespace, d.Name, d.Spec.Template.Spec.ServiceAccountName, sa.GetNamespace(), sa.GetName())
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	checkContainer(t, ctr, d.Spec.Template.Spec.Volumes)
	checkProbes(t, ctr)
	if warnings := admin.dryRunCreate(t, dep); len(warnings) > 0 {
		t.Fatalf("the Deployment draws warnings (Pod Security restricted?): %q", warnings)
	}
	// The check above means something: the same Deployment without its
	// security context draws the restricted profile's warning.
	loose := dep.DeepCopy()
	unstructured.RemoveNestedField(loose.Object, "spec", "template", "spec", "securityContext")
	cs0, _, _ := unstructured.NestedSlice(loose.Object, "spec", "template", "spec", "containers")
	delete(cs0[0].(map[string]any), "securityContext")
	if err := unstructured.SetNestedSlice(loose.Object, cs0, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if warnings := admin.dryRunCreate(t, loose); !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "restricted") }) {
		t.Fatalf("without its securityContext the Deployment should violate the restricted profile; warnings: %q", warnings)
	}

	// A kubeconfig with the ServiceAccount's token and nothing else.
	kubeconfig, saConfig := serviceAccountKubeconfig(t, sa.GetNamespace(), sa.GetName())
	saCS, err := kubernetes.NewForConfig(saConfig)
	if err != nil {
		t.Fatal(err)
	}
	who, err := saCS.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + sa.GetNamespace() + ":" + sa.GetName(); who.Status.UserInfo.Username != want {
		t.Fatalf("the kubeconfig authenticates as %q, want %q", who.Status.UserInfo.Username, want)
	}

	// Namespaced mode: the namespace exists; `kdrift rbac` binds the write
	// role there, from the repository's settings.
	repo := gitRepo(t, deployAppFiles)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deploy-shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, rbacOut, rbacErr := kdrift(t, ctx, "rbac", "--repo", repo)
	if code != exitOK || strings.Count(rbacOut, "kind: RoleBinding") != 1 || !strings.Contains(rbacOut, "namespace: deploy-shop") || !strings.Contains(rbacOut, "spec.namespaces of .kdrift/settings.yaml") {
		t.Fatalf("kdrift rbac: %d\n%s\n%s", code, rbacOut, rbacErr)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rbacOut), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("kdrift rbac's output: %v\n%s", err, rbacOut)
		}
		if len(o.Object) > 0 {
			admin.apply(t, o)
		}
	}

	// Run 1: creates the objects, then heals a person's scale.

	args := controllerArgs(t, ctr.Args, "file://"+repo, kubeconfig)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}
	c := startController(t, bin, args, env)
	eventually(t, c, "the App's Deployment, Service and ConfigMaps created by kdrift in its namespace", 60*time.Second, func() bool {
		ns, err1 := cs.CoreV1().Namespaces().Get(ctx, "deploy-shop", metav1.GetOptions{})
		_, err2 := cs.AppsV1().Deployments("deploy-shop").Get(ctx, "web", metav1.GetOptions{})
		_, err3 := cs.CoreV1().Services("deploy-shop").Get(ctx, "web", metav1.GetOptions{})
		_, err4 := cs.CoreV1().ConfigMaps("deploy-shop").Get(ctx, "web-config", metav1.GetOptions{})
		_, err5 := cs.CoreV1().ConfigMaps("deploy-shop").Get(ctx, "web-flags", metav1.GetOptions{})
		return err1 == nil && err2 == nil && err3 == nil && err4 == nil && err5 == nil && ns != nil
	})
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "deploy-shop"}, Spec: autoscalingv1.ScaleSpec{Replicas: 7}}
	if _, err := cs.AppsV1().Deployments("deploy-shop").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, c, "kdrift to detect the scale to 7 and heal it back to 2", 60*time.Second, func() bool {
		live, err := cs.AppsV1().Deployments("deploy-shop").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && *live.Spec.Replicas == 2 &&
			c.hasEvent("DriftDetected", "Deployment", "web") && c.hasEvent("Healed", "Deployment", "web")
	})
	// The heal is an Event on the Deployment, written with the
	// ServiceAccount's permissions; the probes answer on the metrics
	// address.
	eventually(t, c, "a Healed Event on Deployment deploy-shop/web", 30*time.Second, func() bool {
		evs, err := cs.EventsV1().Events("deploy-shop").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Reason == "Healed" && e.Regarding.Kind == "Deployment" && e.Regarding.Name == "web" && e.ReportingController == "kdrift.dev/controller"
		})
	})
	// The controller took the Lease and published the App's status, with
	// the ServiceAccount's permissions.
	eventually(t, c, "the AppStatus of shop published in "+sa.GetNamespace(), 30*time.Second, func() bool {
		list, err := enginetest.Dynamic(t).Resource(publish.GVR).Namespace(sa.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(list.Items, func(o unstructured.Unstructured) bool {
			name, _, _ := unstructured.NestedString(o.Object, "status", "name")
			return name == "shop"
		})
	})
	eventually(t, c, "/readyz and /healthz to answer 200", 30*time.Second, func() bool {
		addr := c.metricsAddr()
		return addr != "" && httpStatus("http://"+addr+"/readyz") == 200 && httpStatus("http://"+addr+"/healthz") == 200
	})
	c.stop(t)

	// Run 2: the App's ConfigMaps left Git while kdrift was stopped (a
	// restarted Pod), the whole kind with them; kdrift finds them with the
	// ServiceAccount's permissions (kinds it may not list are passed over)
	// and prunes them.
	git(t, repo, "rm", "-q", "deploy/config.yaml")
	git(t, repo, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-qm", "drop the ConfigMaps")
	c2 := startController(t, bin, args, env)
	eventually(t, c2, "kdrift to prune the ConfigMaps that left Git", 60*time.Second, func() bool {
		for _, name := range []string{"web-config", "web-flags"} {
			cm, err := cs.CoreV1().ConfigMaps("deploy-shop").Get(ctx, name, metav1.GetOptions{})
			// Prune deletes in the foreground; with no garbage collector in
			// this control plane the object keeps its finalizer, deleted.
			gone := apierrors.IsNotFound(err) || (err == nil && cm.DeletionTimestamp != nil)
			if !gone || !c2.hasEvent("Pruned", "ConfigMap", name) {
				return false
			}
		}
		return true
	})
	c2.stop(t)
	for _, run := range []*controller{c, c2} {
		run.noErrors(t)
	}

	// Least privilege: what the ServiceAccount must not be able to do.
	if _, err := saCS.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets in kube-system as the ServiceAccount: err = %v, want forbidden", err)
	}
	if _, err := saCS.CoreV1().Secrets(sa.GetNamespace()).Get(ctx, "kdrift-git", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading a Secret in its own namespace as the ServiceAccount: err = %v, want forbidden", err)
	}
	for _, a := range []access{
		{verb: "list", resource: "secrets"},
		{verb: "get", resource: "secrets", ns: "deploy-shop"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
		{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "update", group: "apps", resource: "deployments", ns: "deploy-shop"},
		{verb: "delete", resource: "namespaces"},
		{verb: "create", resource: "pods", sub: "exec", ns: "deploy-shop"},
		{verb: "list", resource: "pods"},
		{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
		{verb: "patch", resource: "nodes"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", ns: "kube-system"},
		{verb: "delete", group: "coordination.k8s.io", resource: "leases", ns: sa.GetNamespace()},
		{verb: "patch", group: "kdrift.dev", resource: "appstatuses", ns: "deploy-shop"},
		{verb: "create", resource: "namespaces"},
		{verb: "patch", group: "apps", resource: "deployments", ns: "kube-system"},
		{verb: "create", resource: "serviceaccounts", ns: "default"},
	} {
		if canI(t, saCS, a) {
			t.Errorf("the ServiceAccount may %s; it must not", a)
		}
	}
	for _, a := range []access{
		{verb: "watch", resource: "configmaps"},
		{verb: "patch", group: "apps", resource: "deployments", ns: "deploy-shop"},
		{verb: "delete", resource: "configmaps", ns: "deploy-shop"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", ns: sa.GetNamespace()},
		{verb: "patch", group: "kdrift.dev", resource: "appstatuses", ns: sa.GetNamespace()},
		{verb: "watch", group: "kdrift.dev", resource: "appstatuses", ns: sa.GetNamespace()},
	} {
		if !canI(t, saCS, a) {
			t.Errorf("the ServiceAccount may not %s; kdrift needs it", a)
		}
	}

	// The components: crds grants CRDs; cluster-wide binds the write role
	// in every namespace, Namespaces included.
	variant := kustomizeBuild(t, kustomization(t, filepath.Join(root, "deploy"), "components/crds", "components/cluster-wide"), true)
	if !slices.ContainsFunc(variant, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ClusterRoleBinding" && o.GetName() == applyRole
	}) {
		t.Fatalf("components/cluster-wide does not bind %s cluster-wide", applyRole)
	}
	for _, o := range variant {
		if o.GetKind() != "Deployment" {
			admin.apply(t, o)
		}
	}
	for _, a := range []struct {
		access
		want bool
	}{
		{access{verb: "patch", group: "apps", resource: "deployments", ns: "apps"}, true},
		{access{verb: "delete", resource: "configmaps", ns: "apps"}, true},
		{access{verb: "create", resource: "namespaces"}, true},
		{access{verb: "delete", resource: "namespaces"}, false},
		{access{verb: "list", group: "apps", resource: "deployments"}, true},
		{access{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"}, true},
		{access{verb: "delete", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"}, false},
	} {
		eventually(t, nil, "RBAC of the components: "+a.String(), 10*time.Second, func() bool { return canI(t, saCS, a.access) == a.want })
	}
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, applyRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkContainer checks what the engine needs from the container: the
// controller subcommand, the Git token and user from a Secret under the
// names engine/source reads, the clone cache and HOME on writable volumes, and a
// locked-down security context.
func checkContainer(t *testing.T, ctr corev1.Container, vols []corev1.Volume) {
	t.Helper()
	if len(ctr.Args) == 0 || ctr.Args[0] != "controller" || !slices.Contains(ctr.Args, "--repo") {
		t.Fatalf("container args %q: want `controller --repo URL ...`", ctr.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		env[e.Name] = e
	}
	for _, name := range []string{source.EnvToken, source.EnvUsername} {
		if e := env[name]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Fatalf("container env lacks %s from a Secret", name)
		}
	}
	emptyDirs := map[string]bool{}
	for _, v := range vols {
		emptyDirs[v.Name] = v.EmptyDir != nil
	}
	for _, name := range []string{"XDG_CACHE_HOME", "HOME"} {
		dir := env[name].Value
		if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir && emptyDirs[m.Name] }) {
			t.Fatalf("%s=%q is not an emptyDir mount; the root file system is read-only", name, dir)
		}
	}
	sc := ctr.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Fatalf("container securityContext %+v: want a read-only root, no privilege escalation, ALL capabilities dropped", sc)
	}
	if ctr.Resources.Requests.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		t.Fatalf("container resources %+v: want memory requests and limits", ctr.Resources)
	}
}

// checkProbes checks that the container serves metrics on a named port
// and that its liveness and readiness probes use /healthz and /readyz on
// it.
func checkProbes(t *testing.T, ctr corev1.Container) {
	t.Helper()
	i := slices.Index(ctr.Args, "--metrics-addr")
	if i < 0 || i+1 >= len(ctr.Args) {
		t.Fatalf("container args %q: want --metrics-addr", ctr.Args)
	}
	// A port alone binds to loopback, which neither the kubelet's probes
	// nor Prometheus reach: the Deployment names every interface.
	if !strings.HasPrefix(ctr.Args[i+1], "0.0.0.0:") {
		t.Fatalf("container args %q: --metrics-addr must name 0.0.0.0 (a port alone binds to loopback)", ctr.Args)
	}
	if !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "metrics" && "0.0.0.0:"+strconv.Itoa(int(p.ContainerPort)) == ctr.Args[i+1]
	}) {
		t.Fatalf("container ports %+v: want a port named metrics matching --metrics-addr %s", ctr.Ports, ctr.Args[i+1])
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{ctr.LivenessProbe, "/healthz"}, {ctr.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "metrics" {
			t.Fatalf("container probe %+v: want an HTTP GET of %s on port metrics", p.probe, p.path)
		}
	}
}

// checkMetricsPolicy checks that deploy/'s NetworkPolicy selects the
// controller's Pods and lets in only the metrics port, only from
// namespaces that scrape it.
func checkMetricsPolicy(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	var np networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != "kdrift" || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Fatalf("NetworkPolicy %s: want the kdrift Pods' ingress only: %+v", np.Name, np.Spec)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.String() != "metrics" || len(np.Spec.Ingress[0].From) == 0 || np.Spec.Ingress[0].From[0].NamespaceSelector == nil {
		t.Fatalf("NetworkPolicy %s: want one rule, the metrics port from selected namespaces: %+v", np.Name, np.Spec.Ingress)
	}
}

// httpStatus is the status code of a GET of url, 0 when it fails.
func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// kustomizeBuild renders a kustomization folder as kubectl apply -k does
// (anyRoot lets it reach folders outside its own, for a test-made
// kustomization that uses deploy/).
func kustomizeBuild(t *testing.T, dir string, anyRoot bool) []*unstructured.Unstructured {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	if anyRoot {
		opts.LoadRestrictions = kustomizetypes.LoadRestrictionsNone
	}
	rm, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	raw, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(raw)), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// kustomization writes a kustomization in a temporary folder that uses
// base with the given components (paths relative to base), and returns its
// folder.
func kustomization(t *testing.T, base string, components ...string) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, base)
	if err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + rel + "\ncomponents:\n"
	for _, c := range components {
		body += "- " + filepath.Join(rel, c) + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// adminApplier applies objects as the control plane's admin.
type adminApplier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	warn   *warnings
}

type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

func newAdminApplier(t *testing.T) *adminApplier {
	t.Helper()
	cfg := enginetest.Config()
	w := &warnings{}
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &adminApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)), warn: w}
}

func (a *adminApplier) resource(t *testing.T, o *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk.Kind, o.GetName(), err)
	}
	if o.GetNamespace() != "" {
		return a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	return a.dyn.Resource(m.Resource)
}

func (a *adminApplier) apply(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if _, err := a.resource(t, o).Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
		t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// dryRunCreate validates o server-side without storing it and returns the
// apiserver's warnings.
func (a *adminApplier) dryRunCreate(t *testing.T, o *unstructured.Unstructured) []string {
	t.Helper()
	a.warn.take()
	if _, err := a.resource(t, o).Create(context.Background(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run create %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return a.warn.take()
}

// serviceAccountKubeconfig writes a kubeconfig for the control plane whose
// only credential is a token the TokenRequest API issued for the
// ServiceAccount, and returns its path and client configuration.
func serviceAccountKubeconfig(t *testing.T, ns, name string) (string, *rest.Config) {
	t.Helper()
	path := enginetest.TokenKubeconfig(t, ns, name)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken == "" || cfg.CertFile != "" || cfg.CertData != nil || cfg.Username != "" {
		t.Fatalf("the ServiceAccount's kubeconfig carries other credentials")
	}
	return path, cfg
}

// controllerArgs is the Deployment's container args with the repository
// replaced and the kubeconfig added.
func controllerArgs(t *testing.T, args []string, repo, kubeconfig string) []string {
	t.Helper()
	out := slices.Clone(args)
	i := slices.Index(out, "--repo")
	if i < 0 || i+1 >= len(out) {
		t.Fatalf("container args %q name no --repo value", args)
	}
	out[i+1] = repo
	// The Deployment's :8080 would clash with other tests on this host.
	if i := slices.Index(out, "--metrics-addr"); i >= 0 && i+1 < len(out) {
		out[i+1] = "127.0.0.1:0"
	}
	return append(out, "--kubeconfig", kubeconfig)
}

// controller is a running kdrift controller process.
type controller struct {
	cmd         *exec.Cmd
	out, errOut syncBuffer
	done        chan error
}

func startController(t *testing.T, bin string, args, env []string) *controller {
	t.Helper()
	c := &controller{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// stop sends SIGTERM and wants exit 0.
func (c *controller) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("kdrift controller on SIGTERM: %v\nstderr: %s", err, c.errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("kdrift controller did not stop within 30s of SIGTERM\n%s", c.errOut.String())
	}
}

// events parses the JSON lines written so far.
func (c *controller) events(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(c.out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// hasEvent says whether an event of type typ names an object of kind and
// name (in "ref", or in "resource.ref" for DriftDetected).
func (c *controller) hasEvent(typ, kind, name string) bool {
	sc := bufio.NewScanner(strings.NewReader(c.out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Type     string `json:"type"`
			Ref      objRef `json:"ref"`
			Resource struct {
				Ref objRef `json:"ref"`
			} `json:"resource"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != typ {
			continue
		}
		if r := ev.Ref; r.Kind == kind && r.Name == name {
			return true
		}
		if r := ev.Resource.Ref; r.Kind == kind && r.Name == name {
			return true
		}
	}
	return false
}

type objRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// noErrors fails on any Error event, any mention of "forbidden" and any
// standard error output.
func (c *controller) noErrors(t *testing.T) {
	t.Helper()
	for _, ev := range c.events(t) {
		if ev["type"] == "Error" {
			t.Errorf("Error event: %v", ev)
		}
	}
	if all := c.out.String() + c.errOut.String(); strings.Contains(strings.ToLower(all), "forbidden") {
		t.Errorf("kdrift met a forbidden request:\n%s", all)
	}
	// stderr is the structured log: info lines are fine, a warning or an
	// error is not, and neither is anything that is not a JSON log line.
	for _, line := range strings.Split(strings.TrimSpace(c.errOut.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Level string `json:"level"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || (rec.Level != "INFO" && rec.Level != "DEBUG") {
			t.Errorf("kdrift logged more than information on stderr: %s", line)
		}
	}
}

// metricsAddr is the address the controller serves /metrics on, from its
// "serving metrics and probes" log line; "" until it is logged.
func (c *controller) metricsAddr() string {
	for _, line := range strings.Split(c.errOut.String(), "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving metrics and probes" {
			return rec.Addr
		}
	}
	return ""
}

// eventually polls cond until it holds or timeout passes; on timeout it
// fails with what c (if any) wrote.
func eventually(t *testing.T, c *controller, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			if c != nil {
				t.Fatalf("timed out after %s waiting for %s\nstdout:\n%s\nstderr:\n%s", timeout, what, c.out.String(), c.errOut.String())
			}
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// access is one request a SelfSubjectAccessReview asks about.
type access struct{ verb, group, resource, sub, ns string }

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.group != "" {
		s += "." + a.group
	}
	if a.sub != "" {
		s += "/" + a.sub
	}
	if a.ns != "" {
		return s + " in " + a.ns
	}
	return s + " cluster-wide"
}

// canI asks the apiserver whether the client's user may do a.
func canI(t *testing.T, cs kubernetes.Interface, a access) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Namespace: a.ns,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("access review %s: %v", a, err)
	}
	return r.Status.Allowed
}
