// Command builddelivery builds (or finds cached) the delivery controllers
// the progressive-delivery tests run, Argo Rollouts and Flagger, and
// prints their paths; `make delivery` runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"kdrift.dev/kdrift/internal/controlplane"
	"kdrift.dev/kdrift/internal/deliverytest"
)

func main() {
	for _, c := range deliverytest.All {
		start := time.Now()
		log, progress := controlplane.BuildOutputOf(os.Stderr, c.Subject(), "run the tests")
		bin, err := c.Build(context.Background(), log, progress)
		if err != nil {
			fmt.Fprintf(os.Stderr, "builddelivery: %s: %v\n", c.Name, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "%s %s ready in %s\n", c.Name, c.Version, time.Since(start).Round(time.Second))
		fmt.Println(bin)
	}
}
