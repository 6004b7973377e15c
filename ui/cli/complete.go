package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/source"
	"kdrift.dev/kdrift/internal/gitobj"
)

// Shell completion. Everything here reads local files only: committed Git
// of a repository on disk and the kubeconfig. It never contacts a cluster
// or a Git remote, never renders, and offers nothing (without an error)
// where there is nothing to offer, such as outside a repository.

// completionCommits is how many of the branch's latest commits revert
// offers.
const completionCommits = 50

// completionDurations are what --for and --extend offer: the lengths an
// incident freeze usually has.
var completionDurations = []string{"30m", "1h", "2h", "4h", "8h", "12h", "24h"}

// completionKinds are what --kind offers: the kinds kdrift's deploy/ roles
// cover (README "Running headless in a cluster"), plus the kinds the
// repository's ignore rules already name.
var completionKinds = []string{
	"ConfigMap", "CronJob", "DaemonSet", "Deployment", "HorizontalPodAutoscaler", "Ingress", "Job",
	"Namespace", "NetworkPolicy", "PersistentVolumeClaim", "PodDisruptionBudget", "Service",
	"ServiceAccount", "StatefulSet",
}

// registerCompletions attaches completion to the flags of cmd that have
// one: --context (kubeconfig contexts), -o, --for and --extend
// (durations), --kind. Flags cmd does not have are passed over.
func registerCompletions(cmd *cobra.Command, g *globalFlags) {
	fixed := func(values ...string) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	fns := map[string]cobra.CompletionFunc{
		"context": func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return kubeContexts(g.kubeconfig, toComplete), cobra.ShellCompDirectiveNoFileComp
		},
		"output": fixed(outputFormats...),
		"for":    fixed(completionDurations...),
		"extend": fixed(completionDurations...),
		"kind": func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(kindsOf(c.Context(), g), toComplete), cobra.ShellCompDirectiveNoFileComp
		},
		"branch": func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return withPrefix(branches(g.repo), toComplete), cobra.ShellCompDirectiveNoFileComp
		},
	}
	for name, fn := range fns {
		if cmd.Flags().Lookup(name) != nil {
			// The only error is a flag that does not exist, checked above.
			_ = cmd.RegisterFlagCompletionFunc(name, fn)
		}
	}
}

