// Package demo builds kdrift's embedded default: a small but real GitOps
// repository for a digital-human service (a render worker, a TTS gateway and
// a session cache, as a Kustomize base with dev, staging and prod overlays),
// a bare "remote" it is pushed to, and a staged incident on a cluster:
//
//   - staging is FROZEN by an earlier on-call (a freeze commit with author
//     and reason) while its render worker runs 12 replicas against Git's 6,
//     set by a kubectl-scale-style manager: drift held on purpose;
//   - dev has self-heal and prune on, and a simulated cloud-controller keeps
//     rewriting an annotation Git sets on the TTS Service: a fight;
//   - prod lets an HPA own the render worker's replicas (ignored by the
//     App), and a ConfigMap key added by hand is healed away at start.
package demo

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

//go:embed all:content
var content embed.FS

// The people and texts of the staged incident.
const (
	// PlatformAuthor wrote the repository's first commit.
	PlatformAuthor = "Ada Platform <ada.platform@example.com>"
	// OnCallAuthor froze staging during INC-1001.
	OnCallAuthor = "Lao Li <lao.li@example.com>"
	// FreezeReason is staging's freeze reason.
	FreezeReason = "INC-1001 render workers 6->12 to stop session timeouts"
	// FightAnnotation is the annotation Git sets on dev's TTS Service and a
	// simulated cloud controller keeps rewriting.
	FightAnnotation = "networking.example.com/lb-pool"
	// CloudController is the simulated controller's field manager.
	CloudController = "cloud-controller"
)

// VoiceModelSubject is the demo's ordinary change to staging, the one the
// tour reverts.
const VoiceModelSubject = "staging: try the neural-v5 voice model on the TTS gateway"

// VoiceModelPatch is appended to staging's kustomization by that change.
const VoiceModelPatch = `  - target:
      kind: Deployment
      name: tts-gateway
    patch: |
      - op: replace
        path: /spec/template/spec/containers/0/env/0/value
        value: neural-v5
`

// App names of the demo.
const (
	AppDev     = "digital-human-dev"
	AppStaging = "digital-human-staging"
	AppProd    = "digital-human-prod"
)

// Apps lists the demo's apps.
var Apps = []string{AppDev, AppStaging, AppProd}

// Namespace is the namespace an environment's objects live in.
func Namespace(env string) string { return "digital-human-" + env }

// Repo is the demo's Git layout on disk.
type Repo struct {
	// Dir holds everything the demo made.
	Dir string
	// Remote is the bare repository the clone pushes to.
	Remote string
	// Clone is the working copy kdrift reads and commits to.
	Clone string
}

// CreateRepo writes the demo repository into dir: a bare remote and a
// clone with one commit holding the GitOps layout, pushed. It uses the git
// command, as a person setting up a repository would.
func CreateRepo(ctx context.Context, dir string) (*Repo, error) {
	r := &Repo{Dir: dir, Remote: filepath.Join(dir, "remote.git"), Clone: filepath.Join(dir, "digital-human")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := git(ctx, dir, nil, "init", "-q", "--bare", "-b", "main", r.Remote); err != nil {
		return nil, err
	}
	if err := git(ctx, dir, nil, "clone", "-q", r.Remote, r.Clone); err != nil {
		return nil, err
	}
	err := fs.WalkDir(content, "content", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "content"), "/")
		if rel == "" {
			return nil
		}
		target := filepath.Join(r.Clone, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := content.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("write the demo layout: %w", err)
	}
	steps := [][]string{
		{"checkout", "-q", "-B", "main"},
		{"config", "user.name", "Demo Newcomer"},
		{"config", "user.email", "newcomer@example.com"},
		{"add", "-A"},
	}
	for _, s := range steps {
		if err := git(ctx, r.Clone, nil, s...); err != nil {
			return nil, err
		}
	}
	if err := commitAs(ctx, r.Clone, PlatformAuthor, time.Now().Add(-26*time.Hour),
		"Add the digital-human service with dev, staging and prod overlays"); err != nil {
		return nil, err
	}
	// A second, ordinary change gives staging's history something to
	// revert: a patch in its own overlay.
	overlay := filepath.Join(r.Clone, "deploy/gitops/overlays/staging/kustomization.yaml")
	data, err := os.ReadFile(overlay)
	if err != nil {
		return nil, err
	}
	data = append(data, []byte(VoiceModelPatch)...)
	if err := os.WriteFile(overlay, data, 0o644); err != nil {
		return nil, err
	}
	if err := git(ctx, r.Clone, nil, "add", "-A"); err != nil {
		return nil, err
	}
	if err := commitAs(ctx, r.Clone, PlatformAuthor, time.Now().Add(-5*time.Hour), VoiceModelSubject); err != nil {
		return nil, err
	}
	if err := git(ctx, r.Clone, nil, "push", "-q", "-u", "origin", "main"); err != nil {
		return nil, err
	}
	return r, nil
}

func commitAs(ctx context.Context, dir, author string, when time.Time, msg string) error {
	name, email, _ := strings.Cut(author, " <")
	email = strings.TrimSuffix(email, ">")
	date := when.UTC().Format(time.RFC3339)
	env := []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email, "GIT_COMMITTER_DATE=" + date,
	}
	return git(ctx, dir, env, "commit", "-q", "-m", msg)
}

func git(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s (in %s): %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}
