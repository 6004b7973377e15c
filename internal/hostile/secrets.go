package hostile

import (
	"encoding/base64"
	"strings"
	"testing"

	"filippo.io/age"

	"kdrift.dev/kdrift/internal/sopstest"
)

// SecretsEnv is the plaintext of the dotenv file the SOPS cases encrypt.
const SecretsEnv = "DB_USER=app\nDB_PASSWORD=" + sopstest.DBPassword + "\n"

// SOPSCases are App folders that ask a render for the plaintext of a
// SOPS file, encrypted for id, outside a Secret: Jsonnet's importstr
// (whole, base64-encoded, split character by character), a Helm chart's
// .Files in a fail message, a configMapGenerator over a copy of the
// ciphertext, one file named by both a secretGenerator and a
// configMapGenerator, a replacement that copies a decrypted Secret into
// a ConfigMap, a JSON patch that copies its value into an annotation,
// and an encrypted ConfigMap. Every render must fail naming
// the file (Want), and no output may hold the plaintext in any of the
// forms Leak looks for.
func SOPSCases(t testing.TB, id *age.X25519Identity) []Case {
	t.Helper()
	env := sopstest.Encrypt(t, "app.enc.env", SecretsEnv, id)
	secret := sopstest.Encrypt(t, "secret.enc.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+sopstest.DBPassword+"\n", id)
	configMap := sopstest.Encrypt(t, "cm.enc.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  password: "+sopstest.DBPassword+"\n", id)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\ndata: {password: none}\n"
	d := func(name string, files map[string]string) Case {
		out := map[string]string{"secrets/app.enc.env": env}
		for f, c := range files {
			out["deploy/"+name+"/"+f] = c
		}
		return Case{Name: name, Files: out}
	}
	cases := []Case{
		d("sops-jsonnet", map[string]string{"main.jsonnet": "error 'LEAK1 ' + std.base64(importstr '../../secrets/app.enc.env')\n"}),
		d("sops-jsonnet-split", map[string]string{"main.jsonnet": "error 'LEAK2 ' + std.join('.', std.stringChars(importstr '../../secrets/app.enc.env'))\n"}),
		d("sops-jsonnet-import", map[string]string{"main.jsonnet": "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'x'}, data: {v: importstr '../../secrets/app.enc.env'}}\n"}),
		d("sops-helm", map[string]string{"Chart.yaml": "apiVersion: v2\nname: leak\nversion: 0.1.0\n", "files/s.env": env,
			"templates/cm.yaml": "{{ fail (.Files.Get \"files/s.env\" | b64enc) }}\n"}),
		d("sops-configmap", map[string]string{"x.env": env,
			"kustomization.yaml": "configMapGenerator:\n- name: stolen\n  envs: [x.env]\n"}),
		d("sops-both-generators", map[string]string{"x.env": env,
			"kustomization.yaml": "secretGenerator:\n- name: ok\n  envs: [x.env]\nconfigMapGenerator:\n- name: stolen\n  envs: [x.env]\n"}),
		d("sops-replacement", map[string]string{"secret.enc.yaml": secret, "cm.yaml": cm,
			"kustomization.yaml": "resources: [secret.enc.yaml, cm.yaml]\nreplacements:\n- source: {kind: Secret, name: db, fieldPath: stringData.password}\n  targets:\n  - select: {kind: ConfigMap, name: target}\n    fieldPaths: [data.password]\n"}),
		d("sops-patch-copy", map[string]string{"secret.enc.yaml": secret,
			"kustomization.yaml": "resources: [secret.enc.yaml]\npatches:\n- target: {kind: Secret, name: db}\n  patch: |\n    - {op: copy, from: /stringData/password, path: /metadata/annotations/leak}\n"}),
		d("sops-configmap-manifest", map[string]string{"cm.enc.yaml": configMap, "kustomization.yaml": "resources: [cm.enc.yaml]\n"}),
		d("sops-plain-configmap", map[string]string{"cm.enc.yaml": configMap}),
	}
	wants := map[string]string{
		"sops-jsonnet": "secrets/app.enc.env", "sops-jsonnet-split": "secrets/app.enc.env", "sops-jsonnet-import": "secrets/app.enc.env",
		"sops-helm": "deploy/sops-helm/files/s.env", "sops-configmap": "deploy/sops-configmap/x.env",
		"sops-both-generators": "deploy/sops-both-generators/x.env", "sops-replacement": "deploy/sops-replacement/secret.enc.yaml",
		"sops-patch-copy":         "deploy/sops-patch-copy/secret.enc.yaml",
		"sops-configmap-manifest": "deploy/sops-configmap-manifest/cm.enc.yaml", "sops-plain-configmap": "deploy/sops-plain-configmap/cm.enc.yaml",
	}
	for i := range cases {
		cases[i].Want = wants[cases[i].Name] + " is SOPS-encrypted"
	}
	return cases
}

// Leak returns the first form of the SOPS cases' plaintext that s holds
// (as is, base64-encoded alone or as the whole file, upper-cased, split
// by a character), or "".
func Leak(s string) string {
	p := sopstest.DBPassword
	forms := []string{p, base64.StdEncoding.EncodeToString([]byte(p)), base64.StdEncoding.EncodeToString([]byte(SecretsEnv)),
		strings.ToUpper(p), strings.Join(strings.Split(p, ""), "."), strings.Join(strings.Split(p, ""), " ")}
	// Any base64 of the whole file starts the same way, whatever follows.
	forms = append(forms, base64.StdEncoding.EncodeToString([]byte(SecretsEnv))[:24])
	for _, f := range forms {
		if strings.Contains(s, f) {
			return f
		}
	}
	return ""
}
