package ui

import (
	"fmt"
	"strings"
	"testing"

	"kdrift.dev/kdrift/engine/status"
)

func lines(spec ...string) []status.Line {
	out := make([]status.Line, len(spec))
	for i, s := range spec {
		path, text, _ := strings.Cut(s, "=")
		out[i] = status.Line{Path: path, Text: text}
	}
	return out
}

func TestAlignLines(t *testing.T) {
	tests := []struct {
		name    string
		desired []status.Line
		live    []status.Line
		want    string
	}{
		{"equal", lines("/a=a: 1", "/b=b: 2"), lines("/a=a: 1", "/b=b: 2"), "= ="},
		{"changed value", lines("/a=a: 1", "/b=b: 2"), lines("/a=a: 1", "/b=b: 3"), "= ~"},
		{"extra live key", lines("/a=a: 1", "/c=c: 3"), lines("/a=a: 1", "/b=b: 2", "/c=c: 3"), "= > ="},
		{"missing live key", lines("/a=a: 1", "/b=b: 2", "/c=c: 3"), lines("/a=a: 1", "/c=c: 3"), "= < ="},
		{"structural lines by text", lines("/l=l:", "=- x", "=- y"), lines("/l=l:", "=- x", "=- z", "=- y"), "= = > ="},
		{"no partner either side", lines("/a=a: 1", "/b=b: 1"), lines("/a=a: 1", "/c=c: 1"), "= ~"},
		{"empty git", nil, lines("/a=a: 1"), ">"},
		{"empty live", lines("/a=a: 1"), nil, "<"},
	}
	sym := map[rowKind]string{rowSame: "=", rowChanged: "~", rowLeft: "<", rowRight: ">"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := alignLines(tt.desired, tt.live)
			var got []string
			for _, r := range rows {
				got = append(got, sym[r.kind])
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("rows = %s, want %s", strings.Join(got, " "), tt.want)
			}
		})
	}
}

func TestAlignLinesKeepsEveryLineOnce(t *testing.T) {
	d := bigDetail(5000)
	rows := alignLines(d.Desired, d.Live)
	l, r := 0, 0
	for _, row := range rows {
		if row.left >= 0 {
			if row.left != l {
				t.Fatalf("Git line %d out of order (want %d)", row.left, l)
			}
			l++
		}
		if row.right >= 0 {
			if row.right != r {
				t.Fatalf("live line %d out of order (want %d)", row.right, r)
			}
			r++
		}
	}
	if l != len(d.Desired) || r != len(d.Live) {
		t.Fatalf("kept %d/%d Git and %d/%d live lines", l, len(d.Desired), r, len(d.Live))
	}
}

func openDiff(t *testing.T, width int) *harness {
	t.Helper()
	h := newHarness(t, newFake(), testConfig())
	h.send(windowSize(width, 30))
	h.keys("j", "enter", "j", "enter")
	return h
}

func TestDiffLayoutFollowsWidth(t *testing.T) {
	h := openDiff(t, 140)
	h.wantScreen("[side-by-side]", "GIT (desired)", "  replicas: 6", "  replicas: 12", "kubectl Update/scale · person")
	h.keys("u")
	h.wantScreen("[unified]", "- Git (desired)  + live", "-   replicas: 6", "+   replicas: 12")
	h.keys("u")
	h.wantScreen("[side-by-side]")

	narrow := openDiff(t, 90)
	narrow.wantScreen("[unified]")
	narrow.keys("u")
	narrow.wantScreen("[side-by-side]")
}

func TestDiffAnnotatesOwners(t *testing.T) {
	h := openDiff(t, 160)
	h.wantScreen("kubectl-edit Update 1h · person", "kubectl Update/scale · person")
	h.wantScreen("drifted field 1/2 /metadata/annotations · owners: kubectl-edit Update · person · 1h ago · added live, not in Git")
	h.keys("x")
	h.wantScreen("apiserver default · defaulted")
}

func TestDiffJumpsBetweenChanges(t *testing.T) {
	h := openDiff(t, 140)
	dv := h.m.top().(*diffView)
	if dv.currentPath() != "/metadata/annotations" {
		t.Errorf("opens on %s, want the first drifted field", dv.currentPath())
	}
	// n and N skip the defaulted progressDeadlineSeconds, shown or not.
	h.keys("x", "n")
	if dv.currentPath() != "/spec/replicas" {
		t.Errorf("after x n: %s", dv.currentPath())
	}
	h.wantScreen("drifted field 2 of 2")
	h.keys("n")
	h.wantScreen("no more drifted fields")
	h.keys("N")
	if dv.currentPath() != "/metadata/annotations" {
		t.Errorf("after N: %s", dv.currentPath())
	}
	for _, l := range strings.Split(h.screen(), "\n") {
		if strings.Contains(l, "▶") && !strings.Contains(l, "annotations:") {
			t.Errorf("the marked line is not the annotations change: %q", l)
		}
	}
}

