// Package memlimit gives the Go runtime a memory limit from the memory
// limit of the container the process runs in (its cgroup, v2 or v1, read
// from the files the kernel exposes), and tunes garbage collection for a
// long-lived process. Without it the collector knows nothing of a Pod's
// limit: it lets the heap grow to twice what is live before collecting,
// and a controller whose live heap is over half its limit is killed by
// the kernel while a collection would have freed enough.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Options tune Apply. The zero value means the documented defaults.
type Options struct {
	// Ratio is the share of the container's limit given to the Go
	// runtime as its soft limit (debug.SetMemoryLimit). Default 0.9: the
	// rest is room for what the runtime does not count (thread stacks
	// outside the heap, cgo, the page cache charged to the cgroup).
	Ratio float64
	// GCPercent is the collector's target (GOGC) for a long-lived
	// process. Default 50: the heap grows to 1.5 times what is live
	// before a collection, not twice, which keeps a controller's resident
	// memory near its live objects at the cost of more frequent (short,
	// concurrent) collections; the memory limit still makes the
	// collector work harder near the container's limit.
	GCPercent int
	// Root is the file system holding /proc and /sys (tests). Default the
	// machine's root.
	Root fs.FS
	// Getenv reads the environment (tests). Default os.Getenv.
	Getenv func(string) string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{Ratio: 0.9, GCPercent: 50, Root: os.DirFS("/"), Getenv: os.Getenv}
}

// Result says what Apply did, for the process's log.
type Result struct {
	// Container is the container's memory limit in bytes, 0 when it has
	// none or none could be read.
	Container int64
	// Limit is the memory limit Apply gave the runtime, 0 when it set
	// none (GOMEMLIMIT set, or no container limit).
	Limit int64
	// GCPercent is the collector target Apply set, 0 when it left it (GOGC
	// set).
	GCPercent int
	// Err is why the container's limit could not be read; the runtime is
	// then left without a limit.
	Err error
}

// String is Result in one line.
func (r Result) String() string {
	var parts []string
	switch {
	case r.Limit > 0:
		parts = append(parts, fmt.Sprintf("memory limit %d MiB (of the container's %d MiB)", r.Limit>>20, r.Container>>20))
	case r.Err != nil:
		parts = append(parts, "no memory limit: "+r.Err.Error())
	case r.Container > 0:
		parts = append(parts, "memory limit from GOMEMLIMIT")
	default:
		parts = append(parts, "no memory limit: the container has none")
	}
	if r.GCPercent > 0 {
		parts = append(parts, fmt.Sprintf("GOGC %d", r.GCPercent))
	}
	return strings.Join(parts, ", ")
}

// Apply sets the runtime's memory limit to o.Ratio of the container's
// limit unless GOMEMLIMIT is set, and the collector's target to
// o.GCPercent unless GOGC is set.
func Apply(o Options) Result {
	d := DefaultOptions()
	if o.Ratio <= 0 || o.Ratio > 1 {
		o.Ratio = d.Ratio
	}
	if o.GCPercent <= 0 {
		o.GCPercent = d.GCPercent
	}
	if o.Root == nil {
		o.Root = d.Root
	}
	if o.Getenv == nil {
		o.Getenv = d.Getenv
	}
	var r Result
	r.Container, r.Err = ContainerLimit(o.Root)
	if o.Getenv("GOMEMLIMIT") == "" && r.Container > 0 {
		r.Limit = int64(float64(r.Container) * o.Ratio)
		debug.SetMemoryLimit(r.Limit)
	}
	if o.Getenv("GOGC") == "" {
		r.GCPercent = o.GCPercent
		debug.SetGCPercent(o.GCPercent)
	}
	return r
}

// unlimited is the smallest value cgroup v1 reports for no limit (the
// largest page-aligned int64); anything from it up means none.
const unlimited = math.MaxInt64 &^ (1<<12 - 1)

// ContainerLimit is the memory limit of the process's cgroup in bytes:
// the smallest limit on its path from the root of the hierarchy (a
// parent's limit bounds its children), v2 (memory.max) or v1
// (memory.limit_in_bytes); 0 and no error when there is none. root holds
// /proc and /sys.
func ContainerLimit(root fs.FS) (int64, error) {
	raw, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0, fmt.Errorf("cannot read the process's cgroup: %w", err)
	}
	v2, v1 := "", ""
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case hasController(f[1], "memory"):
			v1 = f[2]
		}
	}
	if v1 != "" {
		return smallest(root, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")
	}
	if v2 != "" {
		return smallest(root, "sys/fs/cgroup", v2, "memory.max")
	}
	return 0, errors.New("the process is in no memory cgroup (/proc/self/cgroup names none)")
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// smallest reads file in the cgroup folder cg below mount and in each of
// its parents up to mount, and returns the smallest limit. Inside a
// container the mount usually shows only the container's own cgroup at
// its root, whatever path /proc/self/cgroup names: folders that are not
// there are passed over, and the mount's root is always read.
func smallest(root fs.FS, mount, cg, file string) (int64, error) {
	var best int64
	read := 0
	for dir := path.Clean("/" + cg); ; dir = path.Dir(dir) {
		raw, err := fs.ReadFile(root, path.Join(mount, dir, file))
		if err == nil {
			read++
			v, err := parseLimit(strings.TrimSpace(string(raw)))
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path.Join("/", mount, dir, file), err)
			}
			if v > 0 && (best == 0 || v < best) {
				best = v
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("cannot read the container's memory limit: %w", err)
		}
		if dir == "/" {
			break
		}
	}
	if read == 0 {
		return 0, fmt.Errorf("no %s under /%s for cgroup %s", file, mount, cg)
	}
	return best, nil
}

// parseLimit reads a limit file's value: "max" (v2) or a value at or
// above unlimited (v1) is no limit (0).
func parseLimit(s string) (int64, error) {
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a memory limit in bytes", s)
	}
	if v >= unlimited {
		return 0, nil
	}
	return v, nil
}
