package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// runScheduler runs the real kube-scheduler in this process until ctx ends,
// with its default profile, so Pods land on the hollow nodes. It serves no
// port and does not elect a leader: there is only ever one.
func runScheduler(ctx context.Context, kubeconfig string) error {
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("flags: %w", err)
	}
	name, err := cache.NewInformerName("kube-scheduler")
	if err != nil {
		return err
	}
	opts.InformerName = name
	cc, sched, err := app.Setup(ctx, opts)
	if err != nil {
		return err
	}
	return app.Run(ctx, cc, sched)
}
