package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"kdrift.dev/kdrift/internal/enginetest"
)

// fleetSize is how many Apps heal while the faults are injected.
const fleetSize = 50

// TestFaultCampaign injects faults, one after the other, into a real
// `kdrift controller` healing a fleet of fleetSize Apps on the real
// control plane from a real Git remote over HTTP, and checks after each
// what the published AppStatuses and `kdrift status` say, that no object
// was deleted or reverted wrongly, that no commit was lost, and how long
// the fleet takes to converge once the fault is gone (logged as "fault
// figure" lines; README's Reliability table gives them).
func TestFaultCampaign(t *testing.T) {
	skipSlow(t)
	f := newFleet(t, "faults", fleetSize)
	head := func() string { return git(t, f.bare, "rev-parse", "main") }
	// Controllers started inside a case outlive it: they belong to the
	// whole campaign (a subtest's cleanup would kill them as it ends).
	top := t

	c := f.start(t)
	// After a failed case (reported as such) the campaign goes on with
	// the next fault from a running controller and a converged fleet.
	resume := func() {
		t.Helper()
		f.git.pass()
		f.api.pass()
		if c.cmd.ProcessState != nil {
			c = f.start(top)
		}
		f.converge(t, c, "before the next fault", head(), 3*time.Minute)
	}
	eventually(t, c, "the controller to take the Lease", 60*time.Second, c.leading)
	d := f.converge(t, c, "cold start", head(), 3*time.Minute)
	figure(t, "none", fmt.Sprintf("cold start: %d Apps synced and published", f.n), d)
	f.uids = map[string]types.UID{}
	for name, cm := range f.configMaps(t) {
		f.uids[name] = cm.UID
	}
	commit := f.commitGen(t, 2, nil)
	f.nudge(t, commit)
	figure(t, "none", "a change to every App: push to fleet converged", f.converge(t, c, "a change to every App", commit, 2*time.Minute))

	ok := t.Run("git remote black-holed then refusing", func(t *testing.T) {
		f.git.set(proxyBlackHole)
		commit := f.commitGen(t, 3, nil)
		f.nudge(t, commit)
		// While Git hangs, drift is healed to the last fetched
		// revision (gen 2, never an older one, never a deletion) and
		// the App's status says Git is unreachable.
		unreachable := func(want string) func() bool {
			return func() bool {
				f.drift(t, "app-00", "kubectl")
				time.Sleep(time.Second)
				st := f.statuses(t)["app-00"]
				msg, _ := st["error"].(string)
				return strings.Contains(msg, "Git unreachable since") && strings.Contains(msg, want)
			}
		}
		eventually(t, c, "app-00's status to say the remote timed out", 60*time.Second, unreachable("timed out"))
		drifted := time.Now()
		f.drift(t, "app-01", "kubectl")
		eventually(t, c, "app-01 healed to the last fetched revision", 30*time.Second, func() bool {
			return f.configMaps(t)["app-01"].Data["gen"] == "2"
		})
		figure(t, "Git black-holed", "drift healed while Git hangs", time.Since(drifted))
		if bad := f.wrong(t); len(bad) > 0 {
			t.Fatal(strings.Join(bad, "; "))
		}
		for name, cm := range f.configMaps(t) {
			if name != "bystander" && cm.Data["gen"] != "2" {
				t.Fatalf("%s holds gen %q while Git hangs; want the last fetched, 2", name, cm.Data["gen"])
			}
		}
		code, out, errOut := runIn(t, f.clone, f.bin, "status", "--kubeconfig", enginetest.Kubeconfig(), "--kdrift-namespace", f.kdriftNS)
		if code != exitOK && code != exitDrift || !strings.Contains(out, "Git unreachable since") {
			t.Fatalf("kdrift status while Git hangs: exit %d\n%s\n%s", code, out, errOut)
		}
		t.Logf("kdrift status while Git hangs:\n%s", firstLines(out, 4))

		f.git.set(proxyRefuse)
		f.nudge(t, commit)
		eventually(t, c, "app-00's status to say the remote refuses", 60*time.Second, unreachable("refused"))

		// Nobody pushes: the next periodic fetch (every 30 s) finds
		// the held-back commit.
		f.git.set(proxyPass)
		figure(t, "Git black-holed then refusing", "remote back to fleet converged on the held-back commit (next periodic fetch)", f.converge(t, c, "after the remote came back", commit, 2*time.Minute))
	})
	if !ok {
		resume()
	}

	ok = t.Run("controller SIGKILLed mid-apply", func(t *testing.T) {
		commit := f.commitGen(t, 4, nil)
		f.nudge(t, commit)
		applied := waitFirstApplied(t, f, "4", 60*time.Second)
		kill(t, c)
		t.Logf("SIGKILL with %d of %d Apps applied; lock files left in the cache: %v", applied(), f.n, f.lockFiles(t))
		if bad := f.wrong(t); len(bad) > 0 {
			t.Fatal(strings.Join(bad, "; "))
		}
		c = f.start(top)
		d := f.converge(t, c, "after the restart", commit, 2*time.Minute)
		figure(t, "controller SIGKILLed mid-apply", "restart to fleet converged", d)
		f.fsck(t)
	})
	if !ok {
		resume()
	}

	ok = t.Run("controller SIGKILLed as a freeze commit lands", func(t *testing.T) {
		before := head()
		freeze := exec.Command(f.bin, "freeze", "app-49", "--reason", "INC-9 hold app-49", "--kubeconfig", enginetest.Kubeconfig(), "--kdrift-namespace", f.kdriftNS, "--author", "Erin Oncall <erin@example.com>")
		freeze.Dir = f.clone
		freeze.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KDRIFT_GIT_TIMEOUT=5s"}
		var fout syncBuffer
		freeze.Stdout, freeze.Stderr = &fout, &fout
		if err := freeze.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, c, "the freeze commit to reach the remote", 60*time.Second, func() bool { return head() != before })
		kill(t, c)
		if err := freeze.Wait(); err != nil {
			t.Fatalf("kdrift freeze: %v\n%s", err, fout.String())
		}
		commit := head()
		if subj := git(t, f.bare, "log", "-1", "--format=%s", commit); !strings.Contains(subj, "app-49") {
			t.Fatalf("the remote's head is not the freeze: %q", subj)
		}
		t.Logf("SIGKILL as the freeze landed; kdrift freeze said: %s; lock files left: %v", strings.TrimSpace(fout.String()), f.lockFiles(t))
		// A person changes the frozen App's object while no controller
		// runs: the restarted one must honour the freeze it never saw.
		f.drift(t, "app-49", "held-by-person")
		f.frozen["app-49"], f.frozenAt["app-49"] = true, "held-by-person"
		f.drift(t, "app-48", "kubectl")
		c = f.start(top)
		restarted := time.Now()
		eventually(t, c, "the restarted controller to publish app-49 frozen", 60*time.Second, func() bool {
			return f.statuses(t)["app-49"]["selfHeal"] == "frozen"
		})
		figure(t, "controller SIGKILLed as a freeze commit lands", "restart to the freeze honoured", time.Since(restarted))
		f.converge(t, c, "after the restart", commit, 2*time.Minute)
		figure(t, "controller SIGKILLed as a freeze commit lands", "restart to fleet converged", time.Since(restarted))
		time.Sleep(2 * time.Second)
		if bad := f.wrong(t); len(bad) > 0 {
			t.Fatal(strings.Join(bad, "; "))
		}
		f.fsck(t)
	})
	if !ok {
		resume()
	}

	ok = t.Run("apiserver restarted mid-pass", func(t *testing.T) {
		commit := f.commitGen(t, 5, nil)
		f.nudge(t, commit)
		applied := waitFirstApplied(t, f, "5", 60*time.Second)
		n := applied()
		began := time.Now()
		enginetest.RestartAPIServer(t)
		ready := time.Now()
		t.Logf("apiserver restarted with %d of %d Apps applied (stop to ready again: %s)", n, f.n, ready.Sub(began).Round(10*time.Millisecond))
		figure(t, "apiserver restarted mid-pass", "apiserver stop to ready again", ready.Sub(began))
		d := f.converge(t, c, "after the apiserver restarted", commit, 2*time.Minute)
		figure(t, "apiserver restarted mid-pass", "apiserver ready to fleet converged", d)
		if c.cmd.ProcessState != nil {
			t.Fatalf("the controller exited: %v\n%s", c.cmd.ProcessState, tail(c.errOut.String(), 30))
		}
		f.showStatus(t, "after the apiserver restarted", "")
	})
	if !ok {
		resume()
	}

	ok = t.Run("etcd slowed", func(t *testing.T) {
		const latency = 250 * time.Millisecond
		cms := enginetest.Clientset(t).CoreV1().ConfigMaps(f.ns)
		read := func() time.Duration {
			start := time.Now()
			if _, err := cms.Get(context.Background(), "bystander", metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
			return time.Since(start)
		}
		fast := read()
		enginetest.SetEtcdLatency(t, latency)
		t.Cleanup(func() { enginetest.SetEtcdLatency(t, 0) })
		t.Logf("one read of an object: %s before, %s with every etcd request delayed %s", fast.Round(time.Millisecond), read().Round(time.Millisecond), latency)
		commit := f.commitGen(t, 6, nil)
		f.nudge(t, commit)
		f.drift(t, "app-04", "kubectl")
		d := f.converge(t, c, "with etcd slowed", commit, 3*time.Minute)
		figure(t, fmt.Sprintf("etcd slowed (+%s a request)", latency), "push to fleet converged", d)
		if !c.leading() || c.cmd.ProcessState != nil {
			t.Fatalf("the controller lost the Lease or exited with etcd slowed\n%s", tail(c.errOut.String(), 30))
		}
		f.showStatus(t, "with etcd slowed", "")
	})
	if !ok {
		resume()
	}

	ok = t.Run("apiserver throttling kdrift", func(t *testing.T) {
		plName := throttle(t, f)
		before := rejected(t, plName)
		commit := f.commitGen(t, 7, nil)
		f.nudge(t, commit)
		f.drift(t, "app-02", "kubectl")
		d := f.converge(t, c, "under throttling", commit, 3*time.Minute)
		n := rejected(t, plName) - before
		t.Logf("the apiserver rejected %d of kdrift's requests with 429 during the pass", n)
		if n == 0 {
			t.Fatalf("the priority level %s rejected nothing: the case throttled nothing", plName)
		}
		figure(t, "apiserver throttling kdrift (429s)", "push to fleet converged", d)
	})
	if !ok {
		resume()
	}

	ok = t.Run("cache folder full", func(t *testing.T) {
		kill(t, c)
		const limit = 1 << 20
		c = f.start(top, "prlimit", fmt.Sprintf("--fsize=%d:%d", limit, limit), "--")
		eventually(t, c, "the limited controller to lead", 60*time.Second, c.leading)
		f.converge(t, c, "the limited controller", head(), 2*time.Minute)
		big := make([]byte, 3*limit)
		if _, err := rand.Read(big); err != nil {
			t.Fatal(err)
		}
		commit := f.commitGen(t, 8, map[string]string{"blobs/big.bin": string(big)})
		f.nudge(t, commit)
		var msg string
		eventually(t, c, "app-00's status to say the fetch failed", 60*time.Second, func() bool {
			f.drift(t, "app-00", "kubectl")
			time.Sleep(time.Second)
			msg, _ = f.statuses(t)["app-00"]["error"].(string)
			return strings.Contains(msg, "Git not fetched (the cache folder is full) since")
		})
		t.Logf("app-00's status with the cache folder full: %s", msg)
		if !strings.Contains(msg, "file too large") && !strings.Contains(msg, "no space") || strings.Contains(msg, "check the URL") || !strings.Contains(msg, "free space or raise the limit") {
			t.Fatalf("the status does not say the disk is full, or gives the network's advice: %s", msg)
		}
		for name, cm := range f.configMaps(t) {
			if !f.frozen[name] && name != "bystander" && cm.Data["gen"] != "7" {
				t.Fatalf("%s holds gen %q with the cache folder full; want the last fetched, 7", name, cm.Data["gen"])
			}
		}
		f.fsck(t)
		kill(t, c)
		c = f.start(top)
		d := f.converge(t, c, "after the disk was freed", commit, 2*time.Minute)
		figure(t, "cache folder full (file size limit)", "restart with room to fleet converged", d)
		f.fsck(t)
	})
	if !ok {
		resume()
	}

	t.Run("Lease holder's clock 30 s off", func(t *testing.T) {
		for _, skew := range []time.Duration{-30 * time.Second, 30 * time.Second} {
			kill(t, c)
			stop := skewedHolder(t, f, skew)
			f.drift(t, "app-03", "kubectl")
			c = f.start(top)
			// The renewing holder keeps the Lease whatever its clock:
			// the new controller waits as a standby and heals nothing.
			time.Sleep(6 * time.Second)
			if c.leading() || f.configMaps(t)["app-03"].Data["gen"] != "kubectl" {
				t.Fatalf("clock %s: the controller took the Lease from a live holder\n%s", skew, tail(c.errOut.String(), 20))
			}
			code, _, errOut := runIn(t, f.clone, f.bin, "status", "--kubeconfig", enginetest.Kubeconfig(), "--kdrift-namespace", f.kdriftNS)
			if code == exitError || !strings.Contains(errOut, "following "+f.kdriftNS+"/skewed-holder") {
				t.Fatalf("clock %s: kdrift status does not follow the live holder: exit %d\n%s", skew, code, errOut)
			}
			stopped := time.Now()
			stop()
			eventually(t, c, "the standby to take over and heal", 60*time.Second, func() bool {
				return c.leading() && f.configMaps(t)["app-03"].Data["gen"] == strconv.Itoa(f.gen)
			})
			figure(t, fmt.Sprintf("Lease holder's clock %+ds", int(skew.Seconds())), "holder stopped to the standby healing", time.Since(stopped))
			if bad := f.wrong(t); len(bad) > 0 {
				t.Fatal(strings.Join(bad, "; "))
			}
		}
		c.stop(t)
	})
}

