package actions

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"kdrift.dev/kdrift/engine/app"
)

// Actions on apps another GitOps engine owns write into that engine's own
// declaration, so that the engine itself stops healing, with the reason in
// Git: the healing field its tool names (app.Edits: an Argo CD
// Application's spec.syncPolicy.automated.selfHeal, a Flux declaration's
// spec.suspend), and the freeze in kdrift.dev/freeze-* annotations (the
// healing field's earlier value in kdrift.dev/freeze-previous, put back on
// unfreeze).

// ownedApps adds the Argo CD and Flux apps of the snapshot's commit, as
// the engine discovers them, to set.
func ownedApps(s *snapshot, set *appSet) error {
	snap, err := s.repo.snapshotOf(s.commit)
	if err != nil {
		return err
	}
	res := snap.Apps()
	for _, a := range res.Apps {
		if a.Origin != nil {
			set.apps = append(set.apps, a)
		}
	}
	for _, in := range res.Invalid {
		if in.Name != "" && !strings.HasPrefix(in.File, app.Dir+"/") {
			if _, dup := set.invalid[in.Name]; !dup {
				set.invalid[in.Name] = in.Err
			}
		}
	}
	return nil
}

// checkEditable refuses an action on a declaration that is not a literal
// document of the repository: editing the output of a chart or of another
// app's render would be undone by its next render.
func checkEditable(a app.App) error {
	if a.Origin == nil || a.Origin.File != "" {
		return nil
	}
	if a.Origin.Live {
		cli := "argocd"
		if a.Origin.Engine == app.EngineFlux {
			cli = "flux"
		}
		return fmt.Errorf("App %s: its %s is %s, so there is no document to commit the change to; commit the %s to this repository, or change it with %s",
			a.Metadata.Name, a.Origin.Kind, a.Origin.Where(), a.Origin.Kind, cli)
	}
	if a.Origin.GeneratorKind != "" {
		return fmt.Errorf("App %s: its %s is %s, not a document kdrift can edit in place (the %s would undo the edit); change the %s's template in %s",
			a.Metadata.Name, a.Origin.Kind, a.Origin.Where(), a.Origin.GeneratorKind, a.Origin.GeneratorKind, a.Origin.GeneratedFrom)
	}
	return fmt.Errorf("App %s: its %s is %s, not a document kdrift can edit in place (that render would undo the edit); change it where it is generated, in %s, or act on App %s",
		a.Metadata.Name, a.Origin.Kind, a.Origin.Where(), a.Origin.GeneratedFrom, a.Origin.GeneratedBy)
}

// declaration finds the owned App's document in the file: kind, name and
// namespace as discovered.
func (f *yamlFile) declaration(o *app.Origin) (*yaml.Node, error) {
	for _, d := range f.docs {
		if d.Kind != yaml.DocumentNode || len(d.Content) == 0 || d.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := d.Content[0]
		_, k := mapGet(root, "kind")
		_, md := mapGet(root, "metadata")
		_, n := mapGet(md, "name")
		_, ns := mapGet(md, "namespace")
		if k == nil || k.Value != o.Kind || n == nil || n.Value != o.Name {
			continue
		}
		if ns != nil && ns.Value != o.Namespace {
			continue
		}
		return root, nil
	}
	return nil, fmt.Errorf("%s %s not found in this file", o.Kind, o.QualifiedName())
}

// blockMapping returns key's value in m when it is a block mapping with
// keys; what says which field, for the error when it is written otherwise.
func blockMapping(m *yaml.Node, key, what string) (*yaml.Node, *yaml.Node, error) {
	k, v := mapGet(m, key)
	if k == nil {
		return nil, nil, nil
	}
	if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 {
		return nil, nil, fmt.Errorf("%s is not written as a block mapping with keys; write it as one so kdrift can edit it", what)
	}
	return k, v, nil
}

