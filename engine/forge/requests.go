package forge

import (
	"context"
	"errors"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// ProposalPrefix is the prefix of the branches kdrift pushes its
// proposals to: the open requests from such branches are kdrift's.
const ProposalPrefix = "kdrift/"

// maxListed bounds how many of kdrift's open requests are read (each
// costs the forge a call for its reviews).
const maxListed = 30

// appsMarker carries, in a request's body, the Apps its change touches,
// so that a reader can show the request on them: an HTML comment the
// forge does not render.
const appsMarker = "<!-- kdrift-apps: "

// appsLine is the marker's line; its list of at most maxAppsLine
// characters is checked apart (see ignoreBranch).
var appsLine = regexp.MustCompile(`<!-- kdrift-apps: ([a-zA-Z0-9._, -]+) -->`)

// maxAppsLine bounds the list of Apps a marker names.
const maxAppsLine = 1000

// AppsMarker is the line a request's body carries to name the Apps it
// changes.
func AppsMarker(apps []string) string {
	return appsMarker + strings.Join(apps, ", ") + " -->"
}

// appsOf reads the Apps a request's body names; a body someone edited
// names what it names (the request is only shown, never acted on).
func appsOf(body string) []string {
	var m []string
	for _, c := range appsLine.FindAllStringSubmatch(body, 8) {
		if len(c[1]) <= maxAppsLine {
			m = c
			break
		}
	}
	if m == nil {
		return nil
	}
	var out []string
	for _, a := range strings.Split(m[1], ",") {
		if a = strings.TrimSpace(a); a != "" && len(out) < 50 {
			out = append(out, a)
		}
	}
	return out
}

// ignoreBranch is the branch an ignore proposes on: kdrift/ignore-APP-HASH,
// HASH ten hexadecimal digits of the rule. The App's length (at most 253)
// is checked apart: a bounded repetition here compiles into a program of
// hundreds of states, which every kdrift process would pay for at start.
var ignoreBranch = regexp.MustCompile(`^` + ProposalPrefix + `ignore-([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)-[0-9a-f]{10}$`)

// appsOfBranch is the App an ignore's branch names, for a request whose
// body carries no marker (opened before kdrift wrote one, or edited).
func appsOfBranch(head string) []string {
	if m := ignoreBranch.FindStringSubmatch(head); m != nil && len(m[1]) <= 253 {
		return []string{m[1]}
	}
	return nil
}

// kdriftOnly keeps the requests from kdrift's branches, newest first,
// at most maxListed; a request whose body names no App is shown on the
// App its branch names, when it does.
func kdriftOnly(prs []PullRequest) []PullRequest {
	var out []PullRequest
	for _, p := range prs {
		if strings.HasPrefix(p.Head, ProposalPrefix) {
			if len(p.Apps) == 0 {
				p.Apps = appsOfBranch(p.Head)
			}
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	if len(out) > maxListed {
		out = out[:maxListed]
	}
	return out
}

// ByApp groups requests by the Apps they change.
func ByApp(prs []PullRequest) map[string][]PullRequest {
	out := map[string][]PullRequest{}
	for _, p := range prs {
		for _, a := range p.Apps {
			out[a] = append(out[a], p)
		}
	}
	return out
}

// Requests asks a forge for kdrift's open requests and keeps the answer
// for a while: a reader refreshing every few seconds asks the forge once
// per TTL, and each question is bounded by Timeout.
type Requests struct {
	client  Client
	ttl     time.Duration
	timeout time.Duration
	now     func() time.Time

	mu       sync.Mutex
	at       time.Time
	prs      []PullRequest
	err      error
	inflight bool
	done     chan struct{}
}

// Default bounds of a Requests.
const (
	RequestsTTL     = 30 * time.Second
	RequestsTimeout = 5 * time.Second
)

// NewRequests returns a cache of c's open kdrift requests.
func NewRequests(c Client) *Requests {
	return &Requests{client: c, ttl: RequestsTTL, timeout: RequestsTimeout, now: time.Now}
}

// Get returns kdrift's open requests, asking the forge when the cached
// answer is older than the TTL (and waiting at most the timeout).
func (q *Requests) Get(ctx context.Context) ([]PullRequest, error) {
	q.mu.Lock()
	if q.fresh() {
		defer q.mu.Unlock()
		return q.prs, q.err
	}
	done := q.start()
	q.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.prs, q.err
}

// Peek returns the cached answer at once, never waiting on the forge,
// and asks the forge in the background when it is stale. known is false
// until a first answer (or error) arrived.
func (q *Requests) Peek() (prs []PullRequest, err error, known bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.fresh() {
		q.start()
	}
	return q.prs, q.err, !q.at.IsZero()
}

func (q *Requests) fresh() bool {
	return !q.at.IsZero() && q.now().Sub(q.at) < q.ttl
}

// start asks the forge unless a question is in flight; q.mu is held.
func (q *Requests) start() chan struct{} {
	if q.inflight {
		return q.done
	}
	q.inflight, q.done = true, make(chan struct{})
	done := q.done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
		defer cancel()
		prs, err := q.client.Open(ctx)
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			err = errors.New("the forge did not answer within " + q.timeout.String())
		}
		q.mu.Lock()
		q.prs, q.err, q.at, q.inflight = prs, err, q.now(), false
		q.mu.Unlock()
		close(done)
	}()
	return done
}