func TestDiffHidesDefaultsUntilX(t *testing.T) {
	h := openDiff(t, 140)
	h.wantScreen("2 drifted fields · 1 defaulted hidden")
	if strings.Contains(h.screen(), "progressDeadlineSeconds") {
		t.Error("defaulted field shown when the diff opens")
	}
	h.keys("x")
	h.wantScreen("2 drifted fields · 1 defaulted shown", "ignored and defaulted fields shown", "progressDeadlineSeconds: 600")
	h.keys("x")
	h.wantScreen("2 drifted fields · 1 defaulted hidden", "ignored and defaulted fields hidden")
}

// A diff opens with the cursor on the first drifted field and scrolls to
// it, past a long run of defaults that are hidden.
func TestDiffOpensOnTheDrift(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	k := []status.Owner{kdriftOwn}
	var live []status.Line
	for _, l := range d.Live {
		if l.Path == "/spec/replicas" {
			// A defaulted block: its opener has no owner and nothing
			// below it is owned.
			live = append(live, status.Line{Text: "  strategy:", Path: "/spec/strategy", Parent: true},
				status.Line{Text: "    rollingUpdate:", Path: "/spec/strategy/rollingUpdate", Parent: true},
				status.Line{Text: "      maxSurge: 25%", Path: "/spec/strategy/rollingUpdate/maxSurge"},
				status.Line{Text: "    type: RollingUpdate", Path: "/spec/strategy/type"})
			for i := 0; i < 40; i++ {
				live = append(live, status.Line{Text: fmt.Sprintf("  zdefault%02d: 1", i), Path: fmt.Sprintf("/spec/zdefault%02d", i)})
			}
		}
		live = append(live, l)
	}
	d.Live = live
	d.Resource.Fields = d.Resource.Fields[:1] // only replicas drifts
	d.Live[3].Owners, d.Live[4].Owners = k, k // the annotation is kdrift's: same on both sides
	d.Desired = append(d.Desired[:3:3], append([]status.Line{d.Live[3], d.Live[4]}, d.Desired[3:]...)...)
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.send(windowSize(120, 24))
	h.keys("j", "enter", "j", "enter")
	dv := h.m.top().(*diffView)
	h.wantScreen("1 drifted field · 43 defaulted hidden", "▶  replicas: 6", "drifted field 1/1 /spec/replicas")
	if dv.currentPath() != "/spec/replicas" {
		t.Errorf("opens on %s", dv.currentPath())
	}
	for _, hidden := range []string{"strategy:", "rollingUpdate:", "zdefault"} {
		if strings.Contains(h.screen(), hidden) {
			t.Errorf("%q shown while defaults are hidden:\n%s", hidden, h.screen())
		}
	}
	h.keys("x")
	h.wantScreen("1 drifted field · 43 defaulted shown", "▶  replicas: 6")
	h.keys("g")
	h.wantScreen("strategy:", "maxSurge: 25%")
}

func TestDiffOfASyncedObjectSaysNoDrift(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	d.Resource.Status = status.ResourceSynced
	d.Resource.Fields = nil
	d.Live = withoutNote(d.Live)
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.keys("j", "enter", "j", "enter")
	h.wantScreen("✓ Synced  no drift · 1 defaulted hidden", "✓ no drift")
	h.keys("n")
	h.wantScreen("no drift in this object")
}

// TestDiffSaysWhichTierCompared: the header says an object was compared
// locally, with no request to the apiserver.
func TestDiffSaysWhichTierCompared(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	d.Resource.Status = status.ResourceSynced
	d.Resource.Fields = nil
	d.Resource.Decided = status.DecidedLocal
	d.Live = withoutNote(d.Live)
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.keys("j", "enter", "j", "enter")
	h.wantScreen("no drift · 1 defaulted hidden  compared locally")
}

func TestDiffMarksIgnoredFields(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	d.Resource.Fields[0].Ignored = true
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.send(windowSize(160, 30))
	h.keys("j", "enter", "j", "enter")
	if strings.Contains(h.screen(), "replicas: 12") {
		t.Error("ignored field shown when the diff opens")
	}
	h.wantScreen("1 drifted field · 1 defaulted hidden · 1 ignored hidden")
	h.keys("x")
	h.wantScreen("ignored · kubectl Update/scale · person", "1 ignored shown")
}

func TestDiffScrollsBigObject(t *testing.T) {
	be := newFake()
	be.details[deployRef] = bigDetail(5000)
	h := newHarness(t, be, testConfig())
	h.keys("j", "enter", "j", "enter", "G")
	dv := h.m.top().(*diffView)
	h.wantScreen(fmt.Sprintf("key%05d", 4999))
	h.keys("g")
	h.wantScreen("key00000")
	for i := 0; i < 5; i++ {
		h.keys("n")
	}
	if dv.change != 5 {
		t.Errorf("change = %d after 5×n", dv.change)
	}
	h.wantScreen("▶", fmt.Sprintf("drifted field 6/%d", len(dv.lay.changes)))
	h.keys("pgdown")
	if dv.top == 0 {
		t.Error("pgdown did not scroll")
	}
}

