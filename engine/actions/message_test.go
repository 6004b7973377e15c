package actions

import (
	"strings"
	"testing"
)

func TestSubjectFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		action string
		apps   []string
		reason string
		want   string
	}{
		{"freeze", []string{"render-prod"}, "INC-1234 workers 6->12\nmore", "freeze(render-prod): INC-1234 workers 6->12"},
		{"freeze", []string{"a", "b"}, "short", "freeze(a,b): short"},
		{"freeze", []string{"render-prod", "api-prod", "web-prod"}, "INC-1234 render workers 6->12 to stop session timeouts", "freeze(3 apps): INC-1234 render workers 6->12 to stop session timeouts"},
	}
	for _, c := range cases {
		if got := subjectFor(c.action, c.apps, c.reason); got != c.want {
			t.Errorf("subjectFor(%q, %v, %q) = %q, want %q", c.action, c.apps, c.reason, got, c.want)
		}
	}
	long := subjectFor("unfreeze", []string{"x"}, strings.Repeat("word ", 40))
	if n := len([]rune(long)); n > maxSubject || !strings.HasSuffix(long, "…") {
		t.Errorf("long subject %q (%d runes) not shortened", long, n)
	}
}

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	m := message{Subject: "freeze(a): x", Body: "x\n\nsecond paragraph", Trailers: actionTrailers("freeze", []string{"a", "b"})}
	got := parseMessage(m.String())
	if got.Subject != m.Subject || got.Body != m.Body || got.trailer(TrailerAction) != "freeze" || strings.Join(got.trailerValues(TrailerApp), ",") != "a,b" {
		t.Fatalf("round trip of %q gave %+v", m.String(), got)
	}
	plain := parseMessage("fix: thing\n\nbody only\n")
	if len(plain.Trailers) != 0 || plain.Body != "body only" {
		t.Fatalf("plain message parsed as %+v", plain)
	}
	if _, err := cleanReason("  \n\t "); err == nil {
		t.Fatal("blank reason accepted")
	}
}
