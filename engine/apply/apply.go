// Package apply puts Git's objects in the cluster: forced Server-Side Apply
// as manager kdrift with tracking metadata, ignored fields left out (handed
// over first when kdrift alone owned them), person-owned extra fields
// removed with a guarded JSON patch, Namespaces and CRDs first, and prune of
// tracked objects that left Git.
package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/diff"
	"kdrift.dev/kdrift/engine/status"
)

// Field managers and tracking metadata kdrift writes.
const (
	// Manager is the field manager kdrift applies as.
	Manager = "kdrift"
	// HandoverManager owns fields kdrift stopped applying until their real
	// owner (an HPA, a person) writes them, so they are never defaulted.
	HandoverManager = "kdrift-handover"
	// LabelManagedBy is the tracking label every applied object carries.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelManagedByValue is LabelManagedBy's value.
	LabelManagedByValue = "kdrift"
	// AnnotationApp names the App that applied the object.
	AnnotationApp = "kdrift.dev/app"
	// LabelApp carries AppLabelValue of the App that applied the object,
	// so a one-shot command lists one App's tracked objects with a label
	// selector instead of every tracked object of a kind. The annotation
	// stays what decides whose an object is; the label only narrows what
	// the apiserver sends, and is never drift (diff.DefaultOptions).
	LabelApp = "kdrift.dev/app"
	// AnnotationRepo is the repository identity (source.Repo.Identity)
	// of the App that applied the object: an App of the same name in
	// another repository never prunes or applies over it.
	AnnotationRepo = "kdrift.dev/repo"
)

// Options tunes retries and waits. The zero value is not useful; start
// from DefaultOptions.
type Options struct {
	// Attempts is how many times one object's operation is tried
	// (default 5).
	Attempts int
	// InitialBackoff is the wait before the second attempt; it doubles up
	// to MaxBackoff (default 200ms, 5s).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// CRDTimeout bounds the wait for a CRD to be Established (default 60s).
	CRDTimeout time.Duration
	// Origin names the repository file a SOPS ciphertext came from, for
	// the error that refuses it (render.Renderer.Origin); nil leaves the
	// file out.
	Origin func(ciphertext string) string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{Attempts: 5, InitialBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second, CRDTimeout: 60 * time.Second}
}

// Applier applies, patches and deletes objects of one cluster.
type Applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	opts   Options
}

// New returns an Applier using dyn and mapper (reset when a kind is
// unknown, if it is a meta.ResettableRESTMapper).
func New(dyn dynamic.Interface, mapper meta.RESTMapper, opts Options) *Applier {
	d := DefaultOptions()
	if opts.Attempts <= 0 {
		opts.Attempts = d.Attempts
	}
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = d.InitialBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = d.MaxBackoff
	}
	if opts.CRDTimeout <= 0 {
		opts.CRDTimeout = d.CRDTimeout
	}
	return &Applier{dyn: dyn, mapper: mapper, opts: opts}
}

// RefOf names obj.
func RefOf(obj *unstructured.Unstructured) status.ObjectRef {
	gvk := obj.GroupVersionKind()
	return status.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Track returns a copy of obj carrying kdrift's tracking label and the
// annotations naming appName and its repository identity repo. Only the
// metadata is copied (CopyMetadata): the rest is obj's, read-only.
func Track(obj *unstructured.Unstructured, appName, repo string) *unstructured.Unstructured {
	out := CopyMetadata(obj)
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = LabelManagedByValue
	labels[LabelApp] = AppLabelValue(appName)
	out.SetLabels(labels)
	ann := out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationApp] = appName
	if repo != "" {
		ann[AnnotationRepo] = repo
	}
	out.SetAnnotations(ann)
	return out
}

// CopyMetadata returns a copy of obj sharing all but its metadata with obj.
// A rendered object is read-only, shared by the render cache and every pass
// (render.Renderer.RenderAppShared): one that must change its metadata
// changes such a copy, and one that must change more, a deep copy.
func CopyMetadata(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: maps.Clone(obj.Object)}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		out.Object["metadata"] = runtime.DeepCopyJSONValue(md)
	}
	return out
}

// AppLabelValue is LabelApp's value for App appName: the name itself when
// it is a valid label value (at most 63 characters, no "/"), else "h." and
// 40 hexadecimal digits of its SHA-256. Two Apps may share a value only
// when one name is that hashed form; their objects are still told apart
// by AnnotationApp.
func AppLabelValue(appName string) string {
	if len(validation.IsValidLabelValue(appName)) == 0 {
		return appName
	}
	sum := sha256.Sum256([]byte(appName))
	return "h." + hex.EncodeToString(sum[:20])
}

// TrackedAsApp reports whether live carries the tracking label and the
// annotation naming appName, whatever repository applied it.
func TrackedAsApp(live *unstructured.Unstructured, appName string) bool {
	return live.GetLabels()[LabelManagedBy] == LabelManagedByValue && live.GetAnnotations()[AnnotationApp] == appName
}

// IsTracked reports whether live is appName's of repository repo: the
// tracking label, the app annotation and the repository annotation all
// match. Only such objects are ever pruned.
func IsTracked(live *unstructured.Unstructured, appName, repo string) bool {
	return TrackedAsApp(live, appName) && repo != "" && RepoOf(live) == repo
}

