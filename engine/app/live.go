package app

import (
	"fmt"
	"sort"
	"strings"
)

// addLive adds to res the live declarations of kind (objects as read
// from the cluster of kubeconfig context) that read maps, those it says
// are of this repository, when no declaration of the repository already
// gives their NAMESPACE/NAME or NAME (valid or not: Git's declaration is
// what kdrift renders). Each added App's origin is the cluster; a name
// Git's apps already use is shown as NAMESPACE/NAME. It returns the new
// result (res is not modified) and how many it added.
func addLive(res LoadResult, live []map[string]any, context, kind string, read func(obj map[string]any) (found, bool)) (LoadResult, int) {
	known := map[string]bool{}
	names := map[string]bool{}
	for _, a := range res.Apps {
		names[a.Metadata.Name] = true
		if a.Origin != nil && a.Origin.Kind == kind {
			known[a.Origin.QualifiedName()] = true
		}
	}
	for _, in := range res.Invalid {
		names[in.Name] = true
		known[in.Name] = true // a broken declaration of this NAMESPACE/NAME, or of NAME
	}
	out := LoadResult{Apps: append([]App(nil), res.Apps...), Invalid: append([]Invalid(nil), res.Invalid...), Flux: res.Flux}
	sort.SliceStable(live, func(i, j int) bool { return liveKey(live[i]) < liveKey(live[j]) })
	added := 0
	for i, obj := range live {
		if i >= MaxLiveApplications {
			break
		}
		key := liveKey(obj)
		ns, name, _ := strings.Cut(key, "/")
		if name == "" || known[key] || known[name] {
			continue
		}
		f, ours := read(obj)
		if !ours {
			continue
		}
		where := fmt.Sprintf("live in the cluster of %s (not in Git)", contextName(context))
		shown := name
		if names[name] {
			shown = ns + "/" + name
		}
		names[shown] = true
		if f.app != nil {
			f.app.Origin.Live, f.app.Origin.LiveContext = true, context
			f.app.Metadata.Name = shown
			out.Apps = append(out.Apps, *f.app)
		} else if f.invalid != nil {
			in := *f.invalid
			in.Name, in.File = shown, where
			if e, ok := in.Err.(*Error); ok {
				e.File, e.App = where, shown
			}
			out.Invalid = append(out.Invalid, in)
		}
		added++
	}
	sort.SliceStable(out.Apps, func(i, j int) bool { return out.Apps[i].Metadata.Name < out.Apps[j].Metadata.Name })
	sort.SliceStable(out.Invalid, func(i, j int) bool { return out.Invalid[i].Name < out.Invalid[j].Name })
	return out, added
}
