package cli

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestAuditReasonNeverReachesTheTerminalRaw: a commit body that clears
// the screen, with the trailers of a freeze, is shown escaped in audit's
// REASON column, and exact in -o json.
func TestAuditReasonNeverReachesTheTerminalRaw(t *testing.T) {
	dir := gitRepo(t, map[string]string{
		".kdrift/web.yaml":              "apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec: {path: deploy/web}\n",
		"deploy/web/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n",
	})
	cmd := exec.Command("git", "-c", "user.name=Evil \x1b]0;TITLE\a", "-c", "user.email=e@x", "commit", "-q", "--allow-empty",
		"-m", "freeze(web): hold", "-m", "body \x1b[2J\u202e", "-m", "Kdrift-Action: freeze\nKdrift-App: web")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	code, out, errOut := kdrift(t, context.Background(), "audit", "--repo", dir)
	if code != 0 {
		t.Fatalf("audit: exit %d\n%s%s", code, out, errOut)
	}
	if strings.ContainsAny(out+errOut, "\x1b\a\u202e") {
		t.Errorf("audit wrote a raw control character:\n%q", out)
	}
	if !strings.Contains(out, `body \e[2J\u202e`) || !strings.Contains(out, `Evil \e]0;TITLE`) {
		t.Errorf("audit does not show the escaped reason and author:\n%s", out)
	}
	code, out, errOut = kdrift(t, context.Background(), "audit", "--repo", dir, "-o", "json")
	if code != 0 || !strings.Contains(out, `body \u001b[2J`+"\u202e") {
		t.Errorf("audit -o json: exit %d, the reason is not exact:\n%s%s", code, out, errOut)
	}
}