// RepoOf is the repository identity live's tracking names; empty for an
// object applied before kdrift recorded one (adopted on its next apply,
// never pruned until then).
func RepoOf(live *unstructured.Unstructured) string {
	return live.GetAnnotations()[AnnotationRepo]
}

// TrackedElsewhere reports whether live is tracked by kdrift for another
// repository than repo: kdrift leaves it alone (no apply, no prune).
func TrackedElsewhere(live *unstructured.Unstructured, repo string) bool {
	if live == nil || live.GetLabels()[LabelManagedBy] != LabelManagedByValue {
		return false
	}
	other := RepoOf(live)
	return other != "" && other != repo
}

// RuleMatches reports whether rule applies to obj (diff.RuleMatches).
func RuleMatches(rule app.IgnoreRule, obj *unstructured.Unstructured) bool {
	return diff.RuleMatches(rule, RefOf(obj))
}

// IgnoredPointers lists the JSON pointers of the rules matching obj.
func IgnoredPointers(rules []app.IgnoreRule, obj *unstructured.Unstructured) []string {
	return diff.IgnoredPointers(rules, RefOf(obj))
}

// IgnoredManagers lists the managers of the rules matching obj.
func IgnoredManagers(rules []app.IgnoreRule, obj *unstructured.Unstructured) []string {
	return diff.IgnoredManagers(rules, RefOf(obj))
}

// Omit returns a copy of desired without the fields the rules ignore: those
// under a matching JSON pointer, and those live says an ignored manager
// owns (live may be nil). kdrift then releases those fields instead of
// fighting for them.
func Omit(desired, live *unstructured.Unstructured, rules []app.IgnoreRule) (*unstructured.Unstructured, error) {
	out := desired.DeepCopy()
	for _, p := range IgnoredPointers(rules, desired) {
		deletePointer(out.Object, p)
	}
	if live != nil {
		if mgrs := IgnoredManagers(rules, desired); len(mgrs) > 0 {
			paths, err := managerPaths(live, mgrs)
			if err != nil {
				return nil, &ObjectError{Ref: RefOf(desired), Op: "read managedFields", Err: err}
			}
			for _, p := range paths {
				// Never drop identity: apiVersion, kind, metadata.name.
				if len(p) > 0 && p[0].FieldName != nil && (*p[0].FieldName == "apiVersion" || *p[0].FieldName == "kind") {
					continue
				}
				if len(p) == 2 && p[0].FieldName != nil && *p[0].FieldName == "metadata" && p[1].FieldName != nil && (*p[1].FieldName == "name" || *p[1].FieldName == "namespace") {
					continue
				}
				removePath(out.Object, p)
			}
		}
	}
	out.Object = compactLists(out.Object).(map[string]any)
	return out, nil
}

// Apply applies obj (already tracked and trimmed) with forced Server-Side
// Apply as manager kdrift, retrying with backoff, and returns the object
// the apiserver answered with. dryRun asks the apiserver without saving.
func (a *Applier) Apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	op := "apply"
	if dryRun {
		op = "dry-run apply"
	}
	return a.applyAs(ctx, obj, Manager, op, dryRun)
}

func (a *Applier) applyAs(ctx context.Context, obj *unstructured.Unstructured, manager, op string, dryRun bool) (*unstructured.Unstructured, error) {
	ref := RefOf(obj)
	// Ciphertext never reaches the apiserver, not even for a dry run.
	if err := Guard(obj, a.opts.Origin); err != nil {
		return nil, &ObjectError{Ref: ref, Op: op, Err: err}
	}
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var out *unstructured.Unstructured
	err := a.retry(ctx, ref, op, func() error {
		ri, err := a.resource(obj.GroupVersionKind(), obj.GetNamespace())
		if err != nil {
			return err
		}
		out, err = ri.Apply(ctx, obj.GetName(), obj, opts)
		return err
	})
	return out, err
}

// resource finds the client for a kind, resetting the RESTMapper once when
// the kind is unknown (a CRD installed since discovery ran).
func (a *Applier) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && isNoMatch(err) {
		if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kind %s is not served by the cluster (is its CRD installed?): %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns == "" {
			return nil, fmt.Errorf("%s is namespaced but names no namespace: set metadata.namespace or the App's destination.namespace", gvk.Kind)
		}
		return a.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

func isNoMatch(err error) bool {
	return meta.IsNoMatchError(err)
}

// retry runs f until it succeeds, fails for good, or Attempts run out,
// waiting InitialBackoff doubling up to MaxBackoff between attempts. Its
// error names the object first.
func (a *Applier) retry(ctx context.Context, ref status.ObjectRef, op string, f func() error) error {
	wait := a.opts.InitialBackoff
	var err error
	for attempt := 1; ; attempt++ {
		err = f()
		if err == nil {
			return nil
		}
		if !retryable(err) || attempt >= a.opts.Attempts {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return newObjectError(ref, op, errors.Join(err, ctx.Err()))
		case <-t.C:
		}
		wait = min(wait*2, a.opts.MaxBackoff)
	}
	return newObjectError(ref, op, err)
}
