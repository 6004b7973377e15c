package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
)

// controllers are those that make a Deployment look real (ReplicaSets and
// status), let namespaces finish deleting and give Pods their ServiceAccount.
var controllers = []string{
	names.NamespaceController,
	names.GarbageCollectorController,
	names.ServiceAccountController,
	names.ServiceAccountTokenController,
	names.DeploymentController,
	names.ReplicaSetController,
	names.StatefulSetController,
	names.DaemonSetController,
	names.JobController,
	names.CronJobController,
}

// nodeControllers run too when there are nodes: the node lifecycle
// controller lifts the not-ready taint a new Node is created with, once its
// kubelet reports Ready; the root CA publisher writes the kube-root-ca.crt
// ConfigMap a Pod's ServiceAccount token volume needs before the kubelet
// starts it; the EndpointSlice controller points Services at the Pods.
var nodeControllers = []string{
	names.NodeLifecycleController,
	names.RootCACertificatePublisherController,
	names.EndpointSliceController,
}

// runControllerManager runs a kube-controller-manager in this process until
// ctx ends. Leader election is off: there is only ever one.
func runControllerManager(ctx context.Context, kubeconfig string, p *pki, withNodes bool) error {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range s.Flags(app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()).FlagSets {
		fs.AddFlagSet(f)
	}
	run := controllers
	if withNodes {
		run = append(append([]string(nil), controllers...), nodeControllers...)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(run, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + p.SAKeyFile,
		"--root-ca-file=" + p.CACertFile,
		"--concurrent-deployment-syncs=2",
		"--concurrent-replicaset-syncs=2",
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("flags: %w", err)
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	c, err := s.Config(ctx, app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases())
	if err != nil {
		return err
	}
	return app.Run(ctx, c.Complete())
}
