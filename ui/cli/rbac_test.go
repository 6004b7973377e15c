package cli

import (
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/app"
)

// TestNamespacesFor: the settings' list wins over the Apps' destinations
// and says which App deploys outside it; without a list, the Apps'
// namespaces, each once; Apps of another context or with no namespace,
// and a namespace that is no name, are warned about and never printed.
func TestNamespacesFor(t *testing.T) {
	mk := func(name, ctx, ns string) app.App {
		var a app.App
		a.Metadata.Name = name
		a.Spec.Destination.Context, a.Spec.Destination.Namespace = ctx, ns
		return a
	}
	apps := []app.App{mk("web", "", "shop"), mk("api", "", "shop"), mk("db", "", "data"), mk("edge", "eu", "edge"), mk("crds", "", ""), mk("evil", "", "x\n  kind: ClusterRoleBinding")}
	p := namespacesFor(app.Settings{}, apps)
	if strings.Join(p.namespaces, ",") != "data,shop" || p.from != "the Apps' destination namespaces" {
		t.Fatalf("from the Apps: %+v", p)
	}
	warned := strings.Join(p.warnings, "\n")
	for _, w := range []string{"App edge deploys to context eu", "App crds names no destination namespace", "App evil names destination namespace", "left out"} {
		if !strings.Contains(warned, w) {
			t.Errorf("warnings lack %q:\n%s", w, warned)
		}
	}
	var s app.Settings
	s.Spec.Namespaces = []string{"shop"}
	p = namespacesFor(s, apps)
	if strings.Join(p.namespaces, ",") != "shop" || !strings.Contains(strings.Join(p.warnings, "\n"), "App db deploys to namespace data, which spec.namespaces") {
		t.Fatalf("from the settings: %+v", p)
	}
}
