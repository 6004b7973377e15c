package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	flag "github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/leader"
	"kdrift.dev/kdrift/engine/publish"
)

// followFlags choose between the leader's published statuses and a
// compare of this process's own.
type followFlags struct {
	lease leaseFlags
	live  bool
}

func (f *followFlags) register(fs *flag.FlagSet) {
	f.lease.registerNamespace(fs)
	fs.BoolVar(&f.live, "live", false, "compare from here even when the repository's leader publishes fresh statuses (AppStatus objects)")
}

// readPublished reads the statuses the repository's leader publishes,
// when a live leader holds the Lease and has published every App asked
// for (every App when names is empty): one GET of the Lease and one LIST
// of the AppStatuses, no compare. ok is false otherwise (no cluster, no
// CRD, no leader, an App not published, --context or --chart-repo given:
// the leader fetched charts with its own flags, not this command's), and
// the caller compares itself. note says whom the statuses come from.
func readPublished(ctx context.Context, g *globalFlags, f *followFlags, e engine.RepoInfo, names []string) (apps []publish.Published, note string, ok bool) {
	if f.live || g.context != "" || len(g.chartRepos) > 0 || g.clients == nil {
		return nil, "", false
	}
	// The engine's clients of that context (openEngine): one connection,
	// which the engine may have opened already (engine.Runner.Warm).
	home, err := g.clients.For(g.context)
	if err != nil {
		return nil, "", false
	}
	cs, dyn, err := homeClientsOf(home)
	if err != nil {
		return nil, "", false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	id := e.RepoIdentity()
	obs, err := leader.Observe(ctx, cs, f.lease.Namespace(), id)
	if err != nil || !obs.Live(time.Now()) {
		return nil, "", false
	}
	list, err := dyn.Resource(publish.GVR).Namespace(f.lease.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: leader.LabelRepo + "=" + leader.Hash(id)})
	if err != nil {
		return nil, "", false
	}
	byName := map[string]publish.Published{}
	for i := range list.Items {
		p, err := publish.Decode(&list.Items[i])
		if err != nil || p.Repository != id {
			continue
		}
		byName[p.Name] = p
	}
	if len(names) == 0 {
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	if len(names) == 0 {
		return nil, "", false
	}
	for _, n := range names {
		a, found := byName[n]
		if !found {
			return nil, "", false
		}
		apps = append(apps, a)
	}
	return apps, FollowingNote(obs), true
}

// FollowingNote is the line that says whom a viewer follows.
func FollowingNote(o leader.Observation) string {
	return fmt.Sprintf("following %s/%s, leader since %s (published statuses; --live compares from here)", o.Namespace, o.Holder, o.Since.Local().Format("15:04"))
}
