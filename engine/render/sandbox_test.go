package render_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/hostile"
)

// TestWorkerHoldsWithoutGuard: with the guard switched off and a real git
// on PATH, kustomize in the render worker tries every hostile Git URL and
// remote resource, and nothing runs and nothing connects: each App is an
// Error naming its entry.
func TestWorkerHoldsWithoutGuard(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the test needs git on PATH, so that the attack could work without the sandbox: %v", err)
	}
	tr := hostile.NewTrap(t)
	files := map[string]string{"deploy/good/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/good/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n"}
	var cases []hostile.Case
	for _, c := range hostile.Cases(tr) {
		if strings.HasPrefix(c.Name, "git-") || c.Name == "upload-pack" || c.Name == "http-resource" || c.Name == "nested-remote" {
			cases = append(cases, c)
			for f, body := range c.Files {
				files[f] = body
			}
		}
	}
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	render.SetTestSandbox(r, false, false, nil)
	for _, c := range cases {
		_, err := r.Render(s, "deploy/"+c.Name)
		t.Logf("%s: %v", c.Name, err)
		var re *render.Error
		if !errors.As(err, &re) {
			t.Errorf("%s: error = %v, want a render.Error", c.Name, err)
		}
		if strings.HasPrefix(c.Name, "git-") && (err == nil || !strings.Contains(err.Error(), "accumulating resources from '"+entryOf(c)+"'")) {
			t.Errorf("%s: error = %v, want kustomize's error naming the entry", c.Name, err)
		}
	}
	if objs, err := r.Render(s, "deploy/good"); err != nil || ids(objs) != "ConfigMap/good" {
		t.Fatalf("good = %s, %v", ids(objs), err)
	}
	if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker %s exists (or cannot be checked: %v): a command ran", tr.Marker, err)
	}
	if n := tr.Accepts(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
}

// TestWorkerKilledAtRenderTimeout: a kustomize build that never ends (a
// test hook blocks in its worker) is killed at the render's time limit,
// while other kustomize Apps render meanwhile.
func TestWorkerKilledAtRenderTimeout(t *testing.T) {
	files := map[string]string{}
	for _, name := range []string{"slow", "a", "b", "c"} {
		files["deploy/"+name+"/kustomization.yaml"] = "resources: [cm.yaml]\n"
		files["deploy/"+name+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
	}
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	r.Options.Timeout = 5 * time.Second
	render.SetTestSandbox(r, true, false, func(dir string) string {
		if dir == "deploy/slow" {
			return "block"
		}
		return ""
	})
	var wg sync.WaitGroup
	var slowErr error
	wg.Go(func() { _, slowErr = r.Render(s, "deploy/slow") })
	time.Sleep(200 * time.Millisecond)
	for _, name := range []string{"a", "b", "c"} {
		if objs, err := r.Render(s, "deploy/"+name); err != nil || ids(objs) != "ConfigMap/"+name {
			t.Errorf("%s beside the blocked build = %s, %v", name, ids(objs), err)
		}
	}
	wg.Wait()
	var le *render.LimitError
	if !errors.As(slowErr, &le) || le.Limit != "time" {
		t.Fatalf("slow = %v, want the time limit", slowErr)
	}
	if objs, err := r.Render(s, "deploy/a"); err != nil || ids(objs) != "ConfigMap/a" {
		t.Fatalf("after the kill: %s, %v", ids(objs), err)
	}
}

// entryOf is the resources entry of a hostile Git URL case.
func entryOf(c hostile.Case) string {
	for name, body := range c.Files {
		if strings.Count(name, "/") == 2 && strings.HasSuffix(name, "/kustomization.yaml") {
			_, e, _ := strings.Cut(body, "- ")
			var s string
			if err := json.Unmarshal([]byte(strings.TrimSpace(e)), &s); err == nil {
				return s
			}
		}
	}
	return "(no entry)"
}
