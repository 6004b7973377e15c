package ui

import (
	"fmt"
	"testing"
	"time"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/status"
)

// manyApps makes n apps in every state.
func manyApps(n int) []status.AppStatus {
	syncs := []status.Sync{status.SyncSynced, status.SyncOutOfSync, status.SyncError, status.SyncUnknown}
	out := make([]status.AppStatus, n)
	for i := range out {
		a := status.AppStatus{
			Name: fmt.Sprintf("app-%03d", i), Path: fmt.Sprintf("deploy/app-%03d", i),
			Destination: app.Destination{Context: []string{"prod", "staging"}[i%2], Namespace: fmt.Sprintf("ns-%d", i%17)},
			Sync:        syncs[i%len(syncs)], Health: status.HealthHealthy, SelfHeal: status.SelfHealOn,
			Revision: fmt.Sprintf("%040x", i), RevisionAuthor: "Mia Chen <mia@example.com>", ComparedAt: testNow,
			Resources: []status.ResourceStatus{deployStatus()},
		}
		if a.Sync == status.SyncOutOfSync {
			since := testNow.Add(-time.Duration(i) * time.Minute)
			a.OutOfSyncSince = &since
		}
		if i%10 == 0 {
			a.Freeze = &app.Freeze{Reason: "INC-1", By: "Lao Li <lao.li@example.com>", At: *at(15, 0), Until: at(19, 0)}
		}
		out[i] = a
	}
	return out
}

// bigDetail makes an object of n live lines, with a change every 50
// lines, an extra live key every 200 and a defaulted one every 300.
func bigDetail(n int) status.ObjectDetail {
	d := status.ObjectDetail{App: "render-prod", Resource: deployStatus()}
	d.Resource.Fields = nil
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/data/key%05d", i)
		live := status.Line{Text: fmt.Sprintf("  key%05d: value-%d", i, i), Path: p, Owners: []status.Owner{kdriftOwn}}
		want := live
		want.Owners = nil
		switch {
		case i%300 == 7:
			live.Owners = nil
			d.Live = append(d.Live, live)
			continue
		case i%200 == 3:
			live.Owners = []status.Owner{kubectl}
			d.Live = append(d.Live, live)
			d.Resource.Fields = append(d.Resource.Fields, status.FieldChange{Path: p, Owners: live.Owners, Class: status.OwnerPerson, Extra: true})
			continue
		case i%50 == 0:
			live.Text += "-hotfix"
			live.Owners = []status.Owner{kubectl}
			d.Resource.Fields = append(d.Resource.Fields, status.FieldChange{Path: p, Owners: live.Owners, Class: status.OwnerPerson})
		}
		d.Desired = append(d.Desired, want)
		d.Live = append(d.Live, live)
	}
	return d
}

// BenchmarkAppsView500 is View() of the apps view with 500 apps.
func BenchmarkAppsView500(b *testing.B) {
	be := newFake()
	be.apps = manyApps(500)
	m := NewModel(b.Context(), be, testConfig())
	m.Update(windowSize(160, 50))
	m.Update(AppsLoadedMsg{Apps: be.apps})
	m.View()
	b.ReportAllocs()
	for b.Loop() {
		m.View()
	}
}

// BenchmarkDiffView5000 is View() of the diff view of a 5,000-line object
// after its layout was computed (the layout is computed once per object
// and width; scrolling only moves the window).
func BenchmarkDiffView5000(b *testing.B) {
	m, dv := diffModel(b, 5000, 160)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Scroll as a person holding j would, so each frame shows new lines.
		dv.top = (i * 7) % (len(dv.lay.lines) - 40)
		i++
		m.View()
	}
}

// BenchmarkDiffLayout5000 is the one-off cost when a 5,000-line object
// arrives or the width changes: alignment plus layout.
func BenchmarkDiffLayout5000(b *testing.B) {
	d := bigDetail(5000)
	c := NewModel(b.Context(), newFake(), testConfig()).c
	b.ReportAllocs()
	for b.Loop() {
		rows := alignLines(d.Desired, d.Live)
		layoutDiff(d, rows, 160, false, false, c)
	}
}

func diffModel(tb testing.TB, lines, width int) (*Model, *diffView) {
	be := newFake()
	m := NewModel(tb.Context(), be, testConfig())
	m.Update(windowSize(width, 50))
	m.Update(AppsLoadedMsg{Apps: be.apps})
	dv := newDiffView(m.c, "render-prod", deployStatus())
	m.stack = append(m.stack, dv)
	m.Update(DetailLoadedMsg{App: "render-prod", Ref: deployRef, Detail: bigDetail(lines)})
	m.View()
	return m, dv
}
