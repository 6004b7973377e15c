package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// WorkerArg is the first argument that makes a kdrift binary a render
// worker. ServeIfWorker checks for it from the init function of the
// package that registers the handlers (engine/render), so that every
// binary that renders (kdrift, and each test binary of a package that
// renders) is a worker too, before any flag is parsed and without a
// subcommand of its own: a worker never reaches kdrift's command line.
const WorkerArg = "__kdrift-render-worker"

// workerGOGC is the worker's whole environment at start: no collection
// until it serves (see startWorker).
const workerGOGC = "GOGC=off"

// netnsArg follows WorkerArg when the parent started the worker in a
// network namespace of its own.
const netnsArg = "netns"

// ServeIfWorker makes this process a render worker, and never returns,
// when it was started as one (os.Args[1] is WorkerArg); otherwise it
// returns at once. Call it from an init function after the last
// Register: a package's init runs after those of the packages it
// imports, so this package cannot call it from its own.
func ServeIfWorker() {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(workerMain(os.Args[2:]))
	}
}

// workerMain confines the process, says hello with what is in force, and
// serves requests on stdin/stdout until stdin ends.
func workerMain(args []string) int {
	// The parent started the worker with workerGOGC alone (startWorker):
	// a render sees an empty environment.
	_ = os.Unsetenv("GOGC")
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	netns := len(args) > 0 && args[0] == netnsArg
	rep, err := confine(netns)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
		return 3
	}
	if err := writeFrame(out, up{Hello: &rep}); err != nil {
		return 3
	}
	warmUp()
	debug.SetGCPercent(100)
	p := &proxy{in: in, out: out}
	for {
		var d down
		if err := readFrame(in, maxCallFrame, &d); err != nil || d.Request == nil {
			return 0 // the parent closed the pipe, or broke the protocol
		}
		res := p.serve(d.Request)
		if err := writeFrame(out, up{Result: res}); err != nil {
			return 3
		}
	}
}

// serve runs one request; a panic is its result.
func (p *proxy) serve(req *request) (res *result) {
	defer func() {
		if v := recover(); v != nil {
			res = &result{Panic: fmt.Sprint(v), Stack: debug.Stack()}
		}
	}()
	var h Handler
	if req.Kind != "" {
		if h = handlers[req.Kind]; h == nil {
			return &result{Err: fmt.Sprintf("this render worker has no renderer %q", req.Kind)}
		}
	}
	if req.MaxMemory > 0 {
		// The parent kills past MaxMemory of resident memory; collecting
		// harder as the heap nears it keeps a legitimate build under it.
		debug.SetMemoryLimit(req.MaxMemory * 3 / 4)
		setMemoryLimit(req.MaxMemory)
	}
	if req.Hook != "" && testing.Testing() {
		if err := runHook(req.Hook); err != nil {
			return &result{Err: err.Error()}
		}
	}
	var objs []json.RawMessage
	var err error
	if h != nil {
		objs, err = h(p, req.Payload, req.MaxOutput)
	} else {
		objs, err = Build(p, req.Dir, req.MaxOutput)
	}
	if err != nil {
		var le *LimitError
		var ce *CodedError
		switch {
		case errors.As(err, &le):
			return &result{Limit: le.Limit, Err: le.Detail}
		case errors.As(err, &ce):
			return &result{Code: ce.Code, Data: ce.Data, Err: ce.Msg}
		}
		return &result{Err: err.Error()}
	}
	return &result{Objects: objs}
}

// runHook misbehaves on purpose, in a test binary's worker only: it is how
// tests prove that the confinement holds whatever kustomize would do.
func runHook(hook string) error {
	kind, arg, _ := strings.Cut(hook, ":")
	switch kind {
	case "block":
		select {}
	case "exec":
		cmd := exec.Command(arg)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), io.Discard, io.Discard
		return cmd.Run()
	case "connect":
		c, err := net.Dial("tcp", arg)
		if err == nil {
			_ = c.Close()
		}
		return err
	case "read":
		_, err := os.ReadFile(arg)
		return err
	case "write":
		return os.WriteFile(filepath.Join(os.TempDir(), arg), []byte("x"), 0o600)
	case "alloc":
		var n int
		if _, err := fmt.Sscan(arg, &n); err != nil {
			return err
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = 1
		}
		hold = append(hold, b)
		return nil
	case "env":
		return fmt.Errorf("environment: %q", os.Environ())
	}
	return fmt.Errorf("unknown test hook %q", hook)
}

