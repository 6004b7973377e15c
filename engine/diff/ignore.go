package diff

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// RuleMatches reports whether an ignore rule applies to an object: each of
// its Group, Kind, Name and Namespace is empty or equal.
func RuleMatches(r app.IgnoreRule, ref status.ObjectRef) bool {
	return (r.Group == "" || r.Group == ref.Group) &&
		(r.Kind == "" || r.Kind == ref.Kind) &&
		(r.Name == "" || r.Name == ref.Name) &&
		(r.Namespace == "" || r.Namespace == ref.Namespace)
}

func matchingRules(rules []app.IgnoreRule, ref status.ObjectRef) []app.IgnoreRule {
	var out []app.IgnoreRule
	for _, r := range rules {
		if RuleMatches(r, ref) {
			out = append(out, r)
		}
	}
	return out
}

// IgnoredPointers returns the JSON pointers the rules that match an object
// ignore; the apply step leaves them out of what kdrift applies.
func IgnoredPointers(rules []app.IgnoreRule, ref status.ObjectRef) []string {
	var out []string
	for _, r := range matchingRules(rules, ref) {
		out = append(out, r.JSONPointers...)
	}
	return out
}

// IgnoredManagers returns the managers whose fields the rules that match
// an object ignore.
func IgnoredManagers(rules []app.IgnoreRule, ref status.ObjectRef) []string {
	var out []string
	for _, r := range matchingRules(rules, ref) {
		out = append(out, r.ManagedFieldsManagers...)
	}
	return out
}

// ignored reports whether a field is covered by a rule: under one of its
// pointers, or owned by one of its managers.
func ignored(rules []app.IgnoreRule, ptr string, owners []status.Owner) bool {
	for _, r := range rules {
		for _, p := range r.JSONPointers {
			if underPointer(ptr, p) {
				return true
			}
		}
		for _, m := range r.ManagedFieldsManagers {
			for _, o := range owners {
				if o.Manager == m {
					return true
				}
			}
		}
	}
	return false
}

// WithoutPointers returns a copy of obj with the fields the pointers name
// removed (absent ones are skipped). List elements are removed from the
// highest index down so earlier removals do not shift later ones.
func WithoutPointers(obj *unstructured.Unstructured, ptrs []string) *unstructured.Unstructured {
	c := obj.DeepCopy()
	sorted := append([]string(nil), ptrs...)
	// Deepest and highest-index first.
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if comparePointers(sorted[j], sorted[i]) > 0 {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	for _, p := range sorted {
		removeAt(c.Object, p)
	}
	return c
}

// immutableMarkers are the apiserver's words for a change it refuses
// because the field cannot change in place. Current releases say "field is
// immutable" for every such field; older ones refuse a change to any
// StatefulSet field but a few with one Forbidden cause on spec, in the last
// words below (TestIsRequiresReplace holds both).
var immutableMarkers = []string{
	"field is immutable",
	"is immutable",
	"may not change once set",
	"updates to statefulset spec for fields other than",
}

// IsRequiresReplace reports whether an apply error is the apiserver
// refusing an immutable-field change: an Invalid error whose message or
// one of whose causes says so. Such an object can only change by being
// replaced. It is kdrift's one replace check (dry-run and apply alike).
func IsRequiresReplace(err error) bool {
	if err == nil {
		return false
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) || !apierrors.IsInvalid(err) {
		return false
	}
	msgs := []string{err.Error()}
	if d := se.Status().Details; d != nil {
		for _, c := range d.Causes {
			msgs = append(msgs, c.Message)
		}
	}
	for _, msg := range msgs {
		for _, m := range immutableMarkers {
			if strings.Contains(msg, m) {
				return true
			}
		}
	}
	return false
}
