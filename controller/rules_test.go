package controller

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"kdrift.dev/kdrift/engine/app"
	"kdrift.dev/kdrift/engine/engine"
	"kdrift.dev/kdrift/engine/status"
	"kdrift.dev/kdrift/internal/enginetest"
)

// prometheusRule is the documented shape of a PrometheusRule
// (monitoring.coreos.com/v1), strictly: an unknown field is an error.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// promQLWords are the PromQL keywords, functions and label names the
// rules may use besides metric names.
var promQLWords = []string{"and", "or", "unless", "on", "ignoring", "by", "without", "time", "vector", "max", "min", "sum", "app", "bool"}

// TestAlertRules: deploy/monitoring/prometheusrule.yaml is a valid
// PrometheusRule with the five alerts of README, each with a severity, a
// duration, a summary, a description and a runbook; every metric its
// expressions use is one kdrift exports.
func TestAlertRules(t *testing.T) {
	root, err := enginetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	if err := yaml.UnmarshalStrict(b, &pr); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" || len(pr.Spec.Groups) == 0 {
		t.Fatalf("prometheusrule.yaml is not a PrometheusRule: %+v", pr)
	}
	exported := exportedMetrics(t)
	var alerts []string
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if _, err := time.ParseDuration(r.For); err != nil || r.Labels["severity"] == "" {
				t.Errorf("alert %s: for %q, severity %q", r.Alert, r.For, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s has no %s", r.Alert, a)
				}
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("alert %s: unbalanced parentheses in %q", r.Alert, r.Expr)
			}
			// Numbers (1800) are not identifiers; durations are not used.
			for _, w := range ident.FindAllString(r.Expr, -1) {
				if slices.Contains(promQLWords, w) {
					continue
				}
				if !exported[w] {
					t.Errorf("alert %s uses %s, which kdrift does not export", r.Alert, w)
				}
			}
		}
	}
	want := []string{"KdriftAppOutOfSync", "KdriftFight", "KdriftFreezeExpired", "KdriftGitUnreachable", "KdriftNoLeader"}
	slices.Sort(alerts)
	if !slices.Equal(alerts, want) {
		t.Fatalf("alerts %v, want %v", alerts, want)
	}
}

// exportedMetrics gathers the registry of a Metrics over one app, with
// every counter and histogram touched once, and returns the names.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	until := time.Now().Add(time.Hour)
	m := NewMetrics(Source{
		Apps: func() []status.AppStatus {
			return []status.AppStatus{{Name: "a", Sync: status.SyncSynced, Health: status.HealthHealthy, Freeze: &app.Freeze{Until: &until}}}
		},
		GitError: func() error { return nil },
		Leader:   func() bool { return true },
	})
	m.Request(engine.VerbApply, nil)
	m.Timed(engine.PhaseFetch, "", time.Second, nil)
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		out[mf.GetName()] = true
	}
	return out
}