// waitFirstApplied waits until some App's object holds gen and returns a
// counter of how many do.
func waitFirstApplied(t *testing.T, f *fleet, gen string, timeout time.Duration) func() int {
	t.Helper()
	count := func() int {
		n := 0
		for name, cm := range f.configMaps(t) {
			if name != "bystander" && cm.Data["gen"] == gen {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(timeout)
	for count() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no App applied gen %s within %s", gen, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return count
}

// runIn runs the kdrift binary in dir and returns its exit code and
// outputs.
func runIn(t *testing.T, dir, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KDRIFT_GIT_TIMEOUT=5s"}
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// throttle puts the controller's ServiceAccount in a priority level of
// its own with the smallest concurrency the apiserver allows, that
// rejects (429) what does not fit; removed when the test ends. It
// returns the priority level's name.
func throttle(t *testing.T, f *fleet) string {
	t.Helper()
	ctx := context.Background()
	fc := enginetest.Clientset(t).FlowcontrolV1()
	name := f.ns + "-kdrift-tiny"
	one, zero := int32(1), int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &one,
				LendablePercent:          &zero,
				BorrowingLimitPercent:    &zero,
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence:         10,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: f.kdriftNS, Name: f.sa}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	if _, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fc.FlowSchemas().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = fc.PriorityLevelConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// The apiserver takes the new configuration in within a moment.
	eventually(t, nil, "the apiserver to use the FlowSchema", 30*time.Second, func() bool {
		got, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == flowcontrolv1.ConditionFalse {
				return true
			}
		}
		return false
	})
	return name
}

// rejected is the apiserver's count of requests of priority level pl it
// rejected, from its /metrics.
func rejected(t *testing.T, pl string) int {
	t.Helper()
	body, err := enginetest.Clientset(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("apiserver /metrics: %v", err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_flowcontrol_rejected_requests_total{") || !strings.Contains(line, `priority_level="`+pl+`"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			n += int(v)
		}
	}
	return n
}

// skewedHolder takes the fleet's Lease as another process whose clock is
// skew off would: it writes its renewals stamped with its own clock every
// 250 ms until the returned stop is called (then it stops renewing, as a
// holder that died).
func skewedHolder(t *testing.T, f *fleet, skew time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	leases := enginetest.Clientset(t).CoordinationV1().Leases(f.kdriftNS)
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		cancel()
		t.Fatalf("the fleet's Lease: %v (%d Leases)", err, len(list.Items))
	}
	name := list.Items[0].Name
	holder, dur := "skewed-holder", int32(3)
	renew := func(first bool) error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now().Add(skew))
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &dur, &now
		if first {
			l.Spec.AcquireTime = &now
			tr := int32(1)
			if l.Spec.LeaseTransitions != nil {
				tr = *l.Spec.LeaseTransitions + 1
			}
			l.Spec.LeaseTransitions = &tr
		}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "skewed-holder"})
		return err
	}
	if err := renew(true); err != nil {
		cancel()
		t.Fatalf("take the Lease: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = renew(false)
			}
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}
