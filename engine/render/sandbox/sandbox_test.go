package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestMain makes this test binary a render worker when it is started as
// one (the tests start workers running it).
func TestMain(m *testing.M) {
	Register("echo", echoHandler)
	ServeIfWorker()
	os.Exit(m.Run())
}

// memFS is a repository of one kustomization and one ConfigMap.
func memFS(t *testing.T) filesys.FileSystem {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for name, doc := range map[string]string{
		"/app/kustomization.yaml": "namespace: ns\nresources:\n- cm.yaml\n",
		"/app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  n: \"1\"\n",
	} {
		if err := fs.WriteFile(name, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

var lim = Limits{MaxOutputBytes: 1 << 20, MaxMemoryBytes: 256 << 20}

func TestWorkerBuilds(t *testing.T) {
	p := NewPool("", 2)
	objs, err := p.Build(context.Background(), memFS(t), "/app", lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || !strings.Contains(string(objs[0]), `"namespace":"ns"`) {
		t.Fatalf("objects = %s", objs)
	}
	// A kustomize error comes back in kustomize's words, and the worker
	// is reused.
	_, err = p.Build(context.Background(), memFS(t), "/missing", lim)
	if err == nil || errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing folder: err = %v", err)
	}
	if _, err := p.Build(context.Background(), memFS(t), "/app", lim); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerCannotExec: a program on the disk, started by absolute path
// from inside the worker, never runs.
func TestWorkerCannotExec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the exec filter is Linux's seccomp")
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	script := filepath.Join(t.TempDir(), "touch.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The script works outside the worker.
	if err := exec.Command(script).Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	_, err := NewPool("", 1).Build(context.Background(), memFS(t), "/app", lim.TestHook("exec:"+script))
	if err == nil || !strings.Contains(err.Error(), "operation not permitted") {
		t.Fatalf("exec in the worker: err = %v, want operation not permitted", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the program ran: %v", err)
	}
}

// TestWorkerCannotConnect: a loopback listener counting connections gets
// none from the worker.
func TestWorkerCannotConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	var accepts atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			_ = c.Close()
		}
	}()
	_, err = NewPool("", 1).Build(context.Background(), memFS(t), "/app", lim.TestHook("connect:"+ln.Addr().String()))
	if err == nil {
		t.Fatal("the worker connected")
	}
	if runtime.GOOS == "linux" && !strings.Contains(err.Error(), "operation not permitted") {
		t.Errorf("connect: err = %v, want operation not permitted", err)
	}
	if n := accepts.Load(); n != 0 {
		t.Fatalf("%d connections reached the listener", n)
	}
}

// TestWorkerConfined: the worker has an empty environment and reads and
// writes nothing of the disk.
func TestWorkerConfined(t *testing.T) {
	t.Setenv("KDRIFT_SECRET_FOR_TEST", "s3cret")
	p := NewPool("", 1)
	_, err := p.Build(context.Background(), memFS(t), "/app", lim.TestHook("env"))
	if err == nil || err.Error() != "environment: []" {
		t.Errorf("env: err = %v, want an empty environment", err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	rep, err := p.Report(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sandbox: %+v", rep)
	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = p.Build(context.Background(), memFS(t), "/app", lim.TestHook("read:"+secret))
	if strings.HasPrefix(rep.FS, "Landlock") && (err == nil || !strings.Contains(err.Error(), "permission denied")) {
		t.Errorf("read a file of the disk: err = %v, want permission denied", err)
	}
	_, err = p.Build(context.Background(), memFS(t), "/app", lim.TestHook("write:dropped"))
	if strings.HasPrefix(rep.FS, "Landlock") && (err == nil || !strings.Contains(err.Error(), "permission denied")) {
		t.Errorf("write to the temporary folder: err = %v, want permission denied", err)
	}
}

// TestWorkerKilledAtTimeLimit: a build that never ends is killed when its
// context ends, while another worker builds meanwhile.
func TestWorkerKilledAtTimeLimit(t *testing.T) {
	p := NewPool("", 2)
	ctx, cancel := context.WithTimeoutCause(context.Background(), 3*time.Second, &LimitError{Limit: "time", Detail: "test"})
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Build(ctx, memFS(t), "/app", lim.TestHook("block"))
		done <- err
	}()
	for range 3 {
		if _, err := p.Build(context.Background(), memFS(t), "/app", lim); err != nil {
			t.Fatalf("a build beside the blocked one: %v", err)
		}
	}
	select {
	case err := <-done:
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "time" {
			t.Fatalf("blocked build: err = %v, want the time limit", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the blocked worker was not killed")
	}
	if _, err := p.Build(context.Background(), memFS(t), "/app", lim); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
}

// TestWorkerKilledPastMemory: a worker that holds more than its budget is
// killed, and the pool goes on.
func TestWorkerKilledPastMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("resident memory is read from /proc")
	}
	p := NewPool("", 1)
	small := Limits{MaxOutputBytes: 1 << 20, MaxMemoryBytes: 64 << 20}
	_, err := p.Build(context.Background(), memFS(t), "/app", small.TestHook("alloc:400000000"))
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "memory" {
		t.Fatalf("err = %v, want the memory limit", err)
	}
	if _, err := p.Build(context.Background(), memFS(t), "/app", lim); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
}

// TestOutputBounded: objects past the output budget fail the build.
func TestOutputBounded(t *testing.T) {
	_, err := NewPool("", 1).Build(context.Background(), memFS(t), "/app", Limits{MaxOutputBytes: 10, MaxMemoryBytes: 256 << 20})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "rendered size" {
		t.Fatalf("err = %v, want the rendered size limit", err)
	}
}

// echoHandler returns the file its payload names, as a JSON string, or
// fails with a *CodedError when the payload says "coded".
func echoHandler(fsys filesys.FileSystem, payload json.RawMessage, _ int64) ([]json.RawMessage, error) {
	var name string
	if err := json.Unmarshal(payload, &name); err != nil {
		return nil, err
	}
	if name == "coded" {
		return nil, &CodedError{Code: "test", Data: json.RawMessage(`{"n":1}`), Msg: "a coded failure"}
	}
	data, err := fsys.ReadFile(name)
	if err != nil {
		return nil, err
	}
	js, _ := json.Marshal(string(data))
	return []json.RawMessage{js}, nil
}

// TestWorkerRunsRegisteredRenderer: a registered renderer runs in the
// worker, reads through the parent, and its typed error keeps its code
// and data; an unknown kind and a payload past the request bound fail
// clearly, and the worker stays usable.
func TestWorkerRunsRegisteredRenderer(t *testing.T) {
	p := NewPool("", 1)
	ctx := context.Background()
	out, err := p.Run(ctx, memFS(t), "echo", json.RawMessage(`"/app/cm.yaml"`), lim)
	if err != nil || len(out) != 1 || !strings.Contains(string(out[0]), "kind: ConfigMap") {
		t.Fatalf("echo = %s, %v", out, err)
	}
	_, err = p.Run(ctx, memFS(t), "echo", json.RawMessage(`"coded"`), lim)
	var ce *CodedError
	if !errors.As(err, &ce) || ce.Code != "test" || string(ce.Data) != `{"n":1}` || ce.Msg != "a coded failure" {
		t.Fatalf("coded = %#v", err)
	}
	if _, err := p.Run(ctx, memFS(t), "echo", json.RawMessage(`"/missing"`), lim); err == nil || errors.Is(err, ErrWorker) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := p.Run(ctx, memFS(t), "nope", json.RawMessage(`1`), lim); err == nil || !strings.Contains(err.Error(), `no renderer "nope"`) {
		t.Fatalf("unknown kind: %v", err)
	}
	big, _ := json.Marshal(strings.Repeat("x", maxCallFrame))
	var le *LimitError
	if _, err := p.Run(ctx, memFS(t), "echo", big, lim); !errors.As(err, &le) {
		t.Fatalf("oversized request: %v", err)
	}
	if _, err := p.Run(ctx, memFS(t), "echo", json.RawMessage(`"/app/cm.yaml"`), lim); err != nil {
		t.Fatalf("after the failures: %v", err)
	}
}
