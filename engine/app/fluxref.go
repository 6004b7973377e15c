package app

import (
	"strings"

	yaml3 "gopkg.in/yaml.v3"
)

// gitRef is what a GitRepository's spec.ref (as its fields: branch, tag,
// semver, name, commit) follows, in gitRepository.ref's form: the branch
// name, or "KIND VALUE" for a ref that is no branch head. source-controller
// takes commit first, then name, semver, tag and branch; a ref of
// refs/heads/NAME is branch NAME. A GitRepository without a ref is ""
// (kdrift then compares its URL alone: it cannot see the remote's default
// branch).
func gitRef(field func(string) string) string {
	switch {
	case field("commit") != "":
		return "commit " + field("commit")
	case field("name") != "":
		if b, ok := strings.CutPrefix(field("name"), "refs/heads/"); ok {
			return b
		}
		return "ref " + field("name")
	case field("semver") != "":
		return "semver " + field("semver")
	case field("tag") != "":
		return "tag " + field("tag")
	}
	return field("branch")
}

// gitRefOf is gitRef of a spec.ref node (nil for none).
func gitRefOf(ref *yaml3.Node) string {
	return gitRef(func(k string) string { return strings.TrimSpace(scalar(lookup(ref, k))) })
}

// GitRefOf is gitRef of a live GitRepository's spec.ref, as decoded from
// JSON (nil for none): what FluxCluster.Refs holds.
func GitRefOf(ref map[string]any) string {
	return gitRef(func(k string) string {
		s, _ := ref[k].(string)
		return strings.TrimSpace(s)
	})
}

// DescribeRef is a ref GitRefOf gives, for a message: "branch main", "tag v1.2".
func DescribeRef(ref string) string {
	if strings.Contains(ref, " ") {
		return ref
	}
	return "branch " + ref
}

// SameBranch reports whether a GitRepository following ref (GitRefOf)
// reads branch, the branch kdrift reads: a ref naming none, or an
// unknown branch, does not tell them apart.
func SameBranch(ref, branch string) bool {
	return ref == "" || branch == "" || ref == branch
}
