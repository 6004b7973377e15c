package app

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// contextOf maps an Application's destination.server to the kubeconfig
// context whose cluster has that server URL (compared normalized, see
// NormalizeServer). When several contexts do, the one named name is
// taken; name may not name a context of another server. clustersErr is
// why clusters is empty, if the kubeconfig could not be read.
func contextOf(server, name string, clusters map[string]string, clustersErr error) (string, *problem) {
	if clusters == nil && name != "" {
		return name, nil // no kubeconfig to check the name against
	}
	want := NormalizeServer(server)
	var matches []string
	for ctx, s := range clusters {
		if NormalizeServer(s) == want {
			matches = append(matches, ctx)
		}
	}
	slices.Sort(matches)
	switch {
	case name != "" && slices.Contains(matches, name):
		return name, nil
	case name != "":
		return "", &problem{"spec.destination.name", fmt.Sprintf("context %q is not one whose cluster is server %s (contexts of that server: %s)", name, server, listOrNone(matches)),
			"set spec.destination.name to one of them, or drop it and keep spec.destination.server"}
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) == 0:
		why := ""
		if clustersErr != nil {
			why = " (" + clustersErr.Error() + ")"
		}
		return "", &problem{"spec.destination.server", fmt.Sprintf("server %s is the cluster of no kubeconfig context%s, and kdrift reaches clusters through contexts", server, why),
			fmt.Sprintf("add one: kubectl config set-cluster NAME --server=%s && kubectl config set-context NAME --cluster=NAME --user=USER (or set spec.destination.name to an existing context)", server)}
	}
	return "", &problem{"spec.destination.server", fmt.Sprintf("server %s is the cluster of several kubeconfig contexts: %s", server, strings.Join(matches, ", ")),
		"set spec.destination.name to the one kdrift should use"}
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// NormalizeServer is the form two apiserver URLs are compared in: scheme
// and host in lower case, the scheme's default port and a trailing slash
// dropped. A string that is not a URL is only trimmed.
func NormalizeServer(s string) string {
	s = strings.TrimSpace(s)
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return strings.TrimRight(s, "/")
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]" // an IPv6 literal
	}
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
}
