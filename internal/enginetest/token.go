package enginetest

import (
	"context"
	"path/filepath"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TokenKubeconfig writes a kubeconfig for the control plane whose only
// credential is a token the TokenRequest API issued for ServiceAccount
// ns/name (valid for an hour), and returns its path: a client with exactly
// that ServiceAccount's RBAC.
func TokenKubeconfig(t testing.TB, ns, name string) string {
	t.Helper()
	exp := int64(3600)
	tr, err := Clientset(t).CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	kc, err := clientcmd.LoadFromFile(Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}}
	for _, c := range kc.Contexts {
		c.AuthInfo = name
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