// hold keeps the alloc hook's memory reachable.
var hold [][]byte

// errReadOnly is returned by every writing method of the proxy.
var errReadOnly = errors.New("a Git snapshot is read-only")

// proxy is the worker's filesys.FileSystem: every call is asked of the
// parent, one at a time.
type proxy struct {
	mu  sync.Mutex
	in  *bufio.Reader
	out *bufio.Writer
}

var _ filesys.FileSystem = (*proxy)(nil)

// ask sends a call and returns the parent's reply; a broken pipe ends the
// worker, since the parent has given up on it.
func (p *proxy) ask(op, path string) *reply {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := writeFrame(p.out, up{Call: &call{Op: op, Path: path}}); err != nil {
		os.Exit(3)
	}
	var d down
	if err := readFrame(p.in, 1<<40, &d); err != nil || d.Reply == nil {
		os.Exit(3)
	}
	return d.Reply
}

func (p *proxy) Create(path string) (filesys.File, error) {
	return nil, &fs.PathError{Op: "create", Path: path, Err: errReadOnly}
}
func (p *proxy) Mkdir(path string) error {
	return &fs.PathError{Op: "mkdir", Path: path, Err: errReadOnly}
}
func (p *proxy) MkdirAll(path string) error {
	return &fs.PathError{Op: "mkdir", Path: path, Err: errReadOnly}
}
func (p *proxy) RemoveAll(path string) error {
	return &fs.PathError{Op: "remove", Path: path, Err: errReadOnly}
}
func (p *proxy) WriteFile(path string, _ []byte) error {
	return &fs.PathError{Op: "write", Path: path, Err: errReadOnly}
}

func (p *proxy) Open(path string) (filesys.File, error) {
	r := p.ask("open", path)
	if err := errOf(r.Err, r.NotExist); err != nil {
		return nil, err
	}
	return &roFile{Reader: bytes.NewReader(r.Data), info: r.Info}, nil
}

func (p *proxy) IsDir(path string) bool  { return p.ask("isdir", path).Bool }
func (p *proxy) Exists(path string) bool { return p.ask("exists", path).Bool }

func (p *proxy) ReadDir(path string) ([]string, error) {
	r := p.ask("readdir", path)
	return r.Names, errOf(r.Err, r.NotExist)
}

func (p *proxy) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	r := p.ask("cleanedabs", path)
	return filesys.ConfirmedDir(r.Dir), r.File, errOf(r.Err, r.NotExist)
}

func (p *proxy) Glob(pattern string) ([]string, error) {
	r := p.ask("glob", pattern)
	return r.Names, errOf(r.Err, r.NotExist)
}

func (p *proxy) ReadFile(path string) ([]byte, error) {
	r := p.ask("readfile", path)
	return r.Data, errOf(r.Err, r.NotExist)
}

// Walk replays the parent's walk of path; a folder the function skips is
// skipped with everything under it.
func (p *proxy) Walk(path string, walkFn filepath.WalkFunc) error {
	r := p.ask("walk", path)
	if err := errOf(r.Err, r.NotExist); err != nil {
		return walkFn(path, nil, err)
	}
	skip := ""
	for _, e := range r.Walk {
		if skip != "" && (e.Path == skip || strings.HasPrefix(e.Path, strings.TrimSuffix(skip, "/")+"/")) {
			continue
		}
		var fi fs.FileInfo
		if e.Info != nil {
			fi = e.Info
		}
		err := walkFn(e.Path, fi, errOf(e.Err, e.NotExist))
		switch {
		case errors.Is(err, filepath.SkipDir) && fi != nil && fi.IsDir():
			skip = e.Path
		case errors.Is(err, filepath.SkipDir), errors.Is(err, filepath.SkipAll):
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}

// roFile is a file the parent sent.
type roFile struct {
	*bytes.Reader
	info *info
}

func (f *roFile) Write([]byte) (int, error) { return 0, errReadOnly }
func (f *roFile) Close() error              { return nil }
func (f *roFile) Stat() (os.FileInfo, error) {
	if f.info == nil {
		return nil, errors.New("no file information")
	}
	return f.info, nil
}
