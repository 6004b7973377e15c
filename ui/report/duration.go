package report

import (
	"fmt"
	"time"
)

// Duration renders an elapsed time the way on-call people read it
// fastest: compact, its two largest units at most, "45s", "12m", "3h12m",
// "2d4h". It is kdrift's one format for a duration in text (the UI, the
// CLI and JSON's text fields); machine fields carry RFC 3339 times. A
// negative duration (a clock ahead of another) is "0s".
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		h := int(d.Hours())
		m := int(d.Minutes()) - h*60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days := int(d.Hours()) / 24
	h := int(d.Hours()) - days*24
	if h == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, h)
}

// Ago renders how long before now t was, in Duration's format: "40s ago",
// "12m ago", "3h12m ago", "2d4h ago"; "time unknown" when t is nil (an
// Update through the scale subresource records none).
func Ago(t *time.Time, now time.Time) string {
	if t == nil {
		return "time unknown"
	}
	return Duration(now.Sub(*t)) + " ago"
}
