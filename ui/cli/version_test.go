package cli

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	deps := []*debug.Module{
		{Path: "k8s.io/client-go", Version: "v0.37.2"},
		{Path: "sigs.k8s.io/kustomize/api", Version: "v0.21.0", Replace: &debug.Module{Path: "sigs.k8s.io/kustomize/api", Version: "v0.21.2"}},
		{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		text string
		json versionInfo
	}{
		{
			name: "a tagged go install",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "kdrift.dev/kdrift", Version: "v1.4.0"}, Deps: deps},
			text: "kdrift:     v1.4.0\ngo:         go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + "\nclient-go:  v0.37.2\nkustomize:  v0.21.2\n",
			json: versionInfo{Version: "v1.4.0", GoVersion: "go1.26.8", Platform: runtime.GOOS + "/" + runtime.GOARCH, ClientGo: "v0.37.2", Kustomize: "v0.21.2"},
		},
		{
			name: "a build from a modified checkout",
			bi: &debug.BuildInfo{GoVersion: "go1.26.9", Main: debug.Module{Path: "kdrift.dev/kdrift", Version: "(devel)"}, Deps: deps,
				Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}, {Key: "vcs", Value: "git"},
					{Key: "vcs.revision", Value: "92bc34f0002205cec992b7d348060179100713bb"}, {Key: "vcs.time", Value: "2026-12-04T11:32:55Z"}, {Key: "vcs.modified", Value: "true"}}},
			text: "kdrift:     (devel), commit 92bc34f0002205cec992b7d348060179100713bb (modified)\ngo:         go1.26.9 darwin/arm64\nclient-go:  v0.37.2\nkustomize:  v0.21.2\n",
			json: versionInfo{Version: "(devel)", Commit: "92bc34f0002205cec992b7d348060179100713bb", Modified: true, CommitAt: "2026-12-04T11:32:55Z",
				GoVersion: "go1.26.9", Platform: "darwin/arm64", ClientGo: "v0.37.2", Kustomize: "v0.21.2"},
		},
		{
			name: "no build information",
			bi:   nil,
			text: "kdrift:     unknown\ngo:         " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\nclient-go:  unknown\nkustomize:  unknown\n",
			json: versionInfo{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, ClientGo: "unknown", Kustomize: "unknown"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			if code := runVersion(&cliEnv{stdout: &out, stderr: &out}, &outputFlag{format: outputText}, tc.bi); code != exitOK || !strings.HasPrefix(out.String(), tc.text+"sandbox:\n  exec:") {
				t.Errorf("text: exit %d\n%s\nwant\n%s", code, out.String(), tc.text)
			}
			for _, format := range []string{outputJSON, outputYAML} {
				var doc syncBuffer
				if code := runVersion(&cliEnv{stdout: &doc, stderr: &doc}, &outputFlag{format: format}, tc.bi); code != exitOK {
					t.Fatalf("-o %s: exit %d: %s", format, code, doc.String())
				}
				if format == outputYAML {
					if !strings.Contains(doc.String(), "clientGo: "+tc.json.ClientGo+"\n") {
						t.Errorf("-o yaml:\n%s", doc.String())
					}
					continue
				}
				var got versionInfo
				err := json.Unmarshal([]byte(doc.String()), &got)
				if err == nil && (got.Sandbox == nil || got.Sandbox.Exec == "" || got.Sandbox.Network == "" || got.Sandbox.FS == "") {
					t.Errorf("-o json: sandbox = %+v, want what confines the render worker", got.Sandbox)
				}
				got.Sandbox = nil
				if err != nil || got != tc.json {
					t.Errorf("-o json: %v\n%s\nwant %+v", err, doc.String(), tc.json)
				}
			}
		})
	}
}

// TestVersionCommand: `kdrift version -o json` runs on the test binary's
// build information. A test binary carries no dependency list, so the
// client-go and kustomize versions are checked on the real binary, in
// TestKubectlPlugin.
func TestVersionCommand(t *testing.T) {
	code, out, errOut := kdrift(t, context.Background(), "version", "-o", "json")
	var v versionInfo
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("version -o json: exit %d\n%s\n%s", code, out, errOut)
	}
	if v.Version == "" || v.GoVersion != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("version -o json: %+v", v)
	}
}
