package render_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/render"
)

// chartArchive is a gzip'd chart named name holding a file of n zero
// bytes: a few tens of kilobytes committed.
func chartArchive(t *testing.T, name string, n int) string {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	add := func(file string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + file, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add("Chart.yaml", []byte("apiVersion: v2\nname: "+name+"\nversion: 0.1.0\n"))
	add("files/zeros.bin", make([]byte, n))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// residentMiB is this process's resident memory.
func residentMiB(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(data))[1], 10, 64)
	return pages * int64(os.Getpagesize()) >> 20
}

// TestChartArchiveBomb: three small vendored archives, each within Helm's
// own allowance of 100 MiB unpacked but together past the render budget,
// fail the App with the budget before Helm unpacks them, and the process
// stays small; a chart beside them renders.
func TestChartArchiveBomb(t *testing.T) {
	files := map[string]string{
		"deploy/bomb/Chart.yaml":      "apiVersion: v2\nname: bomb\nversion: 0.1.0\ndependencies:\n- {name: a, version: 0.1.0}\n- {name: b, version: 0.1.0}\n- {name: c, version: 0.1.0}\n",
		"deploy/ok/Chart.yaml":        "apiVersion: v2\nname: ok\nversion: 0.1.0\n",
		"deploy/ok/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n",
	}
	var committed int
	for _, n := range []string{"a", "b", "c"} {
		a := chartArchive(t, n, 8<<20)
		committed += len(a)
		files["deploy/bomb/charts/"+n+"-0.1.0.tgz"] = a
	}
	t.Logf("the three archives come to %d bytes committed", committed)
	_, snap := repo(t, files)
	s := snap()
	runtime.GC()
	before := residentMiB(t)
	r := render.NewRenderer()
	r.Options.MaxRenderBytes = 16 << 20
	_, err := r.Render(s, "deploy/bomb")
	after := residentMiB(t)
	var le *render.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "render budget") {
		t.Fatalf("bomb: err = %v, want the render budget", err)
	}
	t.Logf("bomb: %v; resident %d MiB -> %d MiB", err, before, after)
	if after-before > 40 {
		t.Errorf("resident memory grew by %d MiB, from %d MiB", after-before, before)
	}
	if objs, err := r.Render(s, "deploy/ok"); err != nil || ids(objs) != "ConfigMap/ok" {
		t.Fatalf("ok = %s, %v", ids(objs), err)
	}
	// Within the budget, the same archives load.
	r.Options.MaxRenderBytes = 64 << 20
	if _, err := r.Render(s, "deploy/bomb"); err != nil && strings.Contains(err.Error(), "render budget") {
		t.Fatalf("bomb within a larger budget: %v", err)
	}
}
