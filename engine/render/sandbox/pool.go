package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Defaults of a Pool.
const (
	// DefaultWorkers is how many builds run at once, each in a worker.
	DefaultWorkers = 2
	// startTimeout bounds a worker's start, until its hello.
	startTimeout = 30 * time.Second
	// watchEvery is how often the parent reads a busy worker's resident
	// memory.
	watchEvery = 10 * time.Millisecond
	// maxWalk bounds the entries of one Walk the parent sends.
	maxWalk = 100_000
)

// Pool starts and reuses render workers. It is safe for concurrent use;
// the zero Pool is not usable, see NewPool and Shared.
type Pool struct {
	exe  string // the binary a worker runs
	sem  chan struct{}
	mu   sync.Mutex
	idle []*worker
	rep  *Report // of the first worker that said hello
	// noNetns is set once starting a worker in a network namespace of
	// its own failed: the kernel or the container does not allow it.
	noNetns bool
	warm    sync.Once
}

// NewPool returns a pool of at most size workers running exe (kdrift's
// own binary; "" takes os.Executable).
func NewPool(exe string, size int) *Pool {
	if size <= 0 {
		size = DefaultWorkers
	}
	return &Pool{exe: exe, sem: make(chan struct{}, size)}
}

var (
	sharedOnce sync.Once
	shared     *Pool
)

// Shared is the process's pool, of DefaultWorkers workers (fewer on one
// CPU) running this binary.
func Shared() *Pool {
	sharedOnce.Do(func() {
		shared = NewPool("", min(DefaultWorkers, max(runtime.NumCPU(), 1)))
	})
	return shared
}

// ErrWorker is a render worker that failed: it could not start, crashed or
// broke the protocol. The build says nothing of the input.
var ErrWorker = errors.New("render worker failed")

// worker is one running worker process.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	in     *bufio.Writer
	out    *bufio.Reader
	dir    string
	stderr *tail
	rep    Report
	exited chan struct{}
}

// Warm starts a worker in the background (once per pool), so that the
// first build need not wait for it: call it before the work that
// precedes rendering (reading Git).
func (p *Pool) Warm() {
	p.warm.Do(func() {
		go func() {
			w, err := p.start()
			if err != nil {
				return // the first build reports it
			}
			p.mu.Lock()
			p.idle = append(p.idle, w)
			p.mu.Unlock()
		}()
	})
}

// Report starts a worker if none ran yet and returns what confines it.
func (p *Pool) Report(ctx context.Context) (Report, error) {
	p.mu.Lock()
	rep := p.rep
	p.mu.Unlock()
	if rep != nil {
		return *rep, nil
	}
	if err := acquire(ctx, p.sem); err != nil {
		return Report{}, err
	}
	defer func() { <-p.sem }()
	w, err := p.get()
	if err != nil {
		return Report{}, err
	}
	p.put(w)
	return w.rep, nil
}

func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waited for another app's render, which is still running: %w", context.Cause(ctx))
	}
}

// get returns an idle worker or starts one.
func (p *Pool) get() (*worker, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		select {
		case <-w.exited:
			w.discard()
			continue
		default:
		}
		p.mu.Unlock()
		return w, nil
	}
	p.mu.Unlock()
	return p.start()
}

// put returns a healthy worker to the pool.
func (p *Pool) put(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, w)
}

// start starts a worker and reads its hello.
func (p *Pool) start() (*worker, error) {
	exe := p.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("render worker: cannot find kdrift's own binary: %w", err)
		}
	}
	p.mu.Lock()
	netns := !p.noNetns && netnsSupported
	p.mu.Unlock()
	w, err := startWorker(exe, netns)
	if err != nil && netns {
		// A kernel without unprivileged user namespaces, or a container
		// whose seccomp profile refuses them: the worker's own seccomp
		// filter and Landlock still keep it off the network.
		p.mu.Lock()
		p.noNetns = true
		p.mu.Unlock()
		w, err = startWorker(exe, false)
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.rep == nil {
		rep := w.rep
		p.rep = &rep
	}
	p.mu.Unlock()
	return w, nil
}

