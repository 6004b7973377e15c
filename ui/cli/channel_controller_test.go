package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestControllerHonoursTheIncidentChannel: the remote's main refuses
// pushes, as a protected branch does. A freeze from the terminal UI on
// the person's clone (f, a reason, enter) goes to the incident channel
// and tells the leader; the real `kdrift
// controller` honours it within seconds (a hand scale under it stays) and
// heals again after the unfreeze on the channel; a channel commit that
// edits a manifest is never applied and is reported.
func TestControllerHonoursTheIncidentChannel(t *testing.T) {
	skipSlow(t)
	f := newHealerFixture(t, "channel-healer")
	hook := "#!/bin/sh\nwhile read old new ref; do\n  [ \"$ref\" = refs/heads/main ] && { echo 'protected branch main: changes go through a pull request' >&2; exit 1; }\ndone\nexit 0\n"
	if err := os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	c := f.controller(t)
	eventually(t, c, "the controller to lead and sync the App", 60*time.Second, func() bool {
		st := f.published(t)
		return c.leading() && f.replicas(t) == 2 && st != nil && st["sync"] == "Synced"
	})

	// The on-call engineer freezes from the terminal UI, which follows
	// the leader: f, a reason, enter.
	u := startTmuxUI(t, f.bin, f.clone, "--kdrift-namespace", f.kdriftNS)
	u.waitFor("the UI to follow the leader and list the app", func(s string) bool {
		return strings.Contains(s, "following "+f.kdriftNS+"/") && strings.Contains(s, f.app)
	})
	u.keys("f")
	u.waitFor("the freeze dialog", func(s string) bool { return strings.Contains(s, "Freeze 1 app?") })
	u.typeText("INC-77 keep manual scale")
	pushed := time.Now()
	u.keys("Enter")
	u.waitFor("the status line to say the freeze went to the channel", func(s string) bool {
		return strings.Contains(s, "on the incident channel kdrift/freezes")
	})
	eventually(t, c, "the leader to honour the channel freeze", 10*time.Second, func() bool {
		st := f.published(t)
		return st != nil && st["selfHeal"] == "frozen"
	})
	t.Logf("channel freeze from the UI to honoured by the controller: %s", time.Since(pushed).Round(time.Millisecond))
	u.stop()
	if c := git(t, f.remote, "log", "-1", "--format=%s", "kdrift/freezes"); c != "freeze("+f.app+"): INC-77 keep manual scale" {
		t.Fatalf("the channel's last record: %q", c)
	}
	healed := c.count(t, "Healed")
	f.scale(t, 9)
	time.Sleep(2 * time.Second)
	if r := f.replicas(t); r != 9 || c.count(t, "Healed") != healed {
		t.Fatalf("the channel-frozen app was healed: replicas %d", r)
	}

	out := f.action(t, "unfreeze", f.app, "--reason", "INC-77 over")
	if !strings.Contains(out, "incident channel") {
		t.Fatalf("unfreeze did not go to the channel:\n%s", out)
	}
	eventually(t, c, "the leader to heal once the channel lifts the freeze", 15*time.Second, func() bool { return f.replicas(t) == 2 })

	// Someone pushes a manifest change to the channel: never applied.
	work := filepath.Join(t.TempDir(), "work")
	git(t, filepath.Dir(work), "clone", "-q", "-b", "kdrift/freezes", f.remote, work)
	p := filepath.Join(work, "deploy", "web.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "replicas: 2", "replicas: 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "commit", "-qam", "more replicas")
	git(t, work, "push", "-q", "origin", "kdrift/freezes")
	bad := git(t, work, "rev-parse", "--short=7", "HEAD")
	// Any action's notice makes the leader fetch now; a freeze of the app
	// on the channel is one. Each channel commit is judged by its own
	// diff: the refused commit is skipped, the freeze after it counts.
	f.run(t, "freeze", f.app, "--reason", "INC-78 after the bad commit", "--author", "Erin Oncall <erin@example.com>")
	eventually(t, c, "an Error event naming the refused channel commit", 15*time.Second, func() bool {
		for _, ev := range c.events(t) {
			if ev["type"] == "Error" && strings.Contains(fmt.Sprint(ev["message"]), bad) {
				return true
			}
		}
		return false
	})
	healed = c.count(t, "Healed")
	f.scale(t, 3)
	time.Sleep(2 * time.Second)
	if r := f.replicas(t); r != 3 || c.count(t, "Healed") != healed {
		t.Fatalf("the freeze recorded after the refused channel commit was not honoured: replicas %d", r)
	}
	out = f.action(t, "unfreeze", f.app, "--reason", "INC-78 over")
	if !strings.Contains(out, "in force") || strings.Contains(out, "in force nowhere") {
		t.Fatalf("the unfreeze after the refused channel commit is not said to be in force:\n%s", out)
	}
	eventually(t, c, "the leader to heal the scale once the later record lifts the freeze", 15*time.Second, func() bool { return f.replicas(t) == 2 })
	if r := f.replicas(t); r == 5 {
		t.Fatal("the channel's manifest change was applied")
	}
	c.stop(t)
}