// setScalar rewrites the value of a plain scalar in place, keeping the
// rest of its line (a comment after it).
func (f *yamlFile) setScalar(v *yaml.Node, value string) error {
	if v.Kind != yaml.ScalarNode || v.Style != 0 {
		return fmt.Errorf("line %d: the value is not a plain scalar; write it as true or false", v.Line)
	}
	l := f.lines[v.Line-1]
	start := v.Column - 1
	if start+len(v.Value) > len(l) || l[start:start+len(v.Value)] != v.Value {
		return fmt.Errorf("line %d: the value is not where the parser put it", v.Line)
	}
	f.lines[v.Line-1] = l[:start] + value + l[start+len(v.Value):]
	return nil
}

// setHeal writes value into the owner's healing field v.
func (f *yamlFile) setHeal(o *app.Origin, h *app.HealField, v *yaml.Node, value string) error {
	if err := f.setScalar(v, value); err != nil {
		return fmt.Errorf("%s %s: %s: %w", o.Kind, o.QualifiedName(), h.Field, err)
	}
	return nil
}

// healField locates the field h that makes the owner heal, following its
// path (for Argo CD spec.syncPolicy.automated, for Flux spec): parent is
// the mapping holding it and pk parent's key, key and val the field's
// (nil when absent). parent is nil when a mapping after the first of the
// path is absent: the owner does not heal at all.
func healField(root *yaml.Node, o *app.Origin, h *app.HealField) (parent, pk, key, val *yaml.Node, err error) {
	cur := root
	for i, name := range h.Path {
		what := strings.Join(h.Path[:i+1], ".")
		switch {
		case i == 0:
			k, v, err := blockMapping(cur, name, what)
			if err != nil || k == nil {
				return nil, nil, nil, nil, fmt.Errorf("%s %s: %v", o.Kind, o.QualifiedName(), orMissing(err, what))
			}
			pk, cur = k, v
		case i < len(h.Path)-1:
			k, v, err := blockMapping(cur, name, what)
			if err != nil || k == nil {
				return nil, nil, nil, nil, err
			}
			pk, cur = k, v
		default:
			k, v := mapGet(cur, name)
			if k == nil || (v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
				return nil, nil, nil, nil, nil
			}
			if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 {
				return nil, nil, nil, nil, fmt.Errorf("%s %s: %s is not written as a block mapping with keys; write it as one so kdrift can set %s", o.Kind, o.QualifiedName(), what, h.Field)
			}
			pk, cur = k, v
		}
	}
	k, v := mapGet(cur, h.Field)
	return cur, pk, k, v, nil
}

func orMissing(err error, field string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%s is missing", field)
}

// ownedFreeze reports whether a freeze of a goes into its tool's healing
// field and annotations (app.Edits.Heal) rather than the App's own
// spec.freeze.
func ownedFreeze(a app.App) bool { return app.ToolOf(a.Origin).Edits().Heal != nil }

// reparse re-reads the file after an edit, so the next edit finds its
// lines.
func (f *yamlFile) reparse() (*yamlFile, error) { return newYAMLFile(f.bytes()) }