func startWorker(exe string, netns bool) (*worker, error) {
	dir, err := os.MkdirTemp("", "kdrift-render-")
	if err != nil {
		return nil, fmt.Errorf("render worker: private folder: %w", err)
	}
	args := []string{WorkerArg}
	if netns {
		args = append(args, netnsArg)
	}
	cmd := exec.Command(exe, args...)
	// Not nil: nil would inherit kdrift's environment. GOGC=off alone:
	// the worker's start (every linked package's initialisation, then
	// kustomize's warm-up) runs with no collection, which would only
	// walk a few MiB that all stay live; the worker removes it and turns
	// collection on before it serves (workerMain). About a fifth of a
	// worker's start, on the critical path of a command's first render.
	cmd.Env = []string{workerGOGC}
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr(netns)
	w := &worker{cmd: cmd, dir: dir, stderr: &tail{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("render worker: start %s: %w", exe, err)
	}
	w.stdin, w.in, w.out = stdin, bufio.NewWriterSize(stdin, 64<<10), bufio.NewReaderSize(stdout, 64<<10)
	go func() {
		_ = cmd.Wait()
		close(w.exited)
		_ = os.RemoveAll(dir)
	}()
	hello := make(chan error, 1)
	go func() {
		var u up
		err := readFrame(w.out, maxCallFrame, &u)
		if err == nil && u.Hello == nil {
			err = errors.New("it did not say hello first")
		}
		if err == nil {
			w.rep = *u.Hello
		}
		hello <- err
	}()
	select {
	case err = <-hello:
	case <-time.After(startTimeout):
		err = fmt.Errorf("no hello within %s", startTimeout)
	}
	if err != nil {
		w.kill()
		<-w.exited
		return nil, fmt.Errorf("%w: it did not start: %v%s", ErrWorker, err, w.stderr.say())
	}
	return w, nil
}

// kill ends the worker at once; its exit is reaped in the background.
func (w *worker) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.stdin.Close()
}

// discard kills a worker that is no longer used.
func (w *worker) discard() { w.kill() }

// Build builds folder dir ("/"-rooted) in a worker, answering the worker's
// file system calls from fsys, and returns the objects as JSON. The worker
// is killed when ctx ends (a *LimitError "time" when ctx's cause is one),
// when its resident memory passes lim.MaxMemoryBytes ("memory"), or when
// it breaks the protocol; a build error is kustomize's message.
func (p *Pool) Build(ctx context.Context, fsys filesys.FileSystem, dir string, lim Limits) ([]json.RawMessage, error) {
	return p.run(ctx, fsys, &request{Dir: dir}, lim)
}

// Run runs the handler registered under kind (see Register) on payload
// in a worker, answering the worker's file system calls from fsys, under
// the limits and with the kills of Build. The handler's *CodedError comes
// back as one, its *LimitError as one, a panic as a *PanicError.
func (p *Pool) Run(ctx context.Context, fsys filesys.FileSystem, kind string, payload json.RawMessage, lim Limits) ([]json.RawMessage, error) {
	if kind == "" {
		return nil, errors.New("sandbox: Run needs a kind; Build builds kustomizations")
	}
	if len(payload) > maxCallFrame-4<<10 {
		return nil, &LimitError{Limit: "rendered size", Detail: fmt.Sprintf("the %s request comes to %d bytes, more than a worker takes (%d)", kind, len(payload), maxCallFrame-4<<10)}
	}
	return p.run(ctx, fsys, &request{Kind: kind, Payload: payload}, lim)
}

// run sends req to a worker; see Build and Run.
func (p *Pool) run(ctx context.Context, fsys filesys.FileSystem, req *request, lim Limits) ([]json.RawMessage, error) {
	if err := acquire(ctx, p.sem); err != nil {
		return nil, err
	}
	defer func() { <-p.sem }()
	w, err := p.get()
	if err != nil {
		return nil, err
	}
	res, err := w.build(ctx, fsys, req, lim)
	if err != nil {
		w.discard()
		return nil, err
	}
	p.put(w)
	switch {
	case res.Panic != "":
		return nil, &PanicError{Value: res.Panic, Stack: res.Stack, Kind: req.Kind}
	case res.Limit != "":
		return nil, &LimitError{Limit: res.Limit, Detail: res.Err}
	case res.Code != "":
		return nil, &CodedError{Code: res.Code, Data: res.Data, Msg: res.Err}
	case res.Err != "":
		return nil, errors.New(res.Err)
	}
	return res.Objects, nil
}

