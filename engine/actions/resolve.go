package actions

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/render"
)

// objectID names one object an App renders.
type objectID struct {
	Group, Kind, Namespace, Name string
}

func (o objectID) ref() app.ResourceRef {
	return app.ResourceRef{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// kindNames are the names kubectl accepts for one kind: its plural,
// singular and short names.
type kindNames struct {
	Group, Kind string
	Plural      string
	Short       []string
	Namespaced  bool
}

// builtinKinds are the built-in kinds with the names kubectl's discovery
// gives them, so that deploy/web means Deployment.apps/web even when no
// cluster is reachable. Kinds of custom resources come from the App's own
// objects and the CustomResourceDefinitions it renders.
var builtinKinds = []kindNames{
	{Group: "", Kind: "Pod", Plural: "pods", Short: []string{"po"}},
	{Group: "", Kind: "Service", Plural: "services", Short: []string{"svc"}},
	{Group: "", Kind: "ConfigMap", Plural: "configmaps", Short: []string{"cm"}},
	{Group: "", Kind: "Secret", Plural: "secrets", Short: nil},
	{Group: "", Kind: "ServiceAccount", Plural: "serviceaccounts", Short: []string{"sa"}},
	{Group: "", Kind: "PersistentVolumeClaim", Plural: "persistentvolumeclaims", Short: []string{"pvc"}},
	{Group: "", Kind: "PersistentVolume", Plural: "persistentvolumes", Short: []string{"pv"}},
	{Group: "", Kind: "Namespace", Plural: "namespaces", Short: []string{"ns"}},
	{Group: "", Kind: "Endpoints", Plural: "endpoints", Short: []string{"ep"}},
	{Group: "", Kind: "LimitRange", Plural: "limitranges", Short: []string{"limits"}},
	{Group: "", Kind: "ResourceQuota", Plural: "resourcequotas", Short: []string{"quota"}},
	{Group: "", Kind: "ReplicationController", Plural: "replicationcontrollers", Short: []string{"rc"}},
	{Group: "apps", Kind: "Deployment", Plural: "deployments", Short: []string{"deploy"}},
	{Group: "apps", Kind: "StatefulSet", Plural: "statefulsets", Short: []string{"sts"}},
	{Group: "apps", Kind: "DaemonSet", Plural: "daemonsets", Short: []string{"ds"}},
	{Group: "apps", Kind: "ReplicaSet", Plural: "replicasets", Short: []string{"rs"}},
	{Group: "batch", Kind: "Job", Plural: "jobs", Short: nil},
	{Group: "batch", Kind: "CronJob", Plural: "cronjobs", Short: []string{"cj"}},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler", Plural: "horizontalpodautoscalers", Short: []string{"hpa"}},
	{Group: "policy", Kind: "PodDisruptionBudget", Plural: "poddisruptionbudgets", Short: []string{"pdb"}},
	{Group: "networking.k8s.io", Kind: "Ingress", Plural: "ingresses", Short: []string{"ing"}},
	{Group: "networking.k8s.io", Kind: "IngressClass", Plural: "ingressclasses", Short: nil},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy", Plural: "networkpolicies", Short: []string{"netpol"}},
	{Group: "rbac.authorization.k8s.io", Kind: "Role", Plural: "roles", Short: nil},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding", Plural: "rolebindings", Short: nil},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Plural: "clusterroles", Short: nil},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Plural: "clusterrolebindings", Short: nil},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Plural: "customresourcedefinitions", Short: []string{"crd", "crds"}},
	{Group: "storage.k8s.io", Kind: "StorageClass", Plural: "storageclasses", Short: []string{"sc"}},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass", Plural: "priorityclasses", Short: []string{"pc"}},
	{Group: "coordination.k8s.io", Kind: "Lease", Plural: "leases", Short: nil},
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Plural: "validatingwebhookconfigurations", Short: nil},
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", Plural: "mutatingwebhookconfigurations", Short: nil},
}

// builtins are builtinKinds with their scope.
func builtins() []kindNames {
	out := make([]kindNames, len(builtinKinds))
	for i, k := range builtinKinds {
		k.Namespaced = !clusterScoped[k.Group+"/"+k.Kind]
		out[i] = k
	}
	return out
}

// appObjects renders App a at the snapshot's commit and lists its objects
// and the kinds they and the CustomResourceDefinitions among them name.
func appObjects(ctx context.Context, s *snapshot, a app.App) ([]objectID, []kindNames, error) {
	snap, err := s.repo.snapshotOf(s.commit)
	if err != nil {
		return nil, nil, err
	}
	objs, err := render.NewRenderer().RenderApp(ctx, snap, a.Spec.Path, a.RenderHelm())
	if err != nil {
		return nil, nil, fmt.Errorf("App %s: its objects cannot be listed to check the reference (render %s: %w); fix the render first", a.Metadata.Name, a.Spec.Path, err)
	}
	objs, _ = app.WithoutHooks(objs)
	ids, kinds := objectsOf(objs)
	return ids, kinds, nil
}

// objectsOf names the objects and the kinds of custom resources the
// CustomResourceDefinitions among them define.
func objectsOf(objs []*unstructured.Unstructured) ([]objectID, []kindNames) {
	var ids []objectID
	kinds := builtins()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		ids = append(ids, objectID{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()})
		if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
			singular, _, _ := unstructured.NestedString(o.Object, "spec", "names", "singular")
			short, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "names", "shortNames")
			scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
			if kind != "" {
				if singular != "" {
					short = append(short, singular)
				}
				kinds = append(kinds, kindNames{Group: group, Kind: kind, Plural: plural, Short: short, Namespaced: scope != "Cluster"})
			}
		}
	}
	return ids, kinds
}

