package cli

import (
	"context"
	"net"
	"strings"
	"testing"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestControllerOpsFlags: a bad --log-level or --log-format, and a
// --metrics-addr that cannot be listened on, stop the controller at once
// with exit 2 and a message naming the flag.
func TestControllerOpsFlags(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "no apps\n"})
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--metrics-addr", busy.Addr().String()}, "--metrics-addr " + busy.Addr().String()},
	} {
		args := append([]string{"controller", "--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}, c.args...)
		code, _, errOut := kdrift(t, context.Background(), args...)
		if code != exitError || !strings.Contains(errOut, c.want) {
			t.Errorf("kdrift %v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