// setOwnedFreeze stops the owner healing and records the freeze (and the
// healing field's earlier value) in the declaration's annotations.
func setOwnedFreeze(src []byte, a app.App, fr app.Freeze) ([]byte, error) {
	o := a.Origin
	h := app.ToolOf(o).Edits().Heal
	f, err := openDeclaration(src, o, healPaths(h)...)
	if err != nil {
		return nil, err
	}
	root, err := f.declaration(o)
	if err != nil {
		return nil, err
	}
	ann := map[string]string{}
	_, md := mapGet(root, "metadata")
	if _, av, err := blockMapping(md, "annotations", "metadata.annotations"); err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.Kind, o.QualifiedName(), err)
	} else if av != nil {
		for i := 0; i+1 < len(av.Content); i += 2 {
			ann[av.Content[i].Value] = av.Content[i+1].Value
		}
	}
	prev, frozenBefore := ann[app.AnnotationFreezePrevious]
	if !frozenBefore {
		parent, pk, k, v, err := healField(root, o, h)
		if err != nil {
			return nil, err
		}
		switch {
		case parent == nil:
			prev = app.FreezePreviousNone
		case k == nil:
			prev = app.FreezePreviousAbsent
			ind, _ := childIndent(pk, parent)
			f.insertAfter(f.blockEnd(pk, parent), []string{strings.Repeat(" ", ind) + h.Field + ": " + h.Off})
		default:
			prev = v.Value
			if err := f.setHeal(o, h, v, h.Off); err != nil {
				return nil, err
			}
		}
		if f, err = f.reparse(); err != nil {
			return nil, err
		}
	}
	if f, err = dropFreezeAnnotations(f, o); err != nil {
		return nil, err
	}
	lines := []string{
		app.AnnotationFreezeReason + ": " + yamlString(fr.Reason),
		app.AnnotationFreezeBy + ": " + yamlString(fr.By),
		app.AnnotationFreezeAt + ": " + yamlTime(fr.At),
	}
	if fr.Until != nil {
		lines = append(lines, app.AnnotationFreezeUntil+": "+yamlTime(*fr.Until))
	}
	lines = append(lines, app.AnnotationFreezePrevious+": "+yamlString(prev))
	if err := f.addAnnotations(o, lines); err != nil {
		return nil, err
	}
	return f.bytes(), nil
}

// addAnnotations appends lines (key: value) to the declaration's
// metadata.annotations, creating it when there is none.
func (f *yamlFile) addAnnotations(o *app.Origin, lines []string) error {
	root, err := f.declaration(o)
	if err != nil {
		return err
	}
	mk, md, err := blockMapping(root, "metadata", "metadata")
	if err != nil || mk == nil {
		return fmt.Errorf("%s %s: %v", o.Kind, o.QualifiedName(), orMissing(err, "metadata"))
	}
	ak, av, err := blockMapping(md, "annotations", "metadata.annotations")
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.Kind, o.QualifiedName(), err)
	}
	ind, step := childIndent(mk, md)
	if ak == nil {
		block := []string{strings.Repeat(" ", ind) + "annotations:"}
		for _, l := range lines {
			block = append(block, strings.Repeat(" ", ind+step)+l)
		}
		f.insertAfter(f.blockEnd(mk, md), block)
		return nil
	}
	cind, _ := childIndent(ak, av)
	block := make([]string, len(lines))
	for i, l := range lines {
		block[i] = strings.Repeat(" ", cind) + l
	}
	f.insertAfter(f.blockEnd(ak, av), block)
	return nil
}

// dropFreezeAnnotations deletes the kdrift.dev/freeze-* annotations, and
// the annotations key when nothing else is left under it.
func dropFreezeAnnotations(f *yamlFile, o *app.Origin) (*yamlFile, error) {
	for {
		root, err := f.declaration(o)
		if err != nil {
			return nil, err
		}
		_, md := mapGet(root, "metadata")
		ak, av, err := blockMapping(md, "annotations", "metadata.annotations")
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.Kind, o.QualifiedName(), err)
		}
		if ak == nil {
			return f, nil
		}
		done := true
		for i := 0; i+1 < len(av.Content); i += 2 {
			k := av.Content[i]
			if !strings.HasPrefix(k.Value, app.FreezeAnnotationPrefix) {
				continue
			}
			if len(av.Content) == 2 {
				f.deleteLines(ak.Line, f.blockEnd(ak, av))
			} else {
				f.deleteLines(k.Line, f.blockEnd(k, av.Content[i+1]))
			}
			done = false
			break
		}
		if done {
			return f, nil
		}
		if f, err = f.reparse(); err != nil {
			return nil, err
		}
	}
}

