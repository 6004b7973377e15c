package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// apiserverRequestsOf reads, from the apiserver's own metrics, how many
// requests of the verbs it has answered for each resource.
func apiserverRequestsOf(t *testing.T, verbs ...string) map[string]float64 {
	t.Helper()
	raw, err := enginetest.Clientset(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !slices.ContainsFunc(verbs, func(v string) bool { return strings.Contains(line, `verb="`+v+`"`) }) {
			continue
		}
		_, rest, ok := strings.Cut(line, `resource="`)
		if !ok {
			continue
		}
		resource, _, _ := strings.Cut(rest, `"`)
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			out[resource] += v
		}
	}
	return out
}

// listsDuring counts the LIST requests per resource that run sends.
func listsDuring(t *testing.T, run func()) map[string]float64 {
	return requestsDuring(t, run, "LIST")
}

// requestsDuring counts the requests of the verbs per resource that run
// sends.
func requestsDuring(t *testing.T, run func(), verbs ...string) map[string]float64 {
	t.Helper()
	before := apiserverRequestsOf(t, verbs...)
	run()
	after := apiserverRequestsOf(t, verbs...)
	for r, n := range before {
		after[r] -= n
	}
	return after
}

// TestFleetCommandsListEachKindOnce: status and owners of 12 Apps in 4
// namespaces (a Deployment and 3 ConfigMaps each, synced) send one List
// per kind, not one per App and per namespace, and a running engine
// watches each kind once, not once per namespace; the answers stay right:
// a scaled Deployment is drift, a deleted ConfigMap is Missing (found by
// its namespace's List, the one List more).
func TestFleetCommandsListEachKindOnce(t *testing.T) {
	ctx := context.Background()
	const spaces, perSpace = 4, 3
	files := map[string]string{}
	var apps []string
	for s := 0; s < spaces; s++ {
		ns := fmt.Sprintf("fleet-lists-%d", s)
		if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for a := 0; a < perSpace; a++ {
			name := fmt.Sprintf("%s-app-%d", ns, a)
			apps = append(apps, name)
			files[".kdrift/"+name+".yaml"] = fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: apps/%s\n  destination:\n    namespace: %s\n", name, name, ns)
			files["apps/"+name+"/web.yaml"] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %[1]s\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: %[1]s}\n  template:\n    metadata:\n      labels: {app: %[1]s}\n    spec:\n      containers:\n      - name: main\n        image: registry.example/web:1.0\n", name)
			for c := 0; c < 3; c++ {
				files[fmt.Sprintf("apps/%s/cm-%d.yaml", name, c)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  k: v\n", name, c)
			}
		}
	}
	repo := gitRepo(t, files)
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	for _, a := range apps {
		if code, out, errOut := kdrift(t, ctx, append([]string{"sync", a}, g...)...); code != exitOK {
			t.Fatalf("sync %s: code %d\n%s\n%s", a, code, out, errOut)
		}
	}
	drifted := apps[4]
	ns := "fleet-lists-1"
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: drifted, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := enginetest.Clientset(t).AppsV1().Deployments(ns).UpdateScale(ctx, drifted, s, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}

	statusOf := func() map[string]string {
		t.Helper()
		code, out, errOut := kdrift(t, ctx, append([]string{"status", "--live", "-o", "json"}, g...)...)
		var doc struct {
			Apps []struct {
				Name string `json:"name"`
				Sync string `json:"sync"`
			} `json:"apps"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
			t.Fatalf("status: code %d err %v\n%s\n%s", code, err, out, errOut)
		}
		got := map[string]string{}
		for _, a := range doc.Apps {
			got[a.Name] = a.Sync
		}
		return got
	}
	var got map[string]string
	lists := listsDuring(t, func() { got = statusOf() })
	for _, a := range apps {
		want := "Synced"
		if a == drifted {
			want = "OutOfSync"
		}
		if got[a] != want {
			t.Errorf("status of %s: %q, want %q (all: %v)", a, got[a], want, got)
		}
	}
	for _, r := range []string{"configmaps", "deployments"} {
		if lists[r] != 1 {
			t.Errorf("status of %d Apps in %d namespaces sent %v LISTs of %s, want 1", len(apps), spaces, lists[r], r)
		}
	}

	lists = listsDuring(t, func() {
		if code, out, errOut := kdrift(t, ctx, append([]string{"owners"}, g...)...); code != exitOK || !strings.Contains(out, "kubectl") {
			t.Fatalf("owners: code %d\n%s\n%s", code, out, errOut)
		}
	})
	for _, r := range []string{"configmaps", "deployments"} {
		if lists[r] != 1 {
			t.Errorf("owners of %d Apps in %d namespaces sent %v LISTs of %s, want 1", len(apps), spaces, lists[r], r)
		}
	}

	// A running engine (the TUI's own, the controller's) watches each
	// kind once: its tracked objects in every namespace.
	watches := requestsDuring(t, func() { runUntilCompared(t, repo, apps) }, "LIST", "WATCH")
	for _, r := range []string{"configmaps", "deployments"} {
		if watches[r] > 2 {
			t.Errorf("a running engine over %d Apps in %d namespaces sent %v LISTs and WATCHes of %s, want one of each at most", len(apps), spaces, watches[r], r)
		}
	}

	// An object not in the tracked List costs its namespace's List, and
	// is still found Missing.
	gone := apps[7]
	if err := enginetest.Clientset(t).CoreV1().ConfigMaps("fleet-lists-2").Delete(ctx, gone+"-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lists = listsDuring(t, func() { got = statusOf() })
	if got[gone] != "OutOfSync" || got[apps[6]] != "Synced" {
		t.Errorf("after deleting a ConfigMap of %s: %v", gone, got)
	}
	if lists["configmaps"] != 2 || lists["deployments"] != 1 {
		t.Errorf("with one ConfigMap missing: %v LISTs of configmaps (want 2: the kind's and its namespace's), %v of deployments (want 1)", lists["configmaps"], lists["deployments"])
	}
}

// runUntilCompared runs a read-only engine on repo until every App has
// compared (Synced or OutOfSync), then stops it.
func runUntilCompared(t *testing.T, repo string, apps []string) {
	t.Helper()
	e, err := engine.New(engine.Options{Repo: repo, Kubeconfig: enginetest.Kubeconfig(), CacheDir: t.TempDir(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		n := 0
		for _, a := range e.Apps() {
			if a.Sync == status.SyncSynced || a.Sync == status.SyncOutOfSync {
				n++
			}
		}
		if n == len(apps) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Apps compared after 2 minutes: %+v", n, len(apps), e.Apps())
		}
	}
}
