package actions

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/config"
)

// Identity is the person an action is recorded for: the commit's author and
// committer.
type Identity struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// String renders the identity as "Name <email>".
func (i Identity) String() string { return fmt.Sprintf("%s <%s>", i.Name, i.Email) }

var identityRE = regexp.MustCompile(`^\s*([^<>]*[^<>\s])\s*<([^<>\s]+@[^<>\s]+)>\s*$`)

// ParseIdentity reads "Name <email>".
func ParseIdentity(s string) (Identity, error) {
	m := identityRE.FindStringSubmatch(s)
	if m == nil {
		return Identity{}, fmt.Errorf("author %q: want \"Name <email>\", e.g. \"Lao Li <lao.li@example.com>\"", s)
	}
	return Identity{Name: strings.Trim(m[1], "\""), Email: m[2]}, nil
}

// Identity settles who the action is recorded for: RepoOptions.Author, then
// KDRIFT_AUTHOR, then git config user.name and user.email (the
// repository's, then the global one).
func (r *Repo) Identity() (Identity, error) {
	if r.opts.Author != "" {
		return ParseIdentity(r.opts.Author)
	}
	if env := r.opts.Getenv("KDRIFT_AUTHOR"); env != "" {
		id, err := ParseIdentity(env)
		if err != nil {
			return Identity{}, fmt.Errorf("KDRIFT_AUTHOR: %w", err)
		}
		return id, nil
	}
	cfg, err := r.git.ConfigScoped(config.GlobalScope)
	if err != nil {
		return Identity{}, fmt.Errorf("repository %s: git config read failed: %w", r.location, err)
	}
	if cfg.User.Name != "" && cfg.User.Email != "" {
		return Identity{Name: cfg.User.Name, Email: cfg.User.Email}, nil
	}
	return Identity{}, fmt.Errorf("no identity to record this action under: set one with `git config user.name \"Your Name\"` and `git config user.email you@example.com`, or pass --author \"Name <email>\", or set KDRIFT_AUTHOR")
}
