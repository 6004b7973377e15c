package live

// ContextServers lists the contexts of the kubeconfig at path (empty: the
// default loading rules) with their cluster's server URL, by context
// name; a context whose cluster is missing is left out.
func ContextServers(kubeconfig string) (map[string]string, error) {
	_, raw, err := loadKubeconfig(kubeconfig, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(raw.Contexts))
	for name, c := range raw.Contexts {
		if cl, ok := raw.Clusters[c.Cluster]; ok && cl.Server != "" {
			out[name] = cl.Server
		}
	}
	return out, nil
}
