package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/internal/enginetest"
)

// TestFieldFreezeCLI: `kdrift freeze APP --resource … --field
// /spec/replicas` commits a field freeze; a real `kubectl scale` of the
// frozen field survives `kdrift sync`, which heals a `kubectl set image`
// on the same Deployment and lists what it left frozen; diff, status and
// the JSON mark the frozen drift with who froze it and why; `unfreeze
// --resource --field` lifts it and the next sync puts Git back.
func TestFieldFreezeCLI(t *testing.T) {
	ctx := context.Background()
	ns := "cli-field-freeze"
	repo := cliRepo(t, ns)
	t.Setenv("KDRIFT_AUTHOR", "Lao Li <lao.li@example.com>")
	g := []string{"--repo", repo, "--kubeconfig", enginetest.Kubeconfig()}
	kubectl := func(args ...string) {
		t.Helper()
		out, err := exec.Command("kubectl", append(args, "--kubeconfig", enginetest.Kubeconfig(), "-n", ns)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	deployment := func() (int32, string) {
		t.Helper()
		d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "render", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns}, g...)...); code != exitOK {
		t.Fatalf("sync: %d\n%s\n%s", code, out, errOut)
	}

	// Bad input is refused with what to do.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"freeze", ns, "--resource", "Deployment.v1/render", "--reason", "x"}, "renders no Deployment/render in the core group; did you mean Deployment.apps/render?"},
		{[]string{"freeze", ns, "--resource", "deploy/rendr", "--reason", "x"}, "did you mean Deployment.apps/render?"},
		{[]string{"freeze", ns, "--field", "/spec/replicas", "--reason", "x"}, "go with --resource"},
		{[]string{"freeze", ns, "--resource", "Deployment.apps/render", "--field", "spec/replicas", "--reason", "x"}, `must start with "/"`},
		{[]string{"freeze", ns, "other", "--resource", "Deployment.apps/render", "--reason", "x"}, "exactly one APP"},
	} {
		if code, _, errOut := kdrift(t, ctx, append(c.args, "--repo", repo)...); code != exitError || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: code %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}

	code, out, errOut := kdrift(t, ctx, "freeze", ns, "--resource", "Deployment.apps/render", "--field", "/spec/replicas", "--reason", "INC-1002 scaled to 12 by hand", "--for", "4h", "--repo", repo)
	if code != exitOK || !strings.Contains(out, "freeze "+ns+" Deployment.apps/"+ns+"/render [/spec/replicas]") {
		t.Fatalf("freeze --resource: %d\n%s\n%s", code, out, errOut)
	}
	if msg := git(t, repo, "log", "-1", "--format=%B"); !strings.Contains(msg, "Kdrift-Action: freeze") || !strings.Contains(msg, "Kdrift-Resource: Deployment.apps/"+ns+"/render") || !strings.Contains(msg, "Kdrift-Field: /spec/replicas") {
		t.Fatalf("commit message:\n%s", msg)
	}

	kubectl("scale", "deployment/render", "--replicas=12")
	kubectl("set", "image", "deployment/render", "main=registry.example/render:hand")
	code, out, errOut = kdrift(t, ctx, append([]string{"sync", ns}, g...)...)
	if code != exitOK || !strings.Contains(out, "frozen Deployment/"+ns+"/render [/spec/replicas]: left as it is live, by Lao Li <lao.li@example.com>") {
		t.Fatalf("sync under a field freeze: %d\n%s\n%s", code, out, errOut)
	}
	if n, image := deployment(); n != 12 || image != "registry.example/render:1.0" {
		t.Fatalf("after sync: replicas %d image %s; want the scale held and the image healed\n%s", n, image, out)
	}
	code, out, _ = kdrift(t, ctx, append([]string{"diff", ns}, g...)...)
	if code != exitDrift || !strings.Contains(out, "owner:   kubectl (Update/scale, person") || !strings.Contains(out, `frozen:  by Lao Li <lao.li@example.com>`) || !strings.Contains(out, "INC-1002") {
		t.Fatalf("diff of the frozen field: %d\n%s", code, out)
	}
	code, out, _ = kdrift(t, ctx, append([]string{"status", "-o", "json"}, g...)...)
	var doc struct {
		Apps []struct {
			Drifted []struct {
				Fields []struct {
					Path   string `json:"path"`
					Frozen *struct {
						By     string `json:"by"`
						Reason string `json:"reason"`
						Until  string `json:"until"`
					} `json:"frozen"`
				} `json:"fields"`
			} `json:"drifted"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || len(doc.Apps) != 1 || len(doc.Apps[0].Drifted) != 1 {
		t.Fatalf("status -o json: %d %v\n%s", code, err, out)
	}
	f := doc.Apps[0].Drifted[0].Fields[0]
	if f.Path != "/spec/replicas" || f.Frozen == nil || f.Frozen.By != "Lao Li <lao.li@example.com>" || f.Frozen.Until == "" {
		t.Fatalf("status json field: %+v\n%s", f, out)
	}
	if code, out, _ := kdrift(t, ctx, append([]string{"status"}, g...)...); code != exitOK || !strings.Contains(out, "1 resource(s) frozen (1 drifted field(s) held)") {
		t.Fatalf("status: %s", out)
	}

	code, out, errOut = kdrift(t, ctx, "unfreeze", ns, "--resource", "Deployment.apps/render", "--field", "/spec/replicas", "--reason", "INC-1002 fixed", "--repo", repo)
	if code != exitOK {
		t.Fatalf("unfreeze --resource: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := kdrift(t, ctx, append([]string{"sync", ns}, g...)...); code != exitOK || strings.Contains(out, "frozen ") {
		t.Fatalf("sync after unfreeze: %d\n%s\n%s", code, out, errOut)
	}
	if n, _ := deployment(); n != 6 {
		t.Fatalf("replicas after unfreeze and sync = %d, want 6", n)
	}
}

// TestFreezeTypedAsKubectlHoldsCLI: the real binary, given the resource
// the way an on-call engineer types it for kubectl (Deployment/web, with
// no group), writes a freeze of Deployment.apps in the App's namespace,
// and a real `kubectl scale` under it survives the real binary's sync;
// `unfreeze --resource deploy/render` lifts it. A reference that names no
// object of the App is refused and nothing is committed.
func TestFreezeTypedAsKubectlHoldsCLI(t *testing.T) {
	skipSlow(t)
	ctx := context.Background()
	ns := "cli-freeze-typed"
	repo := cliRepo(t, ns)
	bin := kdriftBinary(t)
	run := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append(args, "--repo", repo, "--kubeconfig", enginetest.Kubeconfig())...)
		cmd.Env = append(os.Environ(), "KDRIFT_AUTHOR=Lao Li <lao.li@example.com>", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("kdrift %v: %v", args, err)
			}
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	replicas := func() int32 {
		t.Helper()
		d, err := enginetest.Clientset(t).AppsV1().Deployments(ns).Get(ctx, "render", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	if code, out := run("sync", ns); code != exitOK {
		t.Fatalf("sync: %d\n%s", code, out)
	}
	head := git(t, repo, "rev-parse", "HEAD")
	if code, out := run("freeze", ns, "--resource", "StatefulSet/render", "--field", "/spec/replicas", "--reason", "INC-9"); code != exitError || !strings.Contains(out, "renders no StatefulSet/render; did you mean Deployment.apps/render?") {
		t.Fatalf("freeze of no object: %d\n%s", code, out)
	}
	if git(t, repo, "rev-parse", "HEAD") != head {
		t.Fatal("a refused freeze committed")
	}
	code, out := run("freeze", ns, "--resource", "Deployment/render", "--field", "/spec/replicas", "--reason", "INC-9 scaled by hand", "--for", "1h")
	if code != exitOK || !strings.Contains(out, "Deployment.apps/"+ns+"/render [/spec/replicas]") {
		t.Fatalf("freeze Deployment/render: %d\n%s", code, out)
	}
	out2, err := exec.Command("kubectl", "scale", "deployment/render", "--replicas=9", "-n", ns, "--kubeconfig", enginetest.Kubeconfig()).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl scale: %v\n%s", err, out2)
	}
	if code, out := run("sync", ns); code != exitOK {
		t.Fatalf("sync under the freeze: %d\n%s", code, out)
	}
	if n := replicas(); n != 9 {
		t.Fatalf("replicas after sync under the freeze = %d, want the hand-scaled 9 held", n)
	}
	if code, out := run("unfreeze", ns, "--resource", "deploy/render", "--reason", "INC-9 over"); code != exitOK || !strings.Contains(out, "Deployment.apps/"+ns+"/render") {
		t.Fatalf("unfreeze deploy/render: %d\n%s", code, out)
	}
	if code, out := run("sync", ns); code != exitOK {
		t.Fatalf("sync after unfreeze: %d\n%s", code, out)
	}
	if n := replicas(); n != 6 {
		t.Fatalf("replicas after unfreeze and sync = %d, want Git's 6", n)
	}
}
