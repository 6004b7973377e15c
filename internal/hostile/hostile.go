// Package hostile builds repositories that attack the machine rendering
// them, for the tests that prove kdrift refuses them: remote bases that run
// a program through git, resources and generator files fetched over HTTP,
// exec and KRM function plugins, Helm charts from repositories or with
// runaway templates, and YAML that exhausts a
// parser; Git URLs in every spelling kustomize accepts, beside a folder
// of the same name. Each entry is an App folder and what its error must
// name.
package hostile

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Case is one hostile App folder.
type Case struct {
	// Name is the App name (and folder under deploy/).
	Name string
	// Files are the folder's files, relative to the repository root.
	Files map[string]string
	// Want is a substring the App's error must contain.
	Want string
}

// Trap is what a hostile repository would reach: a marker file a command
// run through git would create, and a loopback listener it would connect
// to.
type Trap struct {
	// Marker is a file that must never appear.
	Marker string
	// Addr is host:port of the listener.
	Addr    string
	accepts atomic.Int64
}

// Accepts is how many connections the listener accepted.
func (t *Trap) Accepts() int64 { return t.accepts.Load() }

// NewTrap starts a loopback listener that counts and closes connections,
// stopped when the test ends, and names a marker file in a fresh folder.
func NewTrap(t testing.TB) *Trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hostile: cannot listen on loopback: %v", err)
	}
	tr := &Trap{Marker: filepath.Join(t.TempDir(), "pwned"), Addr: ln.Addr().String()}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tr.accepts.Add(1)
			_ = c.Close()
		}
	}()
	return tr
}

// Cases are the hostile App folders, each under deploy/NAME, aimed at tr.
func Cases(tr *Trap) []Case {
	url := "http://" + tr.Addr
	k := func(name, kust string, extra map[string]string) map[string]string {
		files := map[string]string{"deploy/" + name + "/kustomization.yaml": kust}
		for f, c := range extra {
			files["deploy/"+name+"/"+f] = c
		}
		return files
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"
	laughs := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	// Entries kustomize reads as Git URLs and hands a ref to `git fetch`,
	// each with a same-named folder committed so that "is it in the
	// repository?" says yes.
	touch := pct("--upload-pack=touch " + tr.Marker + ";")
	git := func(name, entry string) Case {
		return Case{Name: name, Want: "resources entry " + fmt.Sprintf("%q", entry)[:min(len(entry), 20)],
			Files: k(name, fmt.Sprintf("resources:\n- %q\n", entry), map[string]string{
				entry + "/kustomization.yaml": "resources: [cm.yaml]\n",
				entry + "/cm.yaml":            cm,
			})}
	}
	return []Case{
		git("git-user-host", "u@h/o/r?x&ref="+touch),
		git("git-user-host-path", "user@host.example/org/repo?ref="+touch),
		git("git-escaped-ref", "u@h/o/r?timeout=9&ref="+pct(pct("--upload-pack=touch "+tr.Marker+";"))),
		git("git-scp", "git@host.example:org/repo?submodules=false&ref="+touch),
		git("git-getter", "git::u@h/o/r?ref="+touch),
		{Name: "upload-pack", Want: `resources entry "file:///tmp//?ref=--upload-pack`,
			Files: k("upload-pack", fmt.Sprintf("resources:\n- \"file:///tmp//?ref=--upload-pack%%3Dtouch%%20%s%%3B\"\n", tr.Marker), nil)},
		{Name: "http-resource", Want: "is a remote location",
			Files: k("http-resource", "resources:\n- "+url+"/cm.yaml\n", nil)},
		{Name: "http-generator", Want: `configMapGenerator file entry "` + url,
			Files: k("http-generator", "configMapGenerator:\n- name: leak\n  files:\n  - "+url+"/token\n", nil)},
		{Name: "http-patch", Want: `patches entry "` + url,
			Files: k("http-patch", "resources: [cm.yaml]\npatches:\n- path: "+url+"/patch.yaml\n", map[string]string{"cm.yaml": cm})},
		{Name: "nested-remote", Want: "deploy/nested-remote/base/kustomization.yaml: resources entry",
			Files: map[string]string{
				"deploy/nested-remote/kustomization.yaml":      "resources: [base]\n",
				"deploy/nested-remote/base/kustomization.yaml": "resources:\n- github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v1.0.6\n- ssh://git@" + tr.Addr + "/org/repo.git\n",
			}},
		{Name: "remote-component", Want: "components entry",
			Files: k("remote-component", "resources: [cm.yaml]\ncomponents:\n- git::"+url+"/org/repo//component\n", map[string]string{"cm.yaml": cm})},
		{Name: "exec-plugin", Want: "not a builtin plugin",
			Files: k("exec-plugin", "generators: [gen.yaml]\n", map[string]string{"gen.yaml": "apiVersion: someteam.example.com/v1\nkind: ChartRenderer\nmetadata: {name: x}\n"})},
		{Name: "krm-function", Want: "is a KRM function",
			Files: k("krm-function", "transformers: [fn.yaml]\n", map[string]string{"fn.yaml": "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n"})},
		{Name: "builtin-remote-path", Want: `transformers PatchTransformer entry "` + url,
			Files: k("builtin-remote-path", "resources: [cm.yaml]\ntransformers: [patch.yaml]\n", map[string]string{"cm.yaml": cm,
				"patch.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + url + "/patch.yaml\n"})},
		{Name: "helm", Want: "helmCharts entry",
			Files: k("helm", "helmCharts:\n- name: x\n  repo: "+url+"\n  version: 1.0.0\n", nil)},
		{Name: "helm-template-bomb", Want: "template function repeat",
			Files: map[string]string{"deploy/helm-template-bomb/Chart.yaml": "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
				"deploy/helm-template-bomb/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata: {a: {{ repeat 1000000000 \"x\" | quote }}}\n"}},
		{Name: "helm-remote-dependency", Want: "not vendored",
			Files: map[string]string{"deploy/helm-remote-dependency/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: db\n  version: 1.0.0\n  repository: " + url + "\n"}},
		{Name: "anchor-kustomize", Want: "recursive alias",
			Files: k("anchor-kustomize", "resources: [cm.yaml]\n", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\ndata: &a {k: *a}\n"})},
		{Name: "anchor-plain", Want: "recursive alias",
			Files: map[string]string{"deploy/anchor-plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\ndata: &a {k: *a}\n"}},
		{Name: "laughs", Want: "alias expansion",
			Files: k("laughs", "resources: [cm.yaml]\n", map[string]string{"cm.yaml": laughs})},
		{Name: "deep", Want: "nesting depth",
			Files: map[string]string{"deploy/deep/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata: {a: " + nest(5000) + "}\n"}},
		{Name: "case", Want: `resources entry "` + url,
			Files: k("case", "Resources:\n- "+url+"/cm.yaml\n", nil)},
		{Name: "duplicate-key", Want: "already defined",
			Files: k("duplicate-key", "resources: [cm.yaml]\nresources:\n- "+url+"/cm.yaml\n", map[string]string{"cm.yaml": cm})},
		{Name: "outside", Want: "outside the repository",
			Files: k("outside", "resources: [cm.yaml]\nconfigMapGenerator:\n- name: passwd\n  files: [../../../../../../etc/passwd]\n", map[string]string{"cm.yaml": cm})},
	}
}

// pct percent-escapes every byte of s but letters, digits and '-'.
func pct(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// nest is a flow sequence nested n deep.
func nest(n int) string {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return string(b)
}
