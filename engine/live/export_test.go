package live

import "k8s.io/client-go/rest"

// SetInClusterConfig stands in for a Pod's mounted ServiceAccount files
// and returns a function that restores the real reader.
func SetInClusterConfig(f func() (*rest.Config, error)) (restore func()) {
	old := inClusterConfig
	inClusterConfig = f
	return func() { inClusterConfig = old }
}

// Informers counts the informers the watcher runs.
func (w *Watcher) Informers() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.informers)
}
