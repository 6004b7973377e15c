package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlPlugin runs the built binary through a kubectl-kdrift link:
// directly, and through the real kubectl as `kubectl kdrift …`; help and
// usage errors name it "kubectl kdrift", and kubectl_complete-kdrift
// answers kubectl's completion of the plugin with App names.
func TestKubectlPlugin(t *testing.T) {
	skipSlow(t)
	bin := kdriftBinary(t)
	dir := t.TempDir()
	for _, name := range []string{pluginBinary, pluginCompleteName} {
		if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(isolatedEnv(t, bin), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	repo := appsRepo(t)
	runIn := func(name string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String(), errOut.String()
		case err != nil:
			t.Fatalf("%s %q: %v", name, args, err)
		}
		return 0, out.String(), errOut.String()
	}
	link := filepath.Join(dir, pluginBinary)

	code, out, _ := runIn(link, "freeze", "--help")
	for _, want := range []string{"  kubectl kdrift freeze (APP...", "  kubectl kdrift freeze digital-human-staging --reason"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("kubectl-kdrift freeze --help: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	code, _, errOut := runIn(link, "freeze", "--bogus")
	if code != exitError || !strings.Contains(errOut, "Run 'kubectl kdrift freeze --help' for usage.") {
		t.Errorf("kubectl-kdrift freeze --bogus: exit %d\n%s", code, errOut)
	}
	code, out, _ = runIn(link, "version", "-o", "json")
	var v versionInfo
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || !strings.HasPrefix(v.ClientGo, "v0.") || !strings.HasPrefix(v.Kustomize, "v0.") {
		t.Errorf("kubectl-kdrift version -o json: exit %d\n%s", code, out)
	}

	// The same through kubectl, which finds the plugin on PATH.
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not installed: the plugin test runs `kubectl kdrift`; install kubectl: %v", err)
	}
	code, out, errOut = runIn(kubectl, "kdrift", "help")
	if code != exitOK || !strings.Contains(out, "kubectl kdrift [command]") || !strings.Contains(out, "Look at the drift:") {
		t.Errorf("kubectl kdrift help: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runIn(kubectl, "kdrift", "status", "--repo", repo, "-o", "xml")
	if code != exitError || !strings.Contains(errOut, "-o xml: want text, json or yaml") {
		t.Errorf("kubectl kdrift status -o xml: exit %d\n%s\n%s", code, out, errOut)
	}
	// kubectl's completion of a plugin calls kubectl_complete-kdrift.
	code, out, errOut = runIn(kubectl, "__complete", "kdrift", "diff", "--repo", repo, "render-")
	if code != exitOK || !strings.Contains(out, "render-dev\t") || !strings.Contains(out, "render-prod\t") {
		t.Errorf("kubectl __complete kdrift diff: exit %d\n%s\n%s", code, out, errOut)
	}
}
