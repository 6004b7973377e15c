package source

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"

	"kdrift.dev/kdrift/engine/redact"
)

// FetchSkip says that a Fetch did not go to the remote, because a fetch
// of the same remote into the same repository had finished Age ago (in
// this process or another), less than Options.FetchFresh.
type FetchSkip struct {
	Skipped bool
	// Age is how long ago that fetch finished.
	Age time.Duration
	// Remote is the remote's URL, credentials removed.
	Remote string
}

// FetchSkipped describes the last Fetch when it was skipped; the zero
// value when it went to the remote (or none ran yet).
func (r *Repo) FetchSkipped() FetchSkip {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// fetchRemote is the URL a Fetch reads from; "" when it reads none.
func (r *Repo) fetchRemote() string {
	switch {
	case r.remote:
		return r.location
	case r.upstream != "":
		return r.upURL
	}
	return ""
}

// stampPath is the file whose modification time is when the last
// successful fetch of the remote into this repository finished; "" when
// there is none to keep.
func (r *Repo) stampPath() string {
	remote := r.fetchRemote()
	if remote == "" || r.fresh <= 0 {
		return ""
	}
	dir := r.stampDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "kdrift", "fetched")
	}
	sum := sha256.Sum256([]byte(r.dir + "\x00" + remote))
	return filepath.Join(dir, hex.EncodeToString(sum[:])[:20])
}

// recentFetch reports whether a fetch of the same remote finished less
// than Options.FetchFresh ago, and how long ago. A time in the future (a
// clock that moved back) does not count.
func (r *Repo) recentFetch() (FetchSkip, bool) {
	p := r.stampPath()
	if p == "" {
		return FetchSkip{}, false
	}
	st, err := os.Stat(p)
	if err != nil {
		return FetchSkip{}, false
	}
	age := time.Since(st.ModTime())
	if age < 0 || age >= r.fresh {
		return FetchSkip{}, false
	}
	return FetchSkip{Skipped: true, Age: age, Remote: redact.URL(r.fetchRemote())}, true
}

// stampFetch records that a fetch just finished; a failure to record it
// only means the next process fetches again.
func (r *Repo) stampFetch() {
	p := r.stampPath()
	if p == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	now := time.Now()
	if err := os.Chtimes(p, now, now); err == nil {
		return
	}
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		_ = f.Close()
	}
}
