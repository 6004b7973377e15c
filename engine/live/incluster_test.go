package live_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"kdrift.dev/kdrift/engine/live"
	"kdrift.dev/kdrift/internal/enginetest"
)

// TestInClusterWithoutKubeconfig: with no kubeconfig anywhere (no flag, no
// $KUBECONFIG, no ~/.kube/config), the clients use the Pod's
// ServiceAccount under the context name "in-cluster"; outside a Pod the
// error says that neither was found.
func TestInClusterWithoutKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())

	restore := live.SetInClusterConfig(func() (*rest.Config, error) { return enginetest.Config(), nil })
	cs, err := live.NewClients("", live.Options{}).For("")
	restore()
	if err != nil {
		t.Fatalf("in a Pod without a kubeconfig: %v", err)
	}
	if cs.Context != live.InClusterContext || cs.Server != enginetest.Config().Host {
		t.Fatalf("context %q server %q, want %q and %q", cs.Context, cs.Server, live.InClusterContext, enginetest.Config().Host)
	}
	if err := cs.Check(context.Background()); err != nil {
		t.Fatalf("version check through the in-cluster config: %v", err)
	}

	restore = live.SetInClusterConfig(func() (*rest.Config, error) { return nil, errors.New("not running in a Pod") })
	defer restore()
	_, err = live.NewClients("", live.Options{}).For("")
	if err == nil || !strings.Contains(err.Error(), "no in-cluster ServiceAccount") || !strings.Contains(err.Error(), "not running in a Pod") {
		t.Fatalf("outside a Pod without a kubeconfig: err = %v, want one saying neither was found", err)
	}
}
