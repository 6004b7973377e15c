package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
	"kdrift.dev/kdrift/internal/hostile"
)

// TestHostileRepositoryCLI: status and diff over a repository where one
// healthy app sits beside hostile ones: the commands finish, nothing runs,
// nothing connects, the healthy app is Synced after a sync and each
// hostile app is Error naming its cause.
func TestHostileRepositoryCLI(t *testing.T) {
	ctx := context.Background()
	ns := "hostile-cli"
	if _, err := enginetest.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := func(name string) string {
		return fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: deploy/%s\n  destination:\n    namespace: %s\n", name, name, ns)
	}
	tr := hostile.NewTrap(t)
	files := map[string]string{
		".kdrift/calm.yaml":   app("calm"),
		"deploy/calm/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: calm}\ndata: {a: \"1\"}\n",
	}
	cases := hostile.Cases(tr)
	for _, c := range cases {
		files[".kdrift/"+c.Name+".yaml"] = app(c.Name)
		for f, body := range c.Files {
			files[f] = body
		}
	}
	g := []string{"--repo", gitRepo(t, files), "--kubeconfig", enginetest.Kubeconfig()}

	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", "calm"}, g...)...); code != exitOK {
		t.Fatalf("sync calm: code %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := kdrift(t, ctx, append([]string{"status", "-o", "json"}, g...)...)
	var doc struct {
		Apps []struct {
			Name  string `json:"name"`
			Sync  string `json:"sync"`
			Error string `json:"error"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status -o json: code %d err %v\n%s\n%s", code, err, out, errOut)
	}
	got := map[string]string{}
	for _, a := range doc.Apps {
		got[a.Name] = a.Sync + " " + a.Error
	}
	if !strings.HasPrefix(got["calm"], "Synced") {
		t.Errorf("calm = %q, want Synced", got["calm"])
	}
	for _, c := range cases {
		if !strings.HasPrefix(got[c.Name], "Error") || !strings.Contains(got[c.Name], c.Want) {
			t.Errorf("%s = %q, want Error containing %q", c.Name, got[c.Name], c.Want)
		}
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"status"}, g...)...); !strings.Contains(out, "calm") || code == exitError && errOut == "" {
		t.Fatalf("status: code %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"diff", "calm"}, g...)...); code != exitOK {
		t.Fatalf("diff calm: code %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = kdrift(t, ctx, append([]string{"diff", "upload-pack"}, g...)...)
	if code == exitOK || !strings.Contains(out+errOut, "vendor the base into the repository") {
		t.Fatalf("diff upload-pack: code %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker %s exists (or cannot be checked: %v): the repository ran a command", tr.Marker, err)
	}
	if n := tr.Accepts(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
}

// TestTokenNeverPrintedCLI: a --repo URL with a token, whose server fails,
// never prints the token, in text or JSON.
func TestTokenNeverPrintedCLI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	const token = "s3cr3t-t0ken-value"
	repo := strings.Replace(srv.URL, "http://", "http://kdrift:"+token+"@", 1) + "/org/repo.git"
	for _, args := range [][]string{{"status"}, {"status", "-o", "json"}, {"diff", "x"}} {
		args = append(args, "--repo", repo, "--branch", "main", "--kubeconfig", enginetest.Kubeconfig())
		code, out, errOut := kdrift(t, context.Background(), args...)
		if strings.Contains(out+errOut, token) || code == exitOK {
			t.Fatalf("%v: code %d, output shows the token or succeeded:\n%s\n%s", args[:len(args)-6], code, out, errOut)
		}
	}
}
