package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"kdrift.dev/kdrift/engine/actions"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/internal/controlplane"
	"kdrift.dev/kdrift/internal/demo"
	"kdrift.dev/kdrift/ui"
)

func init() {
	commands["demo"] = newDemoCmd
}

// demoFlags are `kdrift demo`'s flags.
type demoFlags struct {
	dir     string
	keep    bool
	noUI    bool
	logFile string
}

func (f *demoFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "folder for the demo repository and kubeconfig (default: a new temporary folder)")
	fs.BoolVar(&f.keep, "keep", false, "keep the demo folder on exit (the cluster always stops)")
	fs.BoolVar(&f.noUI, "no-ui", false, "set everything up, print where it is, and wait for ctrl-c instead of opening the UI")
	fs.StringVar(&f.logFile, "log-file", "", "write the UI's log to this file")
}

func newDemoCmd(env *cliEnv) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:     "demo [--dir D] [--keep] [--no-ui]",
		GroupID: groupRun,
		Short:   "kdrift on its embedded default: a local control plane, a demo repository and a staged incident",
		Long: `Start a local Kubernetes control plane (built once from kdrift's source
checkout, then cached), create a demo Git repository and its remote, sync
three apps of a digital-human service, stage an incident, and open the UI on
it. Quitting stops the cluster and removes the folder unless --keep says
otherwise. --no-ui runs the engine headless, for trying the CLI against it.
It needs kdrift's source checkout (make demo runs it).`,
		Example: `  # the tour of README.md
  kdrift demo

  # headless, keeping the folder, for the CLI in another terminal
  kdrift demo --no-ui --keep --dir /tmp/kdrift-demo`,
		Args:              argsExactly(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runDemo(cmd.Context(), env, &f))
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func runDemo(ctx context.Context, env *cliEnv, f *demoFlags) int {
	d, err := startDemo(ctx, *f, env.stderr)
	if err != nil {
		if d != nil {
			d.stop(env.stderr)
		}
		return env.errorf("demo: %v", err)
	}
	defer d.stop(env.stderr)

	fmt.Fprintf(env.stdout, `
kdrift demo is up.
  repository:  %s   (try: git -C %s log --format='%%h %%an: %%s%%n%%b')
  remote:      %s
  cluster:     export KUBECONFIG=%s
  apps:        %s (FROZEN: INC-1001), %s (a fight), %s (HPA-owned replicas)
  secrets:     export SOPS_AGE_KEY_FILE=%s   (DEMO ONLY key: prod's tts-vendor-credentials is SOPS-encrypted for it)
`, d.repo.Clone, d.repo.Clone, d.repo.Remote, d.kubeconfig, demo.AppStaging, demo.AppDev, demo.AppProd, d.ageKeyFile)

	if f.noUI {
		fmt.Fprintln(env.stdout, "The engine runs headless until ctrl-c; use the kdrift CLI with --repo and --kubeconfig above.")
		if err := d.engine.Run(ctx); err != nil && ctx.Err() == nil {
			return env.errorf("engine: %v", err)
		}
		return exitOK
	}
	// The newcomer's own actions are recorded under the clone's identity.
	opts := actions.RepoOptions{Repo: d.repo.Clone}
	if err := runEngineUI(ctx, d.engine, opts, ui.Options{LogFile: f.logFile, NoColor: env.colorOff()}, nil, nil); err != nil {
		return env.errorf("%v", err)
	}
	return exitOK
}

// runningDemo is everything startDemo made, for stop to undo.
type runningDemo struct {
	dir        string
	keep       bool
	cp         *controlplane.ControlPlane
	kubeconfig string
	*stagedDemo
}

// stagedDemo is the demo's repository, the engine that synced it and the
// simulated cloud controller, on a cluster someone else runs.
type stagedDemo struct {
	repo   *demo.Repo
	engine *engine.Engine
	// stopController ends the simulated cloud controller and waits for it.
	stopController func()
	// ageKeyFile holds the demo's age identity (DEMO ONLY), for
	// SOPS_AGE_KEY_FILE.
	ageKeyFile string
}

