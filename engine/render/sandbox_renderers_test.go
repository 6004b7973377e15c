package render_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/render"
	"kdrift.dev/kdrift/internal/hostile"
)

// rendererApps are a chart, a Jsonnet folder and a kustomization that
// render fine, beside the hostile Apps of a test.
func rendererApps(t *testing.T) map[string]string {
	files := chartFiles(t, "web", "good/chart")
	files["good/jsonnet/cm.jsonnet"] = `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "j"}, data: {n: std.toString(6 * 7)}}`
	files["good/kust/kustomization.yaml"] = "resources: [cm.yaml]\n"
	files["good/kust/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: k}\n"
	return files
}

// renderGood renders the Apps of rendererApps and fails the test unless
// each gives its objects.
func renderGood(t *testing.T, r *render.Renderer, s render.Tree) {
	t.Helper()
	for dir, want := range map[string]string{"good/jsonnet": "ConfigMap/j", "good/kust": "ConfigMap/k"} {
		if objs, err := r.Render(s, dir); err != nil || ids(objs) != want {
			t.Errorf("%s = %s, %v; want %s", dir, ids(objs), err, want)
		}
	}
	if objs, err := r.RenderApp(t.Context(), s, "good/chart", nil); err != nil || len(objs) == 0 {
		t.Errorf("good/chart = %s, %v", ids(objs), err)
	}
}

// TestHelmAndJsonnetRunInWorker: a chart's templates and a Jsonnet file
// are rendered in the confined render worker: a program the worker
// starts (a test hook, standing for whatever a template engine could be
// made to do) never runs, a connection it opens never arrives, and each
// such App is an Error while the others render.
func TestHelmAndJsonnetRunInWorker(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the exec and network filters are Linux's")
	}
	tr := hostile.NewTrap(t)
	script := filepath.Join(t.TempDir(), "touch.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+tr.Marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := rendererApps(t)
	for name, f := range chartFiles(t, "web", "evil/chart-exec") {
		files[name] = f
	}
	for name, f := range chartFiles(t, "web", "evil/chart-connect") {
		files[name] = f
	}
	files["evil/jsonnet-exec/a.jsonnet"] = `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x"}}`
	files["evil/jsonnet-connect/a.jsonnet"] = `{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "x"}}`
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	render.SetTestSandbox(r, true, false, func(dir string) string {
		switch {
		case strings.HasSuffix(dir, "-exec"):
			return "exec:" + script
		case strings.HasSuffix(dir, "-connect"):
			return "connect:" + tr.Addr
		}
		return ""
	})
	for _, dir := range []string{"evil/chart-exec", "evil/chart-connect", "evil/jsonnet-exec", "evil/jsonnet-connect"} {
		_, err := r.RenderApp(t.Context(), s, dir, nil)
		var re *render.Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "operation not permitted") {
			t.Errorf("%s: error = %v, want a render.Error saying operation not permitted", dir, err)
		}
		t.Logf("%s: %v", dir, err)
	}
	renderGood(t, r, s)
	if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker %s exists (or cannot be checked: %v): a command ran", tr.Marker, err)
	}
	if n := tr.Accepts(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
}

// TestJsonnetAllocationKilledAtMemory: Jsonnet programs that allocate
// without bound (a string or an array doubled thirty times, a billion
// element array) are killed at the render worker's memory budget, each
// App an Error naming it, while other Apps render meanwhile and after.
func TestJsonnetAllocationKilledAtMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent reads the worker's resident memory from /proc")
	}
	files := rendererApps(t)
	hostileApps := map[string]string{
		"evil/string": `local d(s, n) = if n == 0 then s else d(s + s, n - 1); {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "big"}, data: {big: d("xxxxxxxx", 30)}}`,
		"evil/array":  `local d(a, n) = if n == 0 then a else d(a + a, n - 1); d([{}], 30)`,
		"evil/make":   `std.length(std.makeArray(1000000000, function(i) {i: i}))`,
	}
	for dir, prog := range hostileApps {
		files[dir+"/a.jsonnet"] = prog
	}
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	r.Options.Timeout = 2 * time.Minute // the memory budget, not the time, must stop them
	r.Options.MaxMemoryBytes = 256 << 20
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for dir := range hostileApps {
		wg.Go(func() {
			start := time.Now()
			_, err := r.Render(s, dir)
			mu.Lock()
			errs[dir] = err
			mu.Unlock()
			t.Logf("%s after %s: %v", dir, time.Since(start).Round(time.Millisecond), err)
		})
	}
	renderGood(t, r, s)
	wg.Wait()
	for dir, err := range errs {
		var le *render.LimitError
		if !errors.As(err, &le) || le.Limit != "memory" || !strings.Contains(err.Error(), "resident memory") || !strings.HasPrefix(err.Error(), dir+": ") {
			t.Errorf("%s: error = %v, want the App's memory limit", dir, err)
		}
	}
	renderGood(t, r, s)
}

