package app

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/yaml"
)

// TestBuildArtifact: the copy rules of an ArtifactGenerator, as Flux
// applies them, over a repository tree.
func TestBuildArtifact(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"deploy/frontend/a.yaml":     {Data: []byte("a: 1\n")},
		"deploy/frontend/sub/b.yaml": {Data: []byte("b: 1\n")},
		"deploy/frontend/README.md":  {Data: []byte("docs\n")},
		"deploy/backend/c.yaml":      {Data: []byte("c: 1\n")},
		"envs/prod/values.yaml":      {Data: []byte("image: {tag: \"2\"}\nreplicas: 3\n")},
		"charts/web/values.yaml":     {Data: []byte("image: {repo: web, tag: \"1\"}\n")},
	}
	cases := []struct {
		name string
		copy []ArtifactCopy
		want string // sorted "path=content" joined by ";"
		err  string
	}{
		{"folder contents to the root", []ArtifactCopy{{From: "deploy/frontend/**", To: "."}},
			"README.md=docs;a.yaml=a: 1;sub/b.yaml=b: 1", ""},
		{"a folder keeps its name", []ArtifactCopy{{From: "deploy/backend", To: "apps/"}},
			"apps/backend/c.yaml=c: 1", ""},
		{"a glob keeps the whole path", []ArtifactCopy{{From: "deploy/*/*.yaml", To: "x/"}},
			"x/deploy/backend/c.yaml=c: 1;x/deploy/frontend/a.yaml=a: 1", ""},
		{"excludes by name and by path", []ArtifactCopy{{From: "deploy/frontend/**", To: ".", Exclude: []string{"*.md", "sub/**"}}},
			"a.yaml=a: 1", ""},
		{"a file renamed", []ArtifactCopy{{From: "envs/prod/values.yaml", To: "values-prod.yaml"}},
			"values-prod.yaml=image: {tag: \"2\"}\nreplicas: 3", ""},
		{"a later copy overwrites", []ArtifactCopy{{From: "charts/web/**", To: "."}, {From: "envs/prod/values.yaml", To: "values.yaml"}},
			"values.yaml=image: {tag: \"2\"}\nreplicas: 3", ""},
		{"merge as YAML", []ArtifactCopy{{From: "charts/web/**", To: "."}, {From: "envs/prod/values.yaml", To: "values.yaml", Strategy: "Merge"}},
			"values.yaml=image:\n  repo: web\n  tag: \"2\"\nreplicas: 3", ""},
		{"optional and missing", []ArtifactCopy{{From: "nothing/**", To: ".", Optional: true}, {From: "deploy/backend/c.yaml", To: "./"}},
			"c.yaml=c: 1", ""},
		{"missing", []ArtifactCopy{{From: "nothing", To: "."}}, "", "nothing does not exist in this revision"},
		{"no match", []ArtifactCopy{{From: "deploy/*.json", To: "."}}, "", `no file of this revision matches "deploy/*.json"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files, id, err := BuildArtifact(fsys, &Artifact{Name: "flux-system/x", Generator: "flux-system/g", Copy: c.copy})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for n, d := range files {
				got = append(got, n+"="+strings.TrimSpace(string(d)))
			}
			sort.Strings(got)
			if strings.Join(got, ";") != c.want {
				t.Fatalf("files:\n got %s\nwant %s", strings.Join(got, ";"), c.want)
			}
			if !strings.HasPrefix(id, "sha256:") {
				t.Fatalf("id %q", id)
			}
		})
	}
}

// TestBuildArtifactBudget: an artifact of too many files is refused.
func TestBuildArtifactBudget(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	for i := 0; i <= maxArtifactFiles; i++ {
		fsys["many/"+strings.Repeat("x", 3)+string(rune('a'+i%26))+"/"+itoa(i)+".yaml"] = &fstest.MapFile{Data: []byte("a: 1\n")}
	}
	_, _, err := BuildArtifact(fsys, &Artifact{Name: "ns/x", Copy: []ArtifactCopy{{From: "many/**", To: "."}}})
	if !errors.Is(err, errArtifactBudget) {
		t.Fatalf("err %v", err)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// TestReadGenerator: what kdrift refuses in an ArtifactGenerator's
// sources and copy rules.
func TestReadGenerator(t *testing.T) {
	t.Parallel()
	repos := map[string]gitRepository{"flux-system/flux-system": {self: true}, "flux-system/other": {url: "https://elsewhere.example/x.git"}}
	var g artifactGenerator
	doc := `metadata: {name: gen, namespace: flux-system}
spec:
  sources:
  - {alias: repo, kind: GitRepository, name: flux-system}
  - {alias: oci, kind: OCIRepository, name: charts}
  - {alias: far, kind: GitRepository, name: other}
  artifacts:
  - {name: ok, copy: [{from: "@repo/apps/**", to: "@artifact/"}]}
  - {name: oci, copy: [{from: "@oci/**", to: "@artifact/"}]}
  - {name: far, copy: [{from: "@far/x/**", to: "@artifact/"}]}
  - {name: unknown, copy: [{from: "@nope/x", to: "@artifact/"}]}
  - {name: escape, copy: [{from: "@repo/x", to: "@artifact/../../etc/"}]}
  - {name: extract, copy: [{from: "@repo/x.tgz", to: "@artifact/", strategy: Extract}]}
  - {name: noprefix, copy: [{from: "@repo/x", to: "out/"}]}
`
	if err := yaml.Unmarshal([]byte(doc), &g); err != nil {
		t.Fatal(err)
	}
	got := readGenerator(g, "clusters/prod/gen.yaml", repos, nil, "")
	if a := got["flux-system/ok"].artifact; a == nil || len(a.Copy) != 1 || a.Copy[0].From != "apps/**" || a.Copy[0].To != "." || a.Mount() != "@artifacts/flux-system/ok" {
		t.Fatalf("ok: %+v %+v", got["flux-system/ok"].artifact, got["flux-system/ok"].problem)
	}
	for name, want := range map[string]string{
		"oci":      `source "oci" is OCIRepository charts, which kdrift does not read`,
		"far":      "names another repository",
		"unknown":  `names source "nope", which spec.sources does not declare`,
		"escape":   "leaves the artifact",
		"extract":  "is Extract (tarballs)",
		"noprefix": "does not start with @artifact/",
	} {
		p := got["flux-system/"+name].problem
		if p == nil || !strings.Contains(p.problem, want) {
			t.Errorf("%s: %+v, want %q", name, p, want)
		}
	}
}
