package forge

import (
	"reflect"
	"strings"
	"testing"
)

const sampleOwners = `# default owners
*       @org/platform
*.md    @docs-team   # trailing comment
/apps/shop/        @alice @org/shop
apps/*/kustomization.yaml @bob
docs/*  @writer
**/secrets/** @security
/build/logs  @ops
file\ with\ space @spacer
apps/legacy/  # no owners: unowned

[Database][2] @dba
db/**
/apps/shop/db.yaml @carol

^[Optional docs]
*.md @reviewers
`

func TestCodeownersLastMatchWinsPerSection(t *testing.T) {
	c, err := ParseCodeowners("CODEOWNERS", []byte(sampleOwners))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 0 {
		t.Fatalf("problems: %v", c.Problems)
	}
	owners := func(p string) map[string][]string {
		out := map[string][]string{}
		for _, o := range c.Owners(p) {
			out[o.Section] = o.Owners
		}
		return out
	}
	cases := []struct {
		path string
		want map[string][]string
	}{
		{"main.go", map[string][]string{"": {"@org/platform"}}},
		{"README.md", map[string][]string{"": {"@docs-team"}, "Optional docs": {"@reviewers"}}},
		{"apps/shop/deploy.yaml", map[string][]string{"": {"@alice", "@org/shop"}}},
		{"apps/shop/kustomization.yaml", map[string][]string{"": {"@bob"}}},
		{"apps/shop/db.yaml", map[string][]string{"": {"@alice", "@org/shop"}, "Database": {"@carol"}}},
		{"db/schema/x.sql", map[string][]string{"": {"@org/platform"}, "Database": {"@dba"}}},
		{"docs/a.txt", map[string][]string{"": {"@writer"}}},
		{"docs/sub/a.txt", map[string][]string{"": {"@org/platform"}}}, // docs/* is one level only
		{"x/secrets/y/z", map[string][]string{"": {"@security"}}},
		{"build/logs/today.log", map[string][]string{"": {"@ops"}}},
		{"file with space", map[string][]string{"": {"@spacer"}}},
		{"apps/legacy/x.yaml", map[string][]string{}},
		{"other/build/logs", map[string][]string{"": {"@org/platform"}}}, // /build/logs is anchored
	}
	for _, tc := range cases {
		if got := owners(tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.path, got, tc.want)
		}
	}
	var db Section
	for _, s := range c.Sections {
		if s.Name == "Database" {
			db = s
		}
	}
	if db.Approvals != 2 || db.Optional || !reflect.DeepEqual(db.Defaults, []string{"@dba"}) {
		t.Errorf("Database section = %+v", db)
	}
	if got := c.RequiredOwners([]string{"README.md", "apps/shop/db.yaml"}); !reflect.DeepEqual(got, []string{"@alice", "@carol", "@docs-team", "@org/shop"}) {
		t.Errorf("required owners = %v (optional sections must not count)", got)
	}
}

func TestCodeownersDirOnlyAndBadLines(t *testing.T) {
	c, err := ParseCodeowners("CODEOWNERS", []byte("logs/ @a\n!neg @b\n[bad @c\nx/../y @d\n/ @root\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) != 3 {
		t.Fatalf("want 3 problems (negation, bad glob, ..), got %v", c.Problems)
	}
	if o := c.Owners("logs"); len(o) != 1 || o[0].Owners[0] != "@root" {
		t.Errorf("a file named logs is not the directory logs/: %v", o)
	}
	if o := c.Owners("a/logs/x"); len(o) != 1 || o[0].Owners[0] != "@root" {
		// "/" comes last and wins.
		t.Errorf("a/logs/x: %v", o)
	}
	if _, err := ParseCodeowners("CODEOWNERS", make([]byte, MaxCodeownersSize+1)); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("an oversized file must be refused, got %v", err)
	}
}

// FuzzCodeowners: a committed CODEOWNERS is hostile input; parsing and
// matching never panic, and many "**" do not blow up matching.
func FuzzCodeowners(f *testing.F) {
	f.Add(sampleOwners, "apps/shop/db.yaml")
	f.Add("**/**/**/**/**/**/**/a @x\n", strings.Repeat("b/", 200)+"a")
	f.Add("[S][9999] @a\n^[T]\n*.y?ml @b\n[z-a] @c\n", "x.yaml")
	f.Fuzz(func(t *testing.T, file, p string) {
		c, err := ParseCodeowners("CODEOWNERS", []byte(file))
		if err != nil {
			return
		}
		for _, o := range c.Owners(p) {
			if len(o.Owners) == 0 {
				t.Fatalf("an ownership with no owners for %q", p)
			}
		}
		_ = c.RequiredOwners([]string{p})
	})
}
