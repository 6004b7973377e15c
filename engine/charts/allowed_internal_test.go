package charts

import "testing"

func TestAllowedLocations(t *testing.T) {
	for _, tc := range []struct {
		loc, allowed string
		want         bool
	}{
		{"https://charts.example.com", "https://charts.example.com", true},
		{"https://charts.example.com/", "https://charts.example.com", true},
		{"https://charts.example.com", "https://charts.example.com/", true},
		{"HTTPS://Charts.Example.COM/stable", "https://charts.example.com", true},
		{"https://charts.example.com:443/stable", "https://charts.example.com/stable/", true},
		{"http://charts.example.com:80/stable", "http://charts.example.com/", true},
		{"http://charts.example.com:8080/stable", "http://charts.example.com/", false},
		{"https://charts.example.com/stable", "https://charts.example.com/stable/sub", false},
		{"https://charts.example.com/stableX", "https://charts.example.com/stable", false},
		{"https://charts.example.com/stable/../private", "https://charts.example.com/stable", false},
		{"https://charts.example.com/stable/%2e%2e/private", "https://charts.example.com/stable", false},
		{"https://user:pw@charts.example.com/stable", "https://charts.example.com", true},
		{"https://charts.example.com.evil.test/stable", "https://charts.example.com", false},
		{"http://charts.example.com/stable", "https://charts.example.com", false},
		{"https://charts.example.com/stable", "http://charts.example.com", false},
		{"oci://ghcr.io/org/charts", "oci://ghcr.io/org", true},
		{"oci://ghcr.io:443/org/charts/", "oci://GHCR.io/org/", true},
		{"oci://ghcr.io/org/chartsX", "oci://ghcr.io/org/charts", false},
		{"oci://ghcr.io/org/charts", "https://ghcr.io/org", false},
		{"https://ghcr.io/org/charts", "oci://ghcr.io/org", false},
		{"oci://[::1]:5000/charts", "oci://[::1]:5000", true},
		{"oci://[::1]:5000/charts", "oci://[::1]", false},
		{"oci://ghcr.io/org", "ghcr.io/org", false},
		{"ghcr.io/org", "ghcr.io/org", false},
		{"file:///etc/charts", "file:///etc", false},
	} {
		_, _, err := permit(Ref{Repo: tc.loc, Chart: "c", Version: "1.0.0"}, []Location{{URL: tc.allowed, By: "test"}})
		if got := err == nil; got != tc.want {
			t.Errorf("%s under %s = %v, want %v (%v)", tc.loc, tc.allowed, got, tc.want, err)
		}
	}
}
