package render

// SetTestSandbox switches, for tests only, the guard of kustomizations
// off (guard false), the render worker off (inProcess) and the misbehaviour
// of a test binary's worker per App folder (hook, nil for none).
func SetTestSandbox(r *Renderer, guard, inProcess bool, hook func(dir string) string) {
	r.noGuard, r.inProcess, r.testHook = !guard, inProcess, hook
}
