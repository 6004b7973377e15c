package cli

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updating says whether -update asks to rewrite the goldens; the flag is
// the golden package's own (TestOwnersCLI uses it), so the --help goldens
// and the others are rewritten by one flag.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// TestHelpGolden: every command's --help (the whole tree, completion's
// shells included) matches its golden in testdata/help, and every command
// but the generated ones has a summary, a description and an example.
// Run with -update to rewrite the goldens after changing a help text.
func TestHelpGolden(t *testing.T) {
	root := newRootCmd(&cliEnv{stdout: &syncBuffer{}, stderr: &syncBuffer{}, name: programName})
	seen := map[string]bool{}
	for _, c := range allCommands(root) {
		if c.Hidden {
			continue
		}
		path := strings.Fields(c.CommandPath())[1:]
		name := strings.Join(append([]string{"kdrift"}, path...), "_")
		seen[name+".golden"] = true
		t.Run(name, func(t *testing.T) {
			generated := len(path) > 0 && (path[0] == "completion" || path[0] == "help")
			if !generated && (c.Short == "" || c.Long == "" || c.Example == "") {
				t.Errorf("%s lacks a Short, Long or Example", c.CommandPath())
			}
			code, out, errOut := kdrift(t, context.Background(), append(path, "--help")...)
			if code != exitOK || errOut != "" {
				t.Fatalf("%s --help: exit %d, stderr %q", c.CommandPath(), code, errOut)
			}
			golden := filepath.Join("testdata", "help", name+".golden")
			if updating() {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v; run go test ./ui/cli -run TestHelpGolden -update to write it", err)
			}
			if out != string(want) {
				t.Errorf("%s --help differs from %s (run with -update after checking it):\n--- got\n%s\n--- want\n%s", c.CommandPath(), golden, out, want)
			}
		})
	}
	files, err := os.ReadDir(filepath.Join("testdata", "help"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !seen[f.Name()] && !updating() {
			t.Errorf("testdata/help/%s belongs to no command: remove it", f.Name())
		}
	}
}

// TestHelpGroups: `kdrift help` is the root's help, listing the commands
// in their groups, in the order of an on-call's day.
func TestHelpGroups(t *testing.T) {
	code, help, _ := kdrift(t, context.Background(), "help")
	_, dashH, _ := kdrift(t, context.Background(), "-h")
	if code != exitOK || help != dashH {
		t.Fatalf("kdrift help (exit %d) differs from kdrift -h:\n%s\n---\n%s", code, help, dashH)
	}
	groups := []struct {
		title    string
		commands []string
	}{
		{"Look at the drift:", []string{"status", "diff", "audit", "owners"}},
		{"Act (each action is a Git commit):", []string{"sync", "freeze", "unfreeze", "revert", "ignore", "push"}},
		{"Run kdrift:", []string{"ui", "controller", "demo", "rbac"}},
	}
	rest := help
	for _, g := range groups {
		i := strings.Index(rest, "\n"+g.title+"\n")
		if i < 0 {
			t.Fatalf("kdrift help lacks the group %q after the previous one:\n%s", g.title, help)
		}
		rest = rest[i+len(g.title)+2:]
		section, _, _ := strings.Cut(rest, "\n\n")
		var got []string
		for _, l := range strings.Split(section, "\n") {
			got = append(got, strings.Fields(l)[0])
		}
		if strings.Join(got, " ") != strings.Join(g.commands, " ") {
			t.Errorf("group %q lists %v, want %v", g.title, got, g.commands)
		}
	}
}

// TestBadUsage: an unknown command or flag, a wrong number of arguments and
// a bad flag value exit 2 with the error and how to get help.
func TestBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"frob"}, []string{`unknown command "frob" for "kdrift"`, "Run 'kdrift --help' for usage."}},
		{[]string{"status", "--bogus"}, []string{"unknown flag: --bogus", "Run 'kdrift status --help' for usage."}},
		{[]string{"diff"}, []string{"diff takes 1 APP name", "Run 'kdrift diff --help' for usage."}},
		{[]string{"diff", "a", "b"}, []string{"got 2 arguments", "Run 'kdrift diff --help' for usage."}},
		{[]string{"freeze", "a", "--for", "soon"}, []string{`invalid argument "soon" for "--for"`, "Run 'kdrift freeze --help' for usage."}},
		{[]string{"revert", "-m"}, []string{"flag needs an argument", "Run 'kdrift revert --help' for usage."}},
		{[]string{"push", "now"}, []string{`push takes no arguments; got ["now"]`, "Run 'kdrift push --help' for usage."}},
		{[]string{"version", "-o", "xml"}, []string{"-o xml: want text, json or yaml", "Run 'kdrift version --help' for usage."}},
		{[]string{"status", "-o", "wide"}, []string{"-o wide: want text, json or yaml", "Run 'kdrift status --help' for usage."}},
		{[]string{"freeze", "x", "--reason", "r", "--output=xml"}, []string{"-o xml: want text, json or yaml", "Run 'kdrift freeze --help' for usage."}},
		{[]string{"--bogus"}, []string{"unknown flag: --bogus", "Run 'kdrift --help' for usage."}},
	} {
		code, out, errOut := kdrift(t, context.Background(), tc.args...)
		if code != exitError || out != "" {
			t.Errorf("kdrift %v: exit %d, stdout %q; want 2 and nothing", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("kdrift %v: stderr lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
}

// TestPluginExamples: called as the kubectl plugin, examples and quoted
// commands read "kubectl kdrift", and prose keeps "kdrift".
func TestPluginExamples(t *testing.T) {
	in := "Stop kdrift here; see \"kdrift status\".\n  kdrift freeze APP\n  # kdrift\n  kdrift"
	want := "Stop kdrift here; see \"kubectl kdrift status\".\n  kubectl kdrift freeze APP\n  # kdrift\n  kubectl kdrift"
	if got := pluginExamples(in, pluginName); got != want {
		t.Fatalf("pluginExamples:\n%s\nwant\n%s", got, want)
	}
	for argv0, want := range map[string]string{"/usr/local/bin/kubectl-kdrift": pluginName, "kdrift": programName} {
		if got, _ := invokedAs(argv0, nil); got != want {
			t.Errorf("invokedAs(%q) = %q, want %q", argv0, got, want)
		}
	}
	if name, args := invokedAs("/x/kubectl_complete-kdrift", []string{"diff", ""}); name != pluginName || strings.Join(args, " ") != "__complete diff " {
		t.Errorf("invokedAs(kubectl_complete-kdrift) = %q %q", name, args)
	}
}

// TestNoColor: every command takes --no-color, and NO_COLOR alone turns
// the colours off too.
func TestNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	for _, args := range [][]string{{"version", "--no-color"}, {"--no-color", "version"}, {"help", "--no-color"}} {
		env := &cliEnv{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
		if code := run(context.Background(), args, env); code != exitOK || !env.colorOff() {
			t.Errorf("kdrift %q: exit %d, colours off %v", args, code, env.colorOff())
		}
	}
	env := &cliEnv{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	if code := run(context.Background(), []string{"version"}, env); code != exitOK || env.colorOff() {
		t.Errorf("without --no-color or NO_COLOR the colours are off")
	}
	t.Setenv("NO_COLOR", "1")
	if !env.colorOff() {
		t.Errorf("NO_COLOR=1 leaves the colours on")
	}
}
