package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// frame encodes v as one frame.
func frame(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := writeFrame(w, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzFrames: whatever bytes arrive on a pipe, reading a frame as the
// worker (a down frame) or the parent (an up frame) does never panics,
// never reads a frame past its bound, and a frame read re-encodes to one
// that reads back the same.
func FuzzFrames(f *testing.F) {
	seeds := []any{
		down{Request: &request{Dir: "/app", MaxOutput: 1 << 20, MaxMemory: 256 << 20}},
		down{Request: &request{Kind: "jsonnet", Payload: json.RawMessage(`{"appDir":"j","file":"j/a.jsonnet","maxBytes":1024,"maxDepth":200}`)}},
		down{Request: &request{Kind: "helm", Payload: json.RawMessage(`{"dir":"c","files":["Chart.yaml"],"release":"r","namespace":"n","options":{}}`), Hook: "block"}},
		down{Reply: &reply{Data: []byte("apiVersion: v1\n"), Info: &info{N: "cm.yaml", S: 15}}},
		down{Reply: &reply{Err: "open /x: file does not exist", NotExist: true}},
		down{Reply: &reply{Walk: []walkEntry{{Path: "/app", Info: &info{N: "app", M: 1 << 31}}, {Path: "/app/x", Err: "boom"}}}},
		up{Hello: &Report{Exec: "seccomp", Network: "netns", FS: "landlock"}},
		up{Call: &call{Op: "readfile", Path: "/app/kustomization.yaml"}},
		up{Result: &result{Objects: []json.RawMessage{json.RawMessage(`{"kind":"ConfigMap"}`)}}},
		up{Result: &result{Code: "chart", Data: json.RawMessage(`{"chart":"c","problem":"p"}`), Err: "chart c: p"}},
		up{Result: &result{Limit: "memory", Err: "too much"}},
		up{Result: &result{Panic: "boom", Stack: []byte("goroutine 1")}},
	}
	for _, s := range seeds {
		f.Add(frame(f, s))
	}
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 4, 'n', 'u', 'l', 'l'})
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []any{&down{}, &up{}} {
			err := readFrame(bufio.NewReader(bytes.NewReader(data)), max, v)
			if len(data) >= 4 && int64(binary.BigEndian.Uint32(data[:4])) > max && !errors.Is(err, errFrameSize) {
				t.Fatalf("a frame of %d bytes was read with a bound of %d: err = %v", binary.BigEndian.Uint32(data[:4]), max, err)
			}
			if err != nil {
				continue
			}
			again := frame(t, v)
			back := map[bool]any{true: &down{}, false: &up{}}[isDown(v)]
			if err := readFrame(bufio.NewReader(bytes.NewReader(again)), 1<<30, back); err != nil {
				t.Fatalf("a frame read does not read back after encoding: %v", err)
			}
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(back)
			if !bytes.Equal(a, b) {
				t.Fatalf("round trip changed the frame:\n%s\n%s", a, b)
			}
		}
	})
}

func isDown(v any) bool {
	_, ok := v.(*down)
	return ok
}

// FuzzAnswer: whatever call a worker makes (any operation, any path),
// the parent answers it from its file system without panicking, and the
// answer goes through a frame.
func FuzzAnswer(f *testing.F) {
	for _, op := range []string{"open", "readfile", "isdir", "exists", "readdir", "glob", "cleanedabs", "walk", "create", ""} {
		for _, p := range []string{"/app", "/app/cm.yaml", "/", "", "../etc/passwd", "/app/*", "/app/[", "\x00"} {
			f.Add(op, p)
		}
	}
	fsys := filesys.MakeFsInMemory()
	for name, doc := range map[string]string{
		"/app/kustomization.yaml": "resources:\n- cm.yaml\n",
		"/app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"/app/sub/x.yaml":         "a: 1\n",
	} {
		if err := fsys.WriteFile(name, []byte(doc)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, op, path string) {
		r := answer(fsys, &call{Op: op, Path: path})
		var d down
		if err := readFrame(bufio.NewReader(bytes.NewReader(frame(t, down{Reply: r}))), 1<<30, &d); err != nil || d.Reply == nil {
			t.Fatalf("answer to %s %q does not go through a frame: %v", op, path, err)
		}
	})
}
