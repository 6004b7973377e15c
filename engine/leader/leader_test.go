package leader

import (
	"strings"
	"testing"
	"time"
)

func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Settings{
		{Duration: 5 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: time.Second},
		{Duration: 5 * time.Second, RenewDeadline: time.Second, RetryPeriod: time.Second},
		{Duration: 0, RenewDeadline: time.Second, RetryPeriod: time.Second},
	} {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "lease settings") {
			t.Errorf("%s: err = %v", s, err)
		}
	}
}

func TestLeaseName(t *testing.T) {
	a, b := LeaseName("git.example/org/repo#main"), LeaseName("git.example/org/repo#dev")
	if a == b || !strings.HasPrefix(a, "kdrift-") || len(a) != len("kdrift-")+10 || a != LeaseName("git.example/org/repo#main") {
		t.Fatalf("lease names %q %q", a, b)
	}
}

func TestObservationLive(t *testing.T) {
	now := time.Now()
	o := Observation{Holder: "h", Renewed: now.Add(-2 * time.Second), Duration: 15 * time.Second}
	if !o.Live(now) || o.Live(now.Add(14*time.Second)) || (Observation{}).Live(now) {
		t.Fatal("Live")
	}
}
