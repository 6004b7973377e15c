package forge

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// slowForge answers Open after it is released, counting the questions.
type slowForge struct {
	release chan struct{}
	asked   atomic.Int32
	err     error
}

func (s *slowForge) Ensure(context.Context, Request) (PullRequest, error) { return PullRequest{}, nil }
func (s *slowForge) Find(context.Context, string, string) (*PullRequest, error) {
	return nil, nil
}
func (s *slowForge) Open(ctx context.Context) ([]PullRequest, error) {
	s.asked.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []PullRequest{{Number: 4, Head: "kdrift/revert-abc", Apps: []string{"shop"}}}, s.err
}

func TestRequestsPeekNeverWaitsAndCaches(t *testing.T) {
	f := &slowForge{release: make(chan struct{})}
	q := NewRequests(f)
	if prs, err, known := q.Peek(); known || prs != nil || err != nil {
		t.Fatalf("first peek: %v %v %v", prs, err, known)
	}
	close(f.release)
	prs, err := q.Get(context.Background())
	if err != nil || len(prs) != 1 || ByApp(prs)["shop"][0].Number != 4 {
		t.Fatalf("get: %v %v", prs, err)
	}
	for i := 0; i < 5; i++ {
		if _, _, known := q.Peek(); !known {
			t.Fatal("peek after an answer does not know it")
		}
	}
	if n := f.asked.Load(); n != 1 {
		t.Errorf("the forge was asked %d times within the TTL, want 1", n)
	}
	now := time.Now().Add(RequestsTTL + time.Second)
	q.mu.Lock()
	q.now = func() time.Time { return now }
	q.mu.Unlock()
	if _, err := q.Get(context.Background()); err != nil || f.asked.Load() != 2 {
		t.Errorf("stale answer not refreshed: asked %d, %v", f.asked.Load(), err)
	}
}

func TestRequestsTimeoutIsANote(t *testing.T) {
	f := &slowForge{release: make(chan struct{})}
	q := NewRequests(f)
	q.timeout = 50 * time.Millisecond
	_, err := q.Get(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("want a timeout note, got %v", err)
	}
	f2 := &slowForge{release: make(chan struct{}), err: errors.New("401 bad credentials")}
	close(f2.release)
	if _, err := NewRequests(f2).Get(context.Background()); err == nil {
		t.Fatal("a forge error was lost")
	}
}

func TestAppsMarkerRoundTrip(t *testing.T) {
	body := "text\n" + AppsMarker([]string{"shop", "web-prod"}) + "\n"
	if got := appsOf(body); strings.Join(got, ",") != "shop,web-prod" {
		t.Errorf("appsOf = %v", got)
	}
	if got := appsOf("<!-- kdrift-apps: <script> -->"); got != nil {
		t.Errorf("a marker with other characters was read: %v", got)
	}
	prs := kdriftOnly([]PullRequest{{Number: 1, Head: "feature"}, {Number: 2, Head: "kdrift/ignore-x"}, {Number: 3, Head: "kdrift/revert-y"}})
	if len(prs) != 2 || prs[0].Number != 3 {
		t.Errorf("kdriftOnly = %+v", prs)
	}
	// A request with no marker in its body: an ignore's branch names its
	// App; a revert's names none.
	prs = kdriftOnly([]PullRequest{{Number: 4, Head: "kdrift/ignore-render-prod-0123456789"}, {Number: 5, Head: "kdrift/revert-3f2c1ab"}, {Number: 6, Head: "kdrift/ignore-web-0123456789", Apps: []string{"api"}}})
	if len(prs) != 3 || strings.Join(prs[2].Apps, ",") != "render-prod" || prs[1].Apps != nil || strings.Join(prs[0].Apps, ",") != "api" {
		t.Errorf("apps from the branch: %+v", prs)
	}
	// The bounds are checked apart from the patterns: a list over 1000
	// characters is passed over for a later marker, and an App over 253
	// characters is no App.
	long := strings.Repeat("a", 1001)
	if got := appsOf(AppsMarker([]string{long}) + "\n" + AppsMarker([]string{"shop"})); strings.Join(got, ",") != "shop" {
		t.Errorf("a list over the bound: %v", got)
	}
	if got := appsOfBranch("kdrift/ignore-" + strings.Repeat("a", 253) + "-0123456789"); len(got) != 1 {
		t.Errorf("an App of 253 characters: %v", got)
	}
	if got := appsOfBranch("kdrift/ignore-" + strings.Repeat("a", 254) + "-0123456789"); got != nil {
		t.Errorf("an App of 254 characters: %v", got)
	}
}