// removeOwnedFreeze puts the healing field back as it was before the
// freeze and deletes the freeze annotations.
func removeOwnedFreeze(src []byte, a app.App) ([]byte, error) {
	o := a.Origin
	h := app.ToolOf(o).Edits().Heal
	f, err := openDeclaration(src, o, healPaths(h)...)
	if err != nil {
		return nil, err
	}
	root, err := f.declaration(o)
	if err != nil {
		return nil, err
	}
	prev := app.FreezePreviousAbsent
	_, md := mapGet(root, "metadata")
	_, av := mapGet(md, "annotations")
	if _, v := mapGet(av, app.AnnotationFreezePrevious); v != nil {
		prev = v.Value
	} else {
		prev = app.FreezePreviousNone // not recorded: leave the healing field as it is
	}
	parent, _, k, v, err := healField(root, o, h)
	if err != nil {
		return nil, err
	}
	switch {
	case prev == app.FreezePreviousNone || parent == nil:
	case prev == app.FreezePreviousAbsent && k != nil:
		f.deleteLines(k.Line, f.blockEnd(k, v))
	case prev == "true" || prev == "false":
		if k != nil {
			if err := f.setHeal(o, h, v, prev); err != nil {
				return nil, err
			}
		}
	}
	if f, err = f.reparse(); err != nil {
		return nil, err
	}
	if f, err = dropFreezeAnnotations(f, o); err != nil {
		return nil, err
	}
	return f.bytes(), nil
}

// setOwnedFreezeUntil changes (or adds) the freeze-until annotation.
func setOwnedFreezeUntil(src []byte, a app.App, until string) ([]byte, error) {
	o := a.Origin
	f, err := openDeclaration(src, o, []string{"metadata", "annotations"})
	if err != nil {
		return nil, err
	}
	root, err := f.declaration(o)
	if err != nil {
		return nil, err
	}
	_, md := mapGet(root, "metadata")
	_, av := mapGet(md, "annotations")
	line := app.AnnotationFreezeUntil + ": " + until
	if k, v := mapGet(av, app.AnnotationFreezeUntil); k != nil {
		f.deleteLines(k.Line, f.blockEnd(k, v))
		f.insertAfter(k.Line-1, []string{strings.Repeat(" ", k.Column-1) + line})
		return f.bytes(), nil
	}
	if err := f.addAnnotations(o, []string{line}); err != nil {
		return nil, err
	}
	return f.bytes(), nil
}

// appendOwnedIgnore appends a rule to the declaration's ignore list, as
// its tool writes one (Edits.IgnoreList and IgnoreItem): an Application's
// spec.ignoreDifferences (the same fields as an App's rules), a Flux
// Kustomization's spec.ignore as {target, jsonPointers}, a HelmRelease's
// spec.driftDetection.ignore as {paths, target}. The list, and the
// mappings on the way to it, are written out when absent (appendToList).
func appendOwnedIgnore(src []byte, a app.App, r app.IgnoreRule) ([]byte, error) {
	o := a.Origin
	ed := app.ToolOf(o).Edits()
	if _, err := ed.IgnoreItem(0, 2, r); err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.Kind, o.QualifiedName(), err)
	}
	f, err := openDeclaration(src, o, append([]string{"spec"}, ed.IgnoreList...))
	if err != nil {
		return nil, err
	}
	root, err := f.declaration(o)
	if err != nil {
		return nil, err
	}
	sk, sv, err := blockMapping(root, "spec", "spec")
	if err != nil || sk == nil {
		return nil, fmt.Errorf("%s %s: %v", o.Kind, o.QualifiedName(), orMissing(err, "spec"))
	}
	if err := f.appendToList(sk, sv, ed.IgnoreList, func(dashInd, step int) []string {
		lines, _ := ed.IgnoreItem(dashInd, step, r)
		return lines
	}); err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.Kind, o.QualifiedName(), err)
	}
	return f.bytes(), nil
}

// ownedStillReads checks that the edited file still parses and still
// holds each edited declaration.
func ownedStillReads(file string, text []byte, edited []app.App) error {
	f, err := newYAMLFile(text)
	if err != nil {
		return fmt.Errorf("%s: the edit would break the file (%v); nothing was committed", file, err)
	}
	for _, a := range edited {
		if a.Origin == nil || a.File != file {
			continue
		}
		if _, err := f.declaration(a.Origin); err != nil {
			return fmt.Errorf("%s: the edit would lose %s (%v); nothing was committed", file, a.Origin.Owner(), err)
		}
	}
	return nil
}