func TestDiffLoadError(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "enter") // the ConfigMap has no detail in the fake
	h.wantScreen("ConfigMap/prod/render-old: not found in app render-prod", "ctrl+r retries")
	if strings.Count(h.screen(), "ConfigMap/prod/render-old: not found") != 2 {
		t.Errorf("the error should read once in the view and once in the status line, naming the object once each")
	}
}

func TestOwnershipView(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "o")
	h.wantScreen("3 managers", "1 fields Git sets but another manager owns (⚑)",
		"kdrift Apply 2h", "kubectl-edit Update 1h", "· defaulted", "⚑   replicas: 12",
		"/spec/replicas: kubectl Update/scale · person · time unknown · Git sets it too: `i` adds an ignore rule")
	ov := h.m.top().(*ownersView)
	if ov.lines[ov.cursor].path != "/spec/replicas" {
		t.Errorf("cursor starts on %s, want the first flagged field", ov.lines[ov.cursor].path)
	}
	h.keys("g", "n")
	if ov.lines[ov.cursor].path != "/spec/replicas" {
		t.Errorf("n moved to %s", ov.lines[ov.cursor].path)
	}
	h.keys("n")
	h.wantScreen("no more flagged fields")
	h.keys("k")
	h.wantScreen("/spec/progressDeadlineSeconds: nobody: defaulted by the apiserver")
	// "metadata:" and "spec:" open maps: no owner of their own, not defaulted.
	if n := strings.Count(h.screen(), "· defaulted"); n != 1 {
		t.Errorf("%d lines marked defaulted, want only progressDeadlineSeconds's:\n%s", n, h.screen())
	}
}

func TestDiffLayoutIsBuiltInUpdateNotInView(t *testing.T) {
	h := newHarness(t, newFake(), testConfig())
	h.keys("j", "enter", "j", "enter")
	dv := h.m.top().(*diffView)
	if dv.lay.lines == nil || dv.lay.width != 140 {
		t.Fatalf("no layout after the object arrived (width %d)", dv.lay.width)
	}
	h.send(windowSize(100, 30))
	if dv.lay.width != 100 || dv.lay.unified {
		t.Fatalf("resize: layout width %d unified %v", dv.lay.width, dv.lay.unified)
	}
	h.send(windowSize(90, 30))
	if !dv.lay.unified {
		t.Fatal("under 100 columns the layout should turn unified")
	}
}

func TestDiffOfAMissingObject(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	d.Live = nil
	d.Resource.Status = status.ResourceMissing
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.keys("j", "enter", "j", "enter")
	h.wantScreen("+ Missing", "4 drifted fields", "  replicas: 6", "not live")
	if strings.Contains(h.screen(), "· defaulted") {
		t.Error("a field that is not live is not defaulted")
	}
}

// withoutNote is the fixture's live lines without the hand-added
// annotation, as a Synced object's would be.
func withoutNote(live []status.Line) []status.Line {
	var out []status.Line
	for _, l := range live {
		if !strings.HasPrefix(l.Path, "/metadata/annotations") {
			out = append(out, l)
		}
	}
	return out
}

// TestDiffCountsOnlyDriftedFields: an object written by Update leaves
// its writer owning the apiserver's defaults; live lines no field of the
// comparison covers are defaults, hidden and never counted, and the
// header's count is the comparison's (status.ResourceStatus.Drifted), so
// n goes to the one drifted field.
func TestDiffCountsOnlyDriftedFields(t *testing.T) {
	be := newFake()
	d := be.details[deployRef]
	argo := []status.Owner{{Manager: "argocd-controller", Operation: "Update", Class: status.OwnerGitOps}}
	d.Live = withoutNote(d.Live)
	var live []status.Line
	for _, l := range d.Live {
		switch l.Path {
		case "/spec/progressDeadlineSeconds":
			l.Owners = argo
		case "/spec/replicas":
			live = append(live, status.Line{Text: "  revisionHistoryLimit: 10", Path: "/spec/revisionHistoryLimit", Owners: argo})
		}
		live = append(live, l)
	}
	live = append(live, status.Line{Text: "  strategy:", Path: "/spec/strategy", Parent: true, Owners: argo},
		status.Line{Text: "    type: RollingUpdate", Path: "/spec/strategy/type", Owners: argo})
	d.Live = live
	d.Resource.Fields = d.Resource.Fields[:1] // the scale alone
	be.details[deployRef] = d
	h := newHarness(t, be, testConfig())
	h.send(windowSize(140, 30))
	h.keys("j", "enter", "j", "enter")
	dv := h.m.top().(*diffView)
	h.wantScreen("1 drifted field · 3 defaulted hidden", "drifted field 1/1 /spec/replicas")
	if got := d.Resource.Drifted(); got != 1 || len(dv.lay.changes) != 1 {
		t.Fatalf("Drifted() = %d, changes = %d; want 1 and 1", got, len(dv.lay.changes))
	}
	h.keys("x")
	h.wantScreen("1 drifted field · 3 defaulted shown", "revisionHistoryLimit: 10")
	h.keys("n")
	h.wantScreen("no more drifted fields")
}
