package report

import (
	"testing"
	"time"
)

// TestDuration: kdrift's one duration format, compact and at most two
// units, and Ago built on it.
func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-5 * time.Second:                      "0s",
		0:                                     "0s",
		45 * time.Second:                      "45s",
		59*time.Second + 999*time.Millisecond: "59s",
		time.Minute:                           "1m",
		12*time.Minute + 34*time.Second:       "12m",
		3 * time.Hour:                         "3h",
		3*time.Hour + 12*time.Minute + 5*time.Second: "3h12m",
		24 * time.Hour:                "1d",
		52*time.Hour + 30*time.Minute: "2d4h",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	then := now.Add(-(3*time.Hour + 12*time.Minute))
	if got := Ago(&then, now); got != "3h12m ago" {
		t.Errorf("Ago = %q, want 3h12m ago", got)
	}
	if got := Ago(nil, now); got != "time unknown" {
		t.Errorf("Ago(nil) = %q, want time unknown", got)
	}
}