// completeApps completes APP arguments with the names of the Apps the
// repository declares (a name and, after a tab, its path). multi says
// whether the command takes several; names already given are not offered
// again.
func completeApps(g *globalFlags, multi bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if !multi && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		apps := declaredApps(cmd.Context(), g.repo, g.branch)
		out := make([]cobra.Completion, 0, len(apps))
		for _, a := range apps {
			name := a.Metadata.Name
			// A name kdrift would reject is not offered; the check also keeps
			// a hostile name from breaking the one-per-line protocol.
			if !strings.HasPrefix(name, toComplete) || slices.Contains(args, name) || len(validation.IsDNS1123Subdomain(name)) > 0 {
				continue
			}
			out = append(out, offer(name, appDescription(a)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// appDescription is what the shell shows beside an App's name.
func appDescription(a declaredApp) string {
	d := a.Spec.Path
	if ctx := a.Spec.Destination.Context; ctx != "" {
		d += " → " + ctx
	}
	if a.Spec.Freeze != nil {
		d += " (frozen)"
	}
	return d
}

// completeCommits completes revert's COMMIT with the branch's latest
// commits: the short hash and, after a tab, the subject.
func completeCommits(g *globalFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return recentCommits(cmd.Context(), g.repo, g.branch, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// openLocalRepo opens the repository at location for completion: a path
// on disk only. A URL or a path that does not exist gives nil, since
// completing must never clone or fetch.
func openLocalRepo(ctx context.Context, location, branch string) *source.Repo {
	if location == "" {
		location = "."
	}
	if strings.Contains(location, "://") {
		return nil
	}
	if _, err := os.Stat(location); err != nil {
		return nil
	}
	r, err := source.Open(ctx, source.Options{Location: location, Branch: branch})
	if err != nil {
		return nil
	}
	return r
}

// localHead opens the repository at location (see openLocalRepo) and
// returns it with the hash of the branch's head; nil when either fails.
func localHead(ctx context.Context, location, branch string) (*source.Repo, string) {
	r := openLocalRepo(ctx, location, branch)
	if r == nil {
		return nil, ""
	}
	head, err := r.Head(ctx)
	if err != nil {
		return nil, ""
	}
	return r, head.Hash
}

// declaredApp is what completion reads of an App document: enough to
// offer its name with a description, and the kinds of its ignore rules.
// It is also the form of the completion cache (JSON).
type declaredApp struct {
	APIVersion string `yaml:"apiVersion" json:"apiVersion"`
	Kind       string `yaml:"kind" json:"kind"`
	Metadata   struct {
		Name string `yaml:"name" json:"name"`
	} `yaml:"metadata" json:"metadata"`
	Spec struct {
		Path        string `yaml:"path" json:"path"`
		Destination struct {
			Context string `yaml:"context" json:"context,omitempty"`
		} `yaml:"destination" json:"destination"`
		IgnoreDifferences []struct {
			Kind string `yaml:"kind" json:"kind,omitempty"`
		} `yaml:"ignoreDifferences" json:"ignoreDifferences,omitempty"`
		Freeze *struct{} `yaml:"freeze" json:"freeze,omitempty"`
	} `yaml:"spec" json:"spec"`
}

// declaredApps returns the Apps declared in the .kdrift folder at the head
// of the branch, sorted by name, or nil when there is no local repository.
//
// It decodes each document once, leniently, into declaredApp, rather than
// with app.Parse, which decodes strictly three times over to find every
// mistake with its line. A document that does not decode is passed over;
// `kdrift status` names its problem. What it decoded is kept in the cache
// under the hash of the .kdrift folder's tree, so the next tab press on the
// same App files reads one small file instead of parsing a thousand Apps.
func declaredApps(ctx context.Context, location, branch string) []declaredApp {
	r, head := localHead(ctx, location, branch)
	if r == nil {
		return nil
	}
	key := appsTreeHash(r, head)
	if key == "" {
		return nil // no .kdrift folder: no Apps
	}
	if apps, ok := readAppsCache(key); ok {
		return apps
	}
	snap, err := r.Snapshot(head)
	if err != nil {
		return nil
	}
	entries, err := fs.ReadDir(snap, app.Dir)
	if err != nil {
		return nil
	}
	apps := []declaredApp{}
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := fs.ReadFile(snap, path.Join(app.Dir, e.Name()))
		if err != nil {
			continue
		}
		apps = append(apps, decodeApps(data)...)
	}
	sort.SliceStable(apps, func(i, j int) bool { return apps[i].Metadata.Name < apps[j].Metadata.Name })
	writeAppsCache(key, apps)
	return apps
}

// appsTreeHash is the hash of the .kdrift folder's tree at commit, "" when
// the commit has none.
func appsTreeHash(r *source.Repo, commit string) string {
	c, err := gitobj.Commit(r.Git().Storer, plumbing.NewHash(commit))
	if c == nil || err != nil && !errors.Is(err, gitobj.ErrTooLarge) {
		return ""
	}
	tree, err := c.Tree()
	if err != nil {
		return ""
	}
	e, err := tree.FindEntry(app.Dir)
	if err != nil || e.Mode != filemode.Dir {
		return ""
	}
	return e.Hash.String()
}

// appsCacheVersion changes when declaredApp does, so an older cache is
// never read as a newer one.
const appsCacheVersion = "v1"

// appsCacheKept is how many cached App lists stay; older ones are removed.
const appsCacheKept = 32

// appsCacheDir is where completion keeps what it decoded:
// $XDG_CACHE_HOME/kdrift/completion (or the platform's cache folder).
func appsCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "kdrift", "completion")
}

func appsCacheFile(key string) string {
	dir := appsCacheDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "apps-"+appsCacheVersion+"-"+key+".json")
}

// readAppsCache returns the Apps cached for a .kdrift tree hash.
func readAppsCache(key string) ([]declaredApp, bool) {
	file := appsCacheFile(key)
	if file == "" {
		return nil, false
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	var apps []declaredApp
	if err := json.Unmarshal(data, &apps); err != nil {
		return nil, false
	}
	return apps, true
}

// writeAppsCache keeps apps under key, written whole or not at all, and
// removes the oldest cached lists beyond appsCacheKept. Completion must
// not fail for want of a cache, so errors only mean no cache.
func writeAppsCache(key string, apps []declaredApp) {
	file := appsCacheFile(key)
	if file == "" {
		return
	}
	data, err := json.Marshal(apps)
	if err != nil {
		return
	}
	dir := filepath.Dir(file)
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, ".apps-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		_ = os.Remove(tmp.Name())
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= appsCacheKept {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var files []aged
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "apps-") {
			files = append(files, aged{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.After(files[j].mod) })
	for _, f := range files[min(len(files), appsCacheKept):] {
		_ = os.Remove(filepath.Join(dir, f.name))
	}
}

// decodeApps returns the App documents of one file that have a name; it
// stops at the first document that is not YAML.
func decodeApps(data []byte) []declaredApp {
	var out []declaredApp
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var a declaredApp
		if err := dec.Decode(&a); err != nil {
			var typeErr *yaml.TypeError
			if !errors.As(err, &typeErr) {
				return out // io.EOF, or a syntax error the decoder cannot pass
			}
			continue // a document of the wrong shape
		}
		if a.APIVersion == app.APIVersion && a.Kind == app.Kind && a.Metadata.Name != "" {
			out = append(out, a)
		}
	}
}

// kindsOf is completionKinds and the kinds the repository's ignore rules
// name, sorted and without repeats.
func kindsOf(ctx context.Context, g *globalFlags) []string {
	seen := map[string]bool{}
	for _, k := range completionKinds {
		seen[k] = true
	}
	for _, a := range declaredApps(ctx, g.repo, g.branch) {
		for _, r := range a.Spec.IgnoreDifferences {
			if r.Kind != "" && !strings.ContainsFunc(r.Kind, unicode.IsControl) {
				seen[r.Kind] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// recentCommits are the latest commits of the branch whose hash starts with
// prefix, newest first.
func recentCommits(ctx context.Context, location, branch, prefix string) []cobra.Completion {
	r, head := localHead(ctx, location, branch)
	if r == nil {
		return nil
	}
	// Bounded (gitobj.Walk): a commit past the bound shows no subject.
	var out []cobra.Completion
	n := 0
	_ = gitobj.Walk(r.Git().Storer, plumbing.NewHash(head), func(c *object.Commit, _ error) error {
		if n++; n > completionCommits {
			return storer.ErrStop
		}
		hash := c.Hash.String()[:12]
		if !strings.HasPrefix(hash, prefix) {
			return nil
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		desc := strings.TrimSpace(subject) + " (" + c.Author.Name + ", " + c.Author.When.Format(time.DateOnly) + ")"
		out = append(out, offer(hash, desc))
		return nil
	})
	return out
}

// branches are the local branches of the repository.
func branches(location string) []string {
	r := openLocalRepo(context.Background(), location, "")
	if r == nil {
		return nil
	}
	iter, err := r.Git().Branches()
	if err != nil {
		return nil
	}
	var out []string
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		out = append(out, ref.Name().Short())
		return nil
	})
	sort.Strings(out)
	return out
}

// kubeContexts are the contexts of the kubeconfig (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config) that start with prefix, each with its
// cluster and namespace. It reads the files only; it connects to nothing.
func kubeContexts(kubeconfig, prefix string) []cobra.Completion {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := rules.Load()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(cfg.Contexts))
	for name := range cfg.Contexts {
		if strings.HasPrefix(name, prefix) && !strings.ContainsFunc(name, unicode.IsControl) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]cobra.Completion, 0, len(names))
	for _, name := range names {
		c := cfg.Contexts[name]
		desc := "cluster " + c.Cluster
		if c.Namespace != "" {
			desc += ", namespace " + c.Namespace
		}
		if name == cfg.CurrentContext {
			desc += " (current)"
		}
		out = append(out, offer(name, desc))
	}
	return out
}

// offer is one completion: value and, after a tab, desc, whose control
// characters become spaces (a newline would start another completion in
// cobra's protocol, and a repository is untrusted).
func offer(value, desc string) cobra.Completion {
	desc = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, desc)
	return cobra.CompletionWithDesc(value, desc)
}

// withPrefix is the values that start with prefix.
func withPrefix(values []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}