// clusterScoped are the built-in kinds that live in no namespace.
var clusterScoped = map[string]bool{
	"/Namespace": true, "/PersistentVolume": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"apiextensions.k8s.io/CustomResourceDefinition": true, "storage.k8s.io/StorageClass": true,
	"scheduling.k8s.io/PriorityClass": true, "networking.k8s.io/IngressClass": true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":   true,
}

// namespaced reports whether kind k of group g is known to live in a
// namespace: a built-in kind, or a custom one whose definition the App
// renders. An unknown kind is not: its reference keeps no namespace and
// matches it in the destination namespace or cluster-wide.
func namespaced(g, k string, kinds []kindNames) bool {
	for _, kn := range kinds {
		if kn.Group == g && kn.Kind == k {
			return kn.Namespaced
		}
	}
	return false
}

// kindMatches reports whether typed names kind k of group g as kubectl
// reads it: the kind, its plural, singular or a short name, in any case.
// A kind no table knows is matched by its own name and a plural in s.
func kindMatches(typed, g, k string, kinds []kindNames) bool {
	t := strings.ToLower(typed)
	if t == strings.ToLower(k) {
		return true
	}
	for _, kn := range kinds {
		if kn.Group != g || kn.Kind != k {
			continue
		}
		if t == kn.Plural {
			return true
		}
		for _, s := range kn.Short {
			if t == strings.ToLower(s) {
				return true
			}
		}
		return false
	}
	return t == strings.ToLower(k)+"s"
}

// describeQuery says what a query asked for, for an error.
func describeQuery(q app.ResourceQuery) string {
	s := q.Kind + "/" + q.Name
	if q.GroupGiven {
		g := q.Group
		if g == "" {
			g = "core"
		}
		s += " in the " + g + " group"
	}
	if q.Namespace != "" {
		s += " in namespace " + q.Namespace
	}
	return s
}

// resolveQuery resolves a reference typed the way kubectl takes it to the
// one object of the App it names, with its group and, when fillNS, its
// namespace (the destination namespace for a namespaced kind the render
// leaves without one; none for a kind of unknown scope, which then
// matches in the destination namespace or cluster-wide). A reference that names no object, or
// more than one, is refused with the candidates.
func resolveQuery(appName, destNS string, q app.ResourceQuery, objs []objectID, kinds []kindNames, fillNS bool) (app.ResourceRef, error) {
	if destNS == "" {
		destNS = "default"
	}
	nsOf := func(o objectID) string {
		if o.Namespace == "" {
			return destNS
		}
		return o.Namespace
	}
	var hits []objectID
	for _, o := range objs {
		if o.Name != q.Name || (q.GroupGiven && o.Group != q.Group) || !kindMatches(q.Kind, o.Group, o.Kind, kinds) {
			continue
		}
		if q.Namespace != "" && nsOf(o) != q.Namespace {
			continue
		}
		hits = append(hits, o)
	}
	switch len(hits) {
	case 1:
		r := hits[0].ref()
		if fillNS && r.Namespace == "" && namespaced(r.Group, r.Kind, kinds) {
			r.Namespace = destNS
		}
		return r, nil
	case 0:
		return app.ResourceRef{}, fmt.Errorf("App %s renders no %s%s", appName, describeQuery(q), suggest(q, objs, kinds))
	}
	var names []string
	for _, h := range hits {
		names = append(names, h.ref().String())
	}
	sort.Strings(names)
	return app.ResourceRef{}, fmt.Errorf("App %s: %s names %d objects (%s); name one with its group and --namespace", appName, describeQuery(q), len(hits), strings.Join(names, ", "))
}