// stageDemo sets the demo up on a running cluster: it creates the
// repository and its remote in dir, syncs every app, has an earlier on-call
// freeze staging, stages the incident and starts the simulated cloud
// controller. The result is never nil, so that stop undoes a partial setup.
// `kdrift demo` runs it on its own control plane; the end-to-end and README
// tests run it on their package's.
func stageDemo(ctx context.Context, dir, kubeconfig string, cs kubernetes.Interface, step func(format string, a ...any)) (*stagedDemo, error) {
	s := &stagedDemo{}
	var err error
	step("Git: creating the demo repository and its remote")
	if s.repo, err = demo.CreateRepo(ctx, dir); err != nil {
		return s, err
	}
	// Prod's tts-vendor-credentials is SOPS-encrypted for the demo's age
	// key (DEMO ONLY), written beside the repository, not in it.
	keyFile, keys, err := demo.WriteAgeKey(dir)
	if err != nil {
		return s, err
	}
	s.ageKeyFile = keyFile
	if s.engine, err = engine.New(engine.Options{Repo: s.repo.Clone, Kubeconfig: kubeconfig, Keys: keys}); err != nil {
		return s, err
	}
	for _, name := range demo.Apps {
		step("sync %s", name)
		res, err := s.engine.Sync(ctx, name, engine.SyncOptions{})
		if err != nil {
			return s, fmt.Errorf("sync %s: %w", name, err)
		}
		if res.Err != "" || res.Failed() > 0 {
			return s, fmt.Errorf("sync %s: %s %v", name, res.Err, res.Objects)
		}
	}
	step("staging: an earlier on-call freezes it during INC-1001")
	frozeAt := time.Now().Add(-40 * time.Minute)
	oncall, err := actions.Open(ctx, actions.RepoOptions{Repo: s.repo.Clone, Author: demo.OnCallAuthor, Now: func() time.Time { return frozeAt }})
	if err != nil {
		return s, err
	}
	if _, err := oncall.Freeze(ctx, actions.FreezeRequest{Selection: actions.Selection{Apps: []string{demo.AppStaging}}, Reason: demo.FreezeReason, For: 4 * time.Hour}); err != nil {
		return s, fmt.Errorf("freeze staging: %w", err)
	}
	step("staging: render-worker scaled to %d with kubectl scale", demo.StagingReplicas)
	if err := demo.StageStaging(ctx, cs); err != nil {
		return s, err
	}
	step("prod: an HPA takes the render-worker's replicas; a ConfigMap key is added by hand")
	if err := demo.StageProd(ctx, cs); err != nil {
		return s, err
	}
	bg, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.stopController = func() { cancel(); <-done }
	errs := make(chan error, 1)
	step("dev: a cloud controller starts rewriting %s on the TTS Service", demo.FightAnnotation)
	go func() {
		defer close(done)
		demo.RunCloudController(bg, cs, 3*time.Second, errs)
	}()
	return s, nil
}

// stop ends the simulated cloud controller, if it started.
func (s *stagedDemo) stop() {
	if s != nil && s.stopController != nil {
		s.stopController()
	}
}

// demoNodes is how many hollow nodes the demo's control plane runs: its
// Pods run there, so its apps become Healthy. Each node offers 16 CPUs and
// 64 GiB; the demo's Pods ask for about 12 CPUs (23 render workers at
// 500m and 1 GiB each) and 23 GiB.
const demoNodes = 2

func startDemo(ctx context.Context, f demoFlags, log io.Writer) (*runningDemo, error) {
	start := time.Now()
	step := func(format string, a ...any) {
		fmt.Fprintf(log, "demo [%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return nil, err
	}
	d := &runningDemo{dir: f.dir, keep: f.keep}
	if d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "kdrift-demo-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, err
	}
	if d.dir, err = filepath.Abs(d.dir); err != nil {
		return d, err
	}
	step("local control plane: reusing the cached binary, or building it once (a cold build takes 10-30 minutes on 2 cores; progress below)")
	buildLog, progress := controlplane.BuildOutput(log, fmt.Sprintf("start the cluster with %d nodes and stage the demo", demoNodes))
	bin, err := controlplane.Binary(ctx, controlplane.BuildOptions{
		SourceDir: filepath.Join(root, controlplane.ModuleDir),
		Log:       buildLog,
		Progress:  progress,
	})
	if err != nil {
		return d, err
	}
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	step("local control plane: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and %d hollow nodes", demoNodes)
	if d.cp, err = controlplane.Start(ctx, controlplane.Options{Binary: bin, ControllerManager: true, Nodes: demoNodes, Kubeconfig: d.kubeconfig}); err != nil {
		return d, err
	}
	cs, err := kubernetes.NewForConfig(d.cp.Config)
	if err != nil {
		return d, err
	}
	d.stagedDemo, err = stageDemo(ctx, d.dir, d.kubeconfig, cs, step)
	if err != nil {
		return d, err
	}
	step("ready")
	return d, nil
}

// stop ends the simulated controller and the control plane and removes the
// demo folder unless asked to keep it.
func (d *runningDemo) stop(log io.Writer) {
	d.stagedDemo.stop()
	if d.cp != nil {
		if err := d.cp.Stop(); err != nil {
			fmt.Fprintf(log, "demo: %v\n", err)
		}
	}
	if d.keep {
		fmt.Fprintf(log, "demo: kept %s (the cluster is stopped)\n", d.dir)
		return
	}
	if d.dir != "" {
		if err := os.RemoveAll(d.dir); err != nil {
			fmt.Fprintf(log, "demo: remove %s: %v\n", d.dir, err)
		}
	}
}
