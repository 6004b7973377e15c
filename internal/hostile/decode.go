package hostile

import (
	"fmt"
	"strings"
)

// Commits whose YAML or JSON is within the file budgets but costs the
// process that decodes it: kdrift's parent process, not the render
// worker, which has a memory limit of its own. A list of one-letter
// items is two nodes every two bytes: a 4 MiB file is two million nodes,
// hundreds of MB once parsed.

// DecodeCase is a commit added to the decoding base repository (see
// DecodeBase) and the kdrift command run on it.
type DecodeCase struct {
	// Name says what the commit does.
	Name string
	// Files are added to DecodeBase's files (or replace them).
	Files map[string]string
	// Args are the kdrift command and its arguments, before --repo.
	Args []string
	// App is the App whose Error names the refusal; empty when the
	// files are no App's content.
	App string
	// Want is a substring of that App's error.
	Want string
}

// DecodeBase is the base repository of the decoding cases: an App web
// (a kustomization with one ConfigMap) deploying to namespace ns.
func DecodeBase(ns string) map[string]string {
	return map[string]string{
		".kdrift/web.yaml":              kdriftApp("web", ns, ""),
		"deploy/web/kustomization.yaml": "resources: [cm.yaml]\n",
		"deploy/web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n",
	}
}

// kdriftApp is an App of that name at deploy/NAME, with extra spec lines.
func kdriftApp(name, ns, extra string) string {
	return fmt.Sprintf("apiVersion: kdrift.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  path: deploy/%s\n  destination:\n    namespace: %s\n%s", name, name, ns, extra)
}

// flowList is a flow sequence of n one-letter items: n nodes in 2n bytes.
func flowList(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("a,", n), ",") + "]"
}

// DecodeCases are the commits that cost the parent what it decodes, for
// an App namespace ns. Each must leave the parent within its memory
// bound, and each refusal is its App's Error.
func DecodeCases(ns string) []DecodeCase {
	list := flowList(2_097_000) // just under the 4 MiB of one file
	many := func(n int, file func(i int) (string, string)) map[string]string {
		files := map[string]string{}
		for i := range n {
			name, body := file(i)
			files[name] = body
		}
		return files
	}
	discovered := func(n int, items string) map[string]string {
		// Discovery reads a file that names argoproj.io.
		return many(n, func(i int) (string, string) {
			return fmt.Sprintf("clusters/big%d.yaml", i), "# argoproj.io\n" + items
		})
	}
	plain := func(n int) map[string]string {
		files := many(n, func(i int) (string, string) {
			return fmt.Sprintf("deploy/plain/cm%d.yaml", i), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p%d}\ndata:\n  a: %s\n", i, list)
		})
		files[".kdrift/plain.yaml"] = kdriftApp("plain", ns, "")
		return files
	}
	chart := func(n int, items int) map[string]string {
		files := many(n, func(i int) (string, string) {
			return fmt.Sprintf("deploy/chart/templates/cm%d.yaml", i),
				fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h%d}\nitems: {{ until %d | toJson }}\n", i, items)
		})
		files[".kdrift/chart.yaml"] = kdriftApp("chart", ns, "")
		files["deploy/chart/Chart.yaml"] = "apiVersion: v2\nname: chart\nversion: 0.1.0\n"
		return files
	}
	// Just under the file bound: many such files add up to the render's.
	under := flowList(190_000)
	status := []string{"status", "-o", "json"}
	return []DecodeCase{
		{Name: "discovered-1", Files: discovered(1, list), Args: status},
		{Name: "discovered-8", Files: discovered(8, list), Args: status},
		{Name: "discovered-under-file-bound-8", Files: discovered(8, under), Args: status},
		{Name: "plain-1", Files: plain(1), Args: status, App: "plain", Want: "nodes limit"},
		{Name: "plain-4", Files: plain(4), Args: status, App: "plain", Want: "nodes limit"},
		{Name: "plain-under-file-bound-8", Args: status, App: "plain", Want: "nodes limit",
			Files: func() map[string]string {
				files := many(8, func(i int) (string, string) {
					return fmt.Sprintf("deploy/plain/cm%d.yaml", i), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u%d}\nitems: %s\n", i, under)
				})
				files[".kdrift/plain.yaml"] = kdriftApp("plain", ns, "")
				return files
			}()},
		{Name: "plain-scalars-5", Args: status, App: "plain", Want: "scalar bytes limit",
			Files: func() map[string]string {
				// 4 MiB values: 20 MiB in all, within the 64 MiB a render
				// may read. (Sixteen of them measure go-git's object cache
				// more than decoding: the walk reads every file.)
				files := many(5, func(i int) (string, string) {
					return fmt.Sprintf("deploy/plain/cm%d.yaml", i), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s%d}\ndata:\n  a: %s\n", i, strings.Repeat("x", 4_150_000))
				})
				files[".kdrift/plain.yaml"] = kdriftApp("plain", ns, "")
				return files
			}()},
		{Name: "kustomize-resource", Args: status, App: "web", Want: "nodes limit", Files: map[string]string{
			"deploy/web/kustomization.yaml": "resources: [cm.yaml, big.yaml]\n",
			"deploy/web/big.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  a: " + list + "\n",
		}},
		{Name: "helm-until-1", Files: chart(1, 600_000), Args: status, App: "chart", Want: "nodes limit"},
		{Name: "helm-until-8", Files: chart(8, 600_000), Args: status, App: "chart", Want: "limit"},
		{Name: "helm-under-file-bound-8", Files: chart(8, 150_000), Args: status, App: "chart", Want: "limit"},
		{Name: "jq-string-repeat", Args: []string{"diff", "web"}, App: "web", Want: `operator "*"`, Files: map[string]string{
			".kdrift/web.yaml": kdriftApp("web", ns, "  ignoreDifferences:\n  - kind: ConfigMap\n    jqPathExpressions: ['(\"x\" * 2000000000) | .data']\n"),
		}},
		{Name: "jq-binding", Args: []string{"diff", "web"}, App: "web", Want: "variable binding", Files: map[string]string{
			".kdrift/web.yaml": kdriftApp("web", ns, "  ignoreDifferences:\n  - kind: ConfigMap\n    jqPathExpressions: ['(\"x\" * 2000000000) as $b | .data']\n"),
		}},
	}
}
