package app

import (
	"reflect"
	"strings"
	"testing"
)

// ownedFile is an Argo CD Application beside a ConfigMap, as a repository
// keeps them.
const ownedFile = `# shop, synced by Argo CD
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
spec:
  source: {repoURL: https://git.example/team/gitops, path: deploy/shop}
  syncPolicy:
    automated:
      selfHeal: true   # heals
---
apiVersion: v1
kind: ConfigMap
metadata: {name: notes}
data: {a: b}
`

// frozenFile is ownedFile as kdrift's freeze writes it.
var frozenFile = strings.Replace(strings.Replace(ownedFile, "selfHeal: true   # heals", "selfHeal: false   # heals", 1),
	"  namespace: argocd\n", `  namespace: argocd
  annotations:
    kdrift.dev/freeze-reason: "INC-7 hold"
    kdrift.dev/freeze-by: "Lao Li <lao.li@example.com>"
    kdrift.dev/freeze-at: "2026-12-02T15:00:00Z"
    kdrift.dev/freeze-until: "2026-12-02T17:00:00Z"
    kdrift.dev/freeze-previous: "true"
`, 1)

func TestOwnedFreezeOnlyChange(t *testing.T) {
	flux := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: podinfo, namespace: flux-system}\nspec: {path: ./deploy, sourceRef: {kind: GitRepository, name: gitops}}\n"
	fluxFrozen := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: podinfo\n  namespace: flux-system\n  annotations: {kdrift.dev/freeze-reason: r, kdrift.dev/freeze-by: b, kdrift.dev/freeze-at: \"2026-12-02T15:00:00Z\", kdrift.dev/freeze-previous: absent}\nspec: {path: ./deploy, sourceRef: {kind: GitRepository, name: gitops}, suspend: true}\n"
	source := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: gitops, namespace: flux-system}\nspec: {url: https://git.example/team/gitops}\n"
	for _, c := range []struct {
		name, before, after, refused string
	}{
		{"freeze", ownedFile, frozenFile, ""},
		{"unfreeze", frozenFile, ownedFile, ""},
		{"flux freeze", flux, fluxFrozen, ""},
		{"path moved", ownedFile, strings.Replace(frozenFile, "deploy/shop", "deploy/evil", 1), "changes Application argocd/shop in argocd/shop.yaml beyond kdrift's freeze"},
		{"other annotation", ownedFile, strings.Replace(frozenFile, "kdrift.dev/freeze-by", "team", 1), "beyond kdrift's freeze"},
		{"the ConfigMap", frozenFile, strings.Replace(frozenFile, "{a: b}", "{a: c}", 1), "changes document 2 of argocd/shop.yaml, which is no declaration kdrift freezes"},
		{"a source", source, strings.Replace(source, "gitops}", "evil}", 1), "changes GitRepository flux-system/gitops in argocd/shop.yaml beyond"},
		{"renamed", ownedFile, strings.Replace(ownedFile, "name: shop", "name: shop2", 1), "no declaration kdrift freezes"},
		{"a document more", ownedFile, ownedFile + "---\n" + source, "changes which documents"},
		{"deleted", ownedFile, "", ""},
		{"not YAML", ownedFile, "a: [", "unreadable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			after := []byte(c.after)
			if c.name == "deleted" {
				after = nil
				c.refused = "deletes argocd/shop.yaml"
			}
			err := OwnedFreezeOnlyChange("argocd/shop.yaml", []byte(c.before), after)
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
				t.Fatalf("got %v, want an error with %q", err, c.refused)
			}
		})
	}
}

func TestDeclaredFreeze(t *testing.T) {
	o := &Origin{Engine: "Argo CD", Kind: "Application", Namespace: "argocd", Name: "shop", File: "argocd/shop.yaml", Doc: 1}
	fr, err := DeclaredFreeze(o, []byte(frozenFile))
	if err != nil || fr == nil || fr.Reason != "INC-7 hold" || fr.By != "Lao Li <lao.li@example.com>" || fr.Until == nil || fr.Until.Hour() != 17 {
		t.Fatalf("freeze %+v, %v", fr, err)
	}
	if fr, err := DeclaredFreeze(o, []byte(ownedFile)); fr != nil || err != nil {
		t.Fatalf("unfrozen: %+v, %v", fr, err)
	}
	other := *o
	other.Name = "cart"
	if fr, err := DeclaredFreeze(&other, []byte(frozenFile)); fr != nil || err != nil {
		t.Fatalf("another declaration: %+v, %v", fr, err)
	}
	bad := strings.Replace(frozenFile, `"2026-12-02T15:00:00Z"`, "yesterday", 1)
	if _, err := DeclaredFreeze(o, []byte(bad)); err == nil || !strings.Contains(err.Error(), "kdrift.dev/freeze-at") {
		t.Fatalf("a bad time: %v", err)
	}
}

// FuzzOwnedFreezeOnlyChange: whatever a channel commit makes of a file of
// declarations, OwnedFreezeOnlyChange and DeclaredFreeze answer (no
// panic), and a change it accepts leaves every document as it was but for
// kdrift's freeze.
func FuzzOwnedFreezeOnlyChange(f *testing.F) {
	f.Add(ownedFile, frozenFile)
	f.Add(frozenFile, ownedFile)
	f.Add(ownedFile, "a: &x [*x]")
	f.Fuzz(func(t *testing.T, before, after string) {
		err := OwnedFreezeOnlyChange("f.yaml", []byte(before), []byte(after))
		_, _ = DeclaredFreeze(&Origin{Kind: "Application", Namespace: "argocd", Name: "shop", File: "f.yaml", Doc: 1}, []byte(after))
		if err != nil {
			return
		}
		bd, _ := ownedDocs("f.yaml", []byte(before))
		ad, _ := ownedDocs("f.yaml", []byte(after))
		for i := range bd {
			if bd[i].heal == nil && !reflect.DeepEqual(bd[i].body, ad[i].body) {
				t.Fatalf("accepted a change of document %d, which kdrift never freezes", i+1)
			}
		}
	})
}
