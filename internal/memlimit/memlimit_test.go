package memlimit

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestContainerLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want int64
		err  string
	}{
		{"v2 in a Pod (cgroup namespace)", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("536870912\n"),
		}, 512 << 20, ""},
		{"v2 without a limit", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0, ""},
		{"v2, the parent's limit is smaller", fstest.MapFS{
			"proc/self/cgroup":                          file("0::/kubepods/pod1/c1\n"),
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("max\n"),
			"sys/fs/cgroup/kubepods/pod1/memory.max":    file("268435456\n"),
			"sys/fs/cgroup/kubepods/memory.max":         file("8589934592\n"),
		}, 256 << 20, ""},
		{"v1, the container's own cgroup at the mount's root", fstest.MapFS{
			"proc/self/cgroup":                           file("12:pids:/docker/abc\n4:memory:/docker/abc\n0::/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("1073741824\n"),
		}, 1 << 30, ""},
		{"v1 without a limit", fstest.MapFS{
			"proc/self/cgroup":                           file("4:memory:/process_api/x\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, 0, ""},
		{"v1, a limit below", fstest.MapFS{
			"proc/self/cgroup":                                    file("4:cpuacct,memory:/a/b\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":          file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes":      file("104857600\n"),
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes":        file("209715200\n"),
			"sys/fs/cgroup/memory/a/b/memory.soft_limit_in_bytes": file("1\n"),
		}, 100 << 20, ""},
		{"garbage in the file", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}, 0, `"lots" is not a memory limit`},
		{"no cgroup files", fstest.MapFS{"proc/self/cgroup": file("0::/x\n")}, 0, "no memory.max"},
		{"no /proc", fstest.MapFS{}, 0, "cannot read the process's cgroup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ContainerLimit(tc.fs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestApply: the runtime gets 90% of the container's limit and GOGC 50,
// unless GOMEMLIMIT or GOGC say otherwise.
func TestApply(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	root := fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("536870912\n")}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	debug.SetMemoryLimit(math.MaxInt64)
	debug.SetGCPercent(100)
	r := Apply(Options{Root: root, Getenv: getenv})
	if r.Limit != 483183820 || debug.SetMemoryLimit(-1) != 483183820 || r.GCPercent != 50 || debug.SetGCPercent(-1) != 50 {
		t.Fatalf("Apply: %+v, runtime limit %d, GOGC %d", r, debug.SetMemoryLimit(-1), debug.SetGCPercent(-1))
	}
	if !strings.Contains(r.String(), "memory limit 460 MiB (of the container's 512 MiB)") {
		t.Fatalf("String: %s", r)
	}

	env["GOMEMLIMIT"], env["GOGC"] = "100MiB", "200"
	debug.SetMemoryLimit(math.MaxInt64)
	debug.SetGCPercent(200)
	r = Apply(Options{Root: root, Getenv: getenv})
	if r.Limit != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 || r.GCPercent != 0 || debug.SetGCPercent(-1) != 200 {
		t.Fatalf("Apply with GOMEMLIMIT and GOGC set: %+v", r)
	}

	delete(env, "GOMEMLIMIT")
	r = Apply(Options{Root: fstest.MapFS{}, Getenv: getenv})
	if r.Err == nil || r.Limit != 0 || !strings.Contains(r.String(), "no memory limit: cannot read") {
		t.Fatalf("Apply without cgroup files: %+v %s", r, r)
	}
}