// build runs one request on w; an error means w must be discarded.
func (w *worker) build(ctx context.Context, fsys filesys.FileSystem, req *request, lim Limits) (*result, error) {
	done := make(chan struct{})
	defer close(done)
	var (
		mu       sync.Mutex
		reason   error
		finished bool // a result came: the worker is healthy
	)
	stop := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		if reason == nil {
			reason = err
		}
		w.kill()
	}
	go func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-w.exited:
				return
			case <-ctx.Done():
				stop(context.Cause(ctx))
				return
			case <-t.C:
				if rss := residentBytes(w.cmd.Process.Pid); lim.MaxMemoryBytes > 0 && rss > lim.MaxMemoryBytes {
					stop(&LimitError{Limit: "memory", Detail: fmt.Sprintf("the render worker's resident memory passed its %.0f MiB budget (%.1f MiB) and the worker was killed: the render allocates without bound, or needs a larger budget", float64(lim.MaxMemoryBytes)/(1<<20), float64(rss)/(1<<20))})
					return
				}
			}
		}
	}()
	failed := func(err error) (*result, error) {
		w.kill()
		mu.Lock()
		r := reason
		mu.Unlock()
		if r != nil {
			return nil, r
		}
		<-w.exited
		return nil, fmt.Errorf("%w: %v%s", ErrWorker, err, w.stderr.say())
	}
	req.MaxOutput, req.MaxMemory, req.Hook = lim.MaxOutputBytes, lim.MaxMemoryBytes, lim.testHook
	if err := writeFrame(w.in, down{Request: req}); err != nil {
		return failed(err)
	}
	maxResult := lim.MaxOutputBytes + 1<<20
	if lim.MaxOutputBytes <= 0 {
		maxResult = 1 << 30
	}
	for {
		var u up
		if err := readFrame(w.out, max(maxResult, maxCallFrame), &u); err != nil {
			if errors.Is(err, errFrameSize) {
				err = &LimitError{Limit: "rendered size", Detail: fmt.Sprintf("the objects rendered come to more than %d bytes", lim.MaxOutputBytes)}
				stop(err)
			}
			return failed(err)
		}
		switch {
		case u.Result != nil:
			mu.Lock()
			r := reason
			finished = r == nil
			mu.Unlock()
			if r != nil {
				return failed(r)
			}
			return u.Result, nil
		case u.Call != nil:
			if err := writeFrame(w.in, down{Reply: answer(fsys, u.Call)}); err != nil {
				return failed(err)
			}
		default:
			return failed(errors.New("it sent a frame that is neither a call nor a result"))
		}
	}
}

// answer runs a worker's call on fsys.
func answer(fsys filesys.FileSystem, c *call) *reply {
	r := &reply{}
	fail := func(err error) *reply {
		r.Err, r.NotExist = err.Error(), errors.Is(err, fs.ErrNotExist)
		return r
	}
	switch c.Op {
	case "open":
		f, err := fsys.Open(c.Path)
		if err != nil {
			return fail(err)
		}
		defer func() { _ = f.Close() }()
		st, err := f.Stat()
		if err != nil {
			return fail(err)
		}
		data, err := io.ReadAll(f)
		if err != nil {
			return fail(err)
		}
		r.Data, r.Info = data, toInfo(st)
	case "readfile":
		data, err := fsys.ReadFile(c.Path)
		if err != nil {
			return fail(err)
		}
		r.Data = data
	case "isdir":
		r.Bool = fsys.IsDir(c.Path)
	case "exists":
		r.Bool = fsys.Exists(c.Path)
	case "readdir":
		names, err := fsys.ReadDir(c.Path)
		if err != nil {
			return fail(err)
		}
		r.Names = names
	case "glob":
		names, err := fsys.Glob(c.Path)
		if err != nil {
			return fail(err)
		}
		r.Names = names
	case "cleanedabs":
		d, f, err := fsys.CleanedAbs(c.Path)
		if err != nil {
			return fail(err)
		}
		r.Dir, r.File = string(d), f
	case "walk":
		err := fsys.Walk(c.Path, func(p string, fi fs.FileInfo, err error) error {
			if len(r.Walk) >= maxWalk {
				return fmt.Errorf("more than %d files and folders under %s", maxWalk, c.Path)
			}
			e := walkEntry{Path: p, Info: toInfo(fi)}
			if err != nil {
				e.Err, e.NotExist = err.Error(), errors.Is(err, fs.ErrNotExist)
			}
			r.Walk = append(r.Walk, e)
			return nil
		})
		if err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown file system call %q", c.Op))
	}
	return r
}

// tail keeps the first and the last max bytes written to it: a worker's
// stderr, where the Go runtime reports a crash (first its reason, then
// every goroutine's stack).
type tail struct {
	mu   sync.Mutex
	max  int
	head []byte
	buf  []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := min(t.max-len(t.head), len(b)); n > 0 {
		t.head = append(t.head, b[:n]...)
	}
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(b), nil
}

// String returns the beginning that was kept.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head)
}

// say is the first line of what was kept, for an error message.
func (t *tail) say() string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	line, _, _ := strings.Cut(s, "\n")
	return " (" + string(bytes.TrimSpace([]byte(line))) + ")"
}

// TestHook makes the worker of a test binary misbehave before it builds:
// "block" never returns, "exec:PATH" runs a program, "connect:ADDR" dials
// TCP, "read:PATH" reads a file of the disk, "write:NAME" writes in the
// temporary folder, "alloc:N" holds N bytes, "env" fails with the
// environment. A kdrift binary's worker ignores it.
func (l Limits) TestHook(hook string) Limits {
	l.testHook = hook
	return l
}
