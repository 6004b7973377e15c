package live_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// The controller-manager runs so that Deployments and StatefulSets get
// the status, revision annotations and managedFields entries a real
// cluster writes right after a sync.
func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{ControllerManager: true})
}

func decode(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("yaml: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return u
}

func clientSet(t testing.TB) *live.ClientSet {
	t.Helper()
	cs, err := live.NewClients(enginetest.Kubeconfig(), live.Options{}).For("")
	if err != nil {
		t.Fatalf("client set: %v", err)
	}
	return cs
}

// namespace makes a fresh namespace for one test and removes it after.
func namespace(t *testing.T, cs *live.ClientSet) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	ns := decode(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+name+"}")
	applyAs(t, cs, ns, "kdrift")
	t.Cleanup(func() {
		ri, _, err := cs.Resource(context.Background(), ns)
		if err == nil {
			err = ri.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
		if err != nil {
			t.Logf("cleanup namespace %s: %v", name, err)
		}
	})
	return name
}

// applyAs server-side applies obj for real, forced, as manager.
func applyAs(t testing.TB, cs *live.ClientSet, obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
	t.Helper()
	ri, _, err := cs.Resource(context.Background(), obj)
	if err != nil {
		t.Fatalf("%v", err)
	}
	body, err := live.ApplyBody(obj)
	if err != nil {
		t.Fatal(err)
	}
	force := true
	out, err := ri.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager, Force: &force})
	if err != nil {
		t.Fatalf("apply %s/%s as %s: %v", obj.GetKind(), obj.GetName(), manager, err)
	}
	return out
}

// kubectl runs the real kubectl against the test cluster.
func kubectl(t testing.TB, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", enginetest.Kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// compare runs the engine's compare of one desired object: dry-run,
// live read, diff.Compare.
func compare(t testing.TB, cs *live.ClientSet, desired *unstructured.Unstructured, ignore ...app.IgnoreRule) status.ResourceStatus {
	t.Helper()
	ctx := context.Background()
	in := diff.Input{Desired: desired, Ignore: ignore, Options: diff.DefaultOptions()}
	var err error
	in.Live, err = cs.Get(ctx, live.RefOf(desired))
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	in.DryRun, in.DryRunErr = cs.DryRunApply(ctx, desired)
	return diff.Compare(in)
}

func describe(r status.ResourceStatus) string {
	var b strings.Builder
	b.WriteString(string(r.Status) + " " + r.Message)
	for _, f := range r.Fields {
		b.WriteString("\n  " + f.Path + " class=" + string(f.Class))
		for _, o := range f.Owners {
			b.WriteString(" " + o.Manager + "/" + o.Operation + "/" + o.Subresource)
		}
		if f.Extra {
			b.WriteString(" extra")
		}
		if f.Ignored {
			b.WriteString(" ignored")
		}
	}
	return b.String()
}

func unstructuredSlice(obj map[string]any, fields ...string) ([]any, bool, error) {
	return unstructured.NestedSlice(obj, fields...)
}