// TestHelmChartForeverKilledAtTime: a chart whose templates run for
// minutes without passing the loop or size budgets is killed at the
// render's time limit, while other Apps render meanwhile.
func TestHelmChartForeverKilledAtTime(t *testing.T) {
	files := rendererApps(t)
	files["evil/slow/Chart.yaml"] = "apiVersion: v2\nname: slow\nversion: 0.1.0\n"
	files["evil/slow/templates/slow.yaml"] = `{{ range until 900000 }}{{ $k := genPrivateKey "rsa" }}{{ end }}`
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	r.Options.Timeout = 5 * time.Second
	var slowErr error
	var wg sync.WaitGroup
	start := time.Now()
	var took time.Duration
	wg.Go(func() {
		_, slowErr = r.RenderApp(t.Context(), s, "evil/slow", nil)
		took = time.Since(start)
	})
	time.Sleep(300 * time.Millisecond)
	renderGood(t, r, s)
	wg.Wait()
	var le *render.LimitError
	if !errors.As(slowErr, &le) || le.Limit != "time" {
		t.Fatalf("slow chart = %v, want the time limit", slowErr)
	}
	// Killed, not waited for: well before a second RSA key of 900000.
	if took > time.Minute {
		t.Errorf("the slow chart's render returned after %s", took)
	}
	renderGood(t, r, s)
}

// TestHostileChartsInWorker: charts whose templates loop without end,
// recurse without end, or hold more memory than the worker may have
// (each value small enough for the size budgets, a million of them kept)
// are each that App's Error naming the budget, typed across the worker's
// pipe; nothing runs, nothing connects, and the other Apps render.
func TestHostileChartsInWorker(t *testing.T) {
	tr := hostile.NewTrap(t)
	files := rendererApps(t)
	cases := map[string]struct{ tpl, limit string }{
		"range":   {`{{ range 1000000000000 }}x{{ end }}`, "template loop"},
		"include": {`{{ define "loop" }}{{ include "loop" . }}{{ end }}{{ include "loop" . }}`, "template depth"},
		"hoard":   {`{{ $d := dict }}{{ range $i := until 900000 }}{{ $_ := set $d (toString $i) (repeat 1000 "x") }}{{ end }}`, "memory"},
	}
	for name, c := range cases {
		files["evil/"+name+"/Chart.yaml"] = "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n"
		files["evil/"+name+"/templates/evil.yaml"] = c.tpl
	}
	_, snap := repo(t, files)
	s := snap()
	r := render.NewRenderer()
	r.Options.Timeout = 2 * time.Minute
	for name, c := range cases {
		if runtime.GOOS != "linux" && c.limit == "memory" {
			continue // the worker's resident memory is read from /proc
		}
		_, err := r.RenderApp(t.Context(), s, "evil/"+name, nil)
		var le *render.LimitError
		if !errors.As(err, &le) || le.Limit != c.limit {
			t.Errorf("%s: error = %v, want the %s limit", name, err, c.limit)
		}
		t.Logf("%s: %v", name, err)
	}
	renderGood(t, r, s)
	if _, err := os.Stat(tr.Marker); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("marker %s exists (or cannot be checked: %v): a command ran", tr.Marker, err)
	}
	if n := tr.Accepts(); n != 0 {
		t.Fatalf("%d connections reached the loopback listener", n)
	}
}
