package sandbox

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// The protocol: frames of a 4-byte big-endian length and a JSON message.
// The worker says hello (what confines it), then for each request it
// makes file system calls, each answered by the parent, and ends with a
// result. One request at a time; the parent bounds every frame it reads.

// maxCallFrame bounds a worker's file system call (a path or a pattern).
const maxCallFrame = 1 << 20

// up is a frame from the worker; exactly one field is set.
type up struct {
	Hello  *Report `json:"hello,omitempty"`
	Call   *call   `json:"call,omitempty"`
	Result *result `json:"result,omitempty"`
}

// down is a frame from the parent; exactly one field is set.
type down struct {
	Request *request `json:"request,omitempty"`
	Reply   *reply   `json:"reply,omitempty"`
}

// request asks the worker to build one folder (Kind "") or to run the
// handler registered under Kind on Payload.
type request struct {
	Kind      string          `json:"kind,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Dir       string          `json:"dir"`
	MaxOutput int64           `json:"maxOutput"`
	MaxMemory int64           `json:"maxMemory"`
	Hook      string          `json:"hook,omitempty"`
}

// call is one method of filesys.FileSystem, by name, on Path.
type call struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// reply answers a call.
type reply struct {
	Err      string      `json:"err,omitempty"`
	NotExist bool        `json:"notExist,omitempty"`
	Bool     bool        `json:"bool,omitempty"`
	Data     []byte      `json:"data,omitempty"`
	Info     *info       `json:"info,omitempty"`
	Names    []string    `json:"names,omitempty"`
	Dir      string      `json:"dir,omitempty"`
	File     string      `json:"file,omitempty"`
	Walk     []walkEntry `json:"walk,omitempty"`
}

// info is an fs.FileInfo on the wire.
type info struct {
	N string      `json:"name"`
	S int64       `json:"size"`
	M fs.FileMode `json:"mode"`
}

// walkEntry is one step of a Walk: a path and its info or error.
type walkEntry struct {
	Path     string `json:"path"`
	Info     *info  `json:"info,omitempty"`
	Err      string `json:"err,omitempty"`
	NotExist bool   `json:"notExist,omitempty"`
}

// result ends a request: the objects, or what went wrong.
type result struct {
	Objects []json.RawMessage `json:"objects,omitempty"`
	Err     string            `json:"err,omitempty"`
	Limit   string            `json:"limit,omitempty"`
	Panic   string            `json:"panic,omitempty"`
	Stack   []byte            `json:"stack,omitempty"`
	// Code and Data are a *CodedError's.
	Code string          `json:"code,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

func toInfo(fi fs.FileInfo) *info {
	if fi == nil {
		return nil
	}
	m := fi.Mode()
	if fi.IsDir() {
		m |= fs.ModeDir
	}
	return &info{N: fi.Name(), S: fi.Size(), M: m}
}

func (i *info) Name() string       { return i.N }
func (i *info) Size() int64        { return i.S }
func (i *info) Mode() fs.FileMode  { return i.M }
func (i *info) ModTime() time.Time { return time.Time{} }
func (i *info) IsDir() bool        { return i.M.IsDir() }
func (i *info) Sys() any           { return nil }

// writeFrame writes v as one frame and flushes w.
func writeFrame(w *bufio.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Flush()
}

// errFrameSize is a frame longer than the reader allows.
var errFrameSize = errors.New("frame too long")

// readFrame reads one frame of at most max bytes into v.
func readFrame(r *bufio.Reader, max int64, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := int64(binary.BigEndian.Uint32(n[:]))
	if size > max {
		return fmt.Errorf("%w: %d bytes, more than %d", errFrameSize, size, max)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// remoteError is an error the other side reported, keeping whether it
// means "does not exist".
type remoteError struct {
	msg      string
	notExist bool
}

func (e *remoteError) Error() string { return e.msg }

// Is makes a missing path match fs.ErrNotExist.
func (e *remoteError) Is(target error) bool { return e.notExist && target == fs.ErrNotExist }

func errOf(msg string, notExist bool) error {
	if msg == "" {
		return nil
	}
	return &remoteError{msg: msg, notExist: notExist}
}
