package actions

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"kdrift.dev/kdrift/engine/app"
)

// IgnoreRequest asks to add an ignoreDifferences rule to an app.
type IgnoreRequest struct {
	App    string
	Rule   app.IgnoreRule
	Reason string
	// Typed says the rule's kind and group are as a person typed them
	// (deploy, deployments): they are resolved against the objects the App
	// renders, the group written, and a rule that covers none of them is
	// refused with the candidates.
	Typed bool
}

// ValidateJSONPointer checks a JSON pointer per RFC 6901: empty is refused
// here (it would ignore the whole object), otherwise it starts with "/" and
// every "~" is followed by "0" or "1".
func ValidateJSONPointer(p string) error {
	if p == "" {
		return fmt.Errorf("JSON pointer is empty: it would ignore the whole object; name a field such as /spec/replicas")
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("JSON pointer %q must start with \"/\" (for example /spec/replicas)", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("JSON pointer %q: \"~\" must be written ~0, and \"/\" inside a key ~1 (RFC 6901)", p)
		}
	}
	return nil
}

func (req IgnoreRequest) validate() error {
	r := req.Rule
	if strings.TrimSpace(req.App) == "" {
		return fmt.Errorf("no app named: pass the APP to add the rule to")
	}
	if strings.TrimSpace(r.Kind) == "" {
		return fmt.Errorf("--kind is required (the kind of object the rule covers, e.g. Deployment)")
	}
	if len(r.JSONPointers) == 0 && len(r.ManagedFieldsManagers) == 0 {
		return fmt.Errorf("pass --json-pointer P (a field) or --manager M (a field manager whose fields Git does not own)")
	}
	for _, p := range r.JSONPointers {
		if err := ValidateJSONPointer(p); err != nil {
			return err
		}
	}
	for _, m := range r.ManagedFieldsManagers {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("--manager is blank")
		}
	}
	return nil
}

// duplicateOf says which existing rule (1-based) already ignores what r
// asks for, or 0.
func duplicateOf(existing []app.IgnoreRule, r app.IgnoreRule) int {
	for i, e := range existing {
		if e.Group != r.Group || e.Kind != r.Kind || e.Name != r.Name || e.Namespace != r.Namespace {
			continue
		}
		all := true
		for _, p := range r.JSONPointers {
			all = all && slices.Contains(e.JSONPointers, p)
		}
		for _, m := range r.ManagedFieldsManagers {
			all = all && slices.Contains(e.ManagedFieldsManagers, m)
		}
		if all {
			return i + 1
		}
	}
	return 0
}

// DescribeRule says in one line what an ignore rule covers:
// "Deployment.apps/prod/web /spec/replicas, fields of hpa".
func DescribeRule(r app.IgnoreRule) string {
	target := r.Kind
	if r.Group != "" {
		target = r.Kind + "." + r.Group
	}
	if r.Namespace != "" || r.Name != "" {
		target += "/" + r.Namespace + "/" + r.Name
	}
	var what []string
	what = append(what, r.JSONPointers...)
	for _, m := range r.ManagedFieldsManagers {
		what = append(what, "fields of "+m)
	}
	return target + " " + strings.Join(what, ", ")
}

// Ignore appends an ignoreDifferences rule to an app in one commit; a rule
// that an existing one already covers is refused.
func (r *Repo) Ignore(ctx context.Context, req IgnoreRequest) (Result, error) {
	reason, err := cleanReason(req.Reason)
	if err != nil {
		return Result{}, err
	}
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	return r.commit(ctx, func(s *snapshot) (*plan, error) {
		a, err := loadApp(s, req.App)
		if err != nil {
			return nil, err
		}
		if req.Typed {
			objs, kinds, err := appObjects(ctx, s, a)
			if err != nil {
				return nil, err
			}
			if req.Rule, err = resolveKind(a.Metadata.Name, a.Spec.Destination.Namespace, req.Rule, objs, kinds); err != nil {
				return nil, err
			}
		}
		if n := duplicateOf(a.Spec.IgnoreDifferences, req.Rule); n > 0 {
			return nil, fmt.Errorf("App %s already ignores %s (rule %d of %s in %s); nothing to add", a.Metadata.Name, DescribeRule(req.Rule), n, app.ToolOf(a.Origin).Edits().IgnoreField(), a.File)
		}
		rule := req.Rule
		p := &plan{apps: []string{a.Metadata.Name}, rule: &rule}
		if err := editApps(s, p, []app.App{a}, func(src []byte, a app.App) ([]byte, error) {
			if a.Origin != nil {
				return appendOwnedIgnore(src, a, req.Rule)
			}
			return appendIgnoreRule(src, a.Metadata.Name, req.Rule)
		}); err != nil {
			return nil, err
		}
		p.msg = message{Subject: subjectFor(ActionIgnore, p.apps, reason), Body: reason, Trailers: actionTrailers(ActionIgnore, p.apps)}
		return p, nil
	})
}