// suggest is "; did you mean …?" with the objects closest to q: the same
// name under another group or kind, else other objects of the kind.
func suggest(q app.ResourceQuery, objs []objectID, kinds []kindNames) string {
	var same, named, ofKind []string
	for _, o := range objs {
		r := o.ref().String()
		kind := kindMatches(q.Kind, o.Group, o.Kind, kinds)
		switch {
		case o.Name == q.Name && kind:
			same = append(same, r)
		case o.Name == q.Name && q.Name != "":
			named = append(named, r)
		case kind:
			ofKind = append(ofKind, r)
		}
	}
	pick := same
	for _, more := range [][]string{named, ofKind} {
		if len(pick) == 0 {
			pick = more
		}
	}
	if len(pick) == 0 {
		var all []string
		for _, o := range objs {
			all = append(all, o.ref().String())
		}
		sort.Strings(all)
		if len(all) > 8 {
			all = append(all[:8], fmt.Sprintf("and %d more", len(all)-8))
		}
		if len(all) == 0 {
			return "; it renders no objects"
		}
		return "; it renders " + strings.Join(all, ", ")
	}
	sort.Strings(pick)
	if len(pick) > 8 {
		pick = append(pick[:8], fmt.Sprintf("and %d more", len(pick)-8))
	}
	return "; did you mean " + strings.Join(pick, " or ") + "?"
}

// resolveKind resolves an ignore rule's kind (and group, when given) the
// way kubectl reads it, to the kind and group of the App's objects; its
// name and namespace, when given, must match one of them. A rule that
// would cover no object of the App is refused with the candidates.
func resolveKind(appName, destNS string, r app.IgnoreRule, objs []objectID, kinds []kindNames) (app.IgnoreRule, error) {
	if destNS == "" {
		destNS = "default"
	}
	q := app.ResourceQuery{Kind: r.Kind, Group: r.Group, GroupGiven: r.Group != "", Namespace: r.Namespace, Name: r.Name}
	type gk struct{ g, k string }
	found := map[gk]bool{}
	for _, o := range objs {
		if (q.GroupGiven && o.Group != q.Group) || !kindMatches(q.Kind, o.Group, o.Kind, kinds) {
			continue
		}
		ns := o.Namespace
		if ns == "" {
			ns = destNS
		}
		if (r.Name != "" && o.Name != r.Name) || (r.Namespace != "" && ns != r.Namespace) {
			continue
		}
		found[gk{o.Group, o.Kind}] = true
	}
	if len(found) == 0 {
		what := q.Kind
		if q.GroupGiven {
			what += "." + q.Group
		}
		if r.Name != "" || r.Namespace != "" {
			what += " named " + strings.Trim(r.Namespace+"/"+r.Name, "/")
		}
		hint := suggest(app.ResourceQuery{Kind: q.Kind, Name: r.Name}, objs, kinds)
		return r, fmt.Errorf("App %s renders no %s, so the rule would ignore nothing%s", appName, what, hint)
	}
	if len(found) > 1 {
		var names []string
		for k := range found {
			names = append(names, k.k+"."+k.g)
		}
		sort.Strings(names)
		return r, fmt.Errorf("App %s: --kind %s names %s; pass --group to pick one", appName, r.Kind, strings.Join(names, " and "))
	}
	for k := range found {
		r.Kind, r.Group = k.k, k.g
	}
	return r, nil
}
