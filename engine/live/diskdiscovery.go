package live

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"

	"kdrift.dev/kdrift/internal/privfile"
)

// DiscoveryCacheTTL is how long discovery kept on disk is used before the
// apiserver is asked again. A kind the cached answer lacks (a CRD
// installed since) is looked up on the apiserver at once, whatever the age.
const DiscoveryCacheTTL = 10 * time.Minute

// maxDiscoveryFile bounds what is read from a cache file.
const maxDiscoveryFile = 16 << 20

// discoveryFileVersion is the format of the cache file.
const discoveryFileVersion = 1

// DefaultDiscoveryCacheDir is where one-shot commands keep discovery
// between runs: the user's cache folder ($XDG_CACHE_HOME/kdrift/discovery),
// "" when there is none.
func DefaultDiscoveryCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "kdrift", "discovery")
}

// discoveryFile is what one cache file holds: the apiserver's groups and
// resources, as ServerGroupsAndResources returned them.
type discoveryFile struct {
	Version   int                       `json:"version"`
	Server    string                    `json:"server"`
	Written   time.Time                 `json:"written"`
	Groups    []*metav1.APIGroup        `json:"groups"`
	Resources []*metav1.APIResourceList `json:"resources"`
}

// diskDiscovery answers ServerGroupsAndResources (all a RESTMapper asks)
// from a file kept per apiserver, as kubectl's discovery cache does, and
// everything else from the memory-cached client it wraps. The file is
// trusted only when it is a regular file of this user that no one else
// may write, fresh, of this server and well-formed (names that go into
// request paths are checked); otherwise the apiserver is asked and the
// file rewritten. Writing is best effort: a cache that cannot be written
// only costs the next run its discovery requests.
type diskDiscovery struct {
	discovery.CachedDiscoveryInterface
	path   string
	server string
	ttl    time.Duration
	now    func() time.Time

	mu       sync.Mutex
	file     *discoveryFile // what the file said, read once
	fromDisk bool           // the last answer came from the file
	live     bool           // invalidated once: ask the apiserver from now on
	written  bool           // the apiserver's answer is in the file
}

// newDiskDiscovery wraps inner with a cache file under dir for server.
func newDiskDiscovery(inner discovery.CachedDiscoveryInterface, dir, server string) *diskDiscovery {
	sum := sha256.Sum256([]byte(server))
	return &diskDiscovery{CachedDiscoveryInterface: inner, path: filepath.Join(dir, hex.EncodeToString(sum[:16])+".json"),
		server: server, ttl: DiscoveryCacheTTL, now: time.Now}
}

// ServerGroupsAndResources implements discovery.DiscoveryInterface.
func (d *diskDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.mu.Lock()
	if !d.live {
		// Read once per process: every mapper built over this client
		// asks, and the answer is the same.
		if d.file == nil {
			d.file, _ = readDiscoveryFile(d.path, d.server, d.ttl, d.now())
		}
		if f := d.file; f != nil {
			d.fromDisk = true
			d.mu.Unlock()
			return f.Groups, f.Resources, nil
		}
		d.live = true // no usable file: the apiserver, then a new file
	}
	d.mu.Unlock()
	groups, resources, err := d.CachedDiscoveryInterface.ServerGroupsAndResources()
	if err != nil {
		return groups, resources, err
	}
	d.mu.Lock()
	d.fromDisk = false
	write := !d.written
	d.written = true
	d.mu.Unlock()
	if write {
		_ = writeDiscoveryFile(d.path, discoveryFile{Version: discoveryFileVersion, Server: d.server, Written: d.now().UTC(), Groups: groups, Resources: resources})
	}
	return groups, resources, nil
}

// Fresh implements discovery.CachedDiscoveryInterface: an answer from the
// file is not fresh, so a kind it lacks makes the mapper invalidate and
// ask the apiserver.
func (d *diskDiscovery) Fresh() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fromDisk {
		return false
	}
	return d.CachedDiscoveryInterface.Fresh()
}

// Invalidate implements discovery.CachedDiscoveryInterface: the file is
// not read again by this process.
func (d *diskDiscovery) Invalidate() {
	d.mu.Lock()
	d.live, d.fromDisk, d.file, d.written = true, false, nil, false
	d.mu.Unlock()
	d.CachedDiscoveryInterface.Invalidate()
}

// Names that go into request paths or mappings: a group is a DNS
// subdomain, a version a DNS label, a resource a DNS subdomain with at
// most one subresource, a kind what a CRD may declare.
func validGroup(g string) bool   { return g == "" || len(validation.IsDNS1123Subdomain(g)) == 0 }
func validVersion(v string) bool { return len(validation.IsDNS1123Label(v)) == 0 }
func validKind(k string) bool {
	return k != "" && len(validation.IsDNS1035Label(strings.ToLower(k))) == 0
}
func validResource(r string) bool {
	name, sub, hasSub := strings.Cut(r, "/")
	return len(validation.IsDNS1123Subdomain(name)) == 0 && (!hasSub || len(validation.IsDNS1123Label(sub)) == 0)
}

// readDiscoveryFile reads and checks a cache file.
func readDiscoveryFile(path, server string, ttl time.Duration, now time.Time) (*discoveryFile, error) {
	f, err := privfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxDiscoveryFile+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxDiscoveryFile {
		return nil, fmt.Errorf("discovery cache %s: larger than %d bytes", path, maxDiscoveryFile)
	}
	var df discoveryFile
	if err := json.Unmarshal(raw, &df); err != nil {
		return nil, fmt.Errorf("discovery cache %s: %w", path, err)
	}
	if err := df.check(server, ttl, now); err != nil {
		return nil, fmt.Errorf("discovery cache %s: %w", path, err)
	}
	return &df, nil
}

// check says whether a decoded file may be used.
func (df *discoveryFile) check(server string, ttl time.Duration, now time.Time) error {
	switch {
	case df.Version != discoveryFileVersion:
		return fmt.Errorf("format %d, want %d", df.Version, discoveryFileVersion)
	case df.Server != server:
		return fmt.Errorf("written for server %q", df.Server)
	case now.Sub(df.Written) > ttl || df.Written.After(now.Add(time.Minute)):
		return fmt.Errorf("written %s: stale", df.Written)
	case len(df.Groups) == 0 || len(df.Resources) == 0:
		return fmt.Errorf("no groups or resources")
	}
	versions := map[string]bool{}
	for _, g := range df.Groups {
		if g == nil || !validGroup(g.Name) || len(g.Versions) == 0 {
			return fmt.Errorf("malformed group")
		}
		for _, v := range g.Versions {
			if !validVersion(v.Version) || v.GroupVersion != (schema.GroupVersion{Group: g.Name, Version: v.Version}).String() {
				return fmt.Errorf("group %q: malformed version %q", g.Name, v.Version)
			}
			versions[v.GroupVersion] = true
		}
	}
	for _, rl := range df.Resources {
		if rl == nil || !versions[rl.GroupVersion] {
			return fmt.Errorf("resources of a version no group has")
		}
		for _, r := range rl.APIResources {
			if !validResource(r.Name) || !validKind(r.Kind) || !validGroup(r.Group) || (r.Version != "" && !validVersion(r.Version)) {
				return fmt.Errorf("%s: malformed resource %q (kind %q)", rl.GroupVersion, r.Name, r.Kind)
			}
		}
	}
	return nil
}

// writeDiscoveryFile writes the cache file atomically, readable by this
// user only.
func writeDiscoveryFile(path string, df discoveryFile) error {
	raw, err := json.Marshal(df)
	if err != nil {
		return err
	}
	return privfile.WriteAtomic(path, raw)
}
