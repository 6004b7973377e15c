package engine

import "testing"

// TestArgoCredentials: Argo CD's rules for which Secret's credentials a
// chart repository gets.
func TestArgoCredentials(t *testing.T) {
	none := func(string) string { return "" }
	// Each Secret's username is its name, its password "pw-" and it.
	cred := func(secretType, u, name string) argoCred {
		return argoCredOf(secretType, u, "argocd/"+name, func(k string) string {
			switch {
			case name == "bare" || k == "password" && name == "nopass":
				return none(k)
			case k == "username":
				return name
			case k == "password":
				return "pw-" + name
			}
			return ""
		})
	}
	creds := []argoCred{
		cred("repo-creds", "https://charts.example.com", "broad"),
		cred("repo-creds", "https://charts.example.com/team", "team"),
		cred("repository", "https://charts.example.com/team/stable/", "stable"),
		cred("repository", "https://charts.example.com/team/bare", "bare"),
		cred("repo-creds", "oci://registry.example.com/org", "oci"),
		cred("repository", "https://other.example.com/x", "nopass"),
	}
	for _, tc := range []struct{ repo, want string }{
		{"https://charts.example.com/team/stable", "stable"},   // the repository Secret of exactly that URL
		{"https://CHARTS.example.com/team/stable/", "stable"},  // scheme and host in any case, a trailing "/"
		{"https://charts.example.com/team/stable/sub", "team"}, // a repository Secret is for its URL alone
		{"https://charts.example.com/team/bare", "team"},       // no credentials of its own: the template's
		{"https://charts.example.com/teams", "team"},           // a template is a prefix, as in Argo CD
		{"https://charts.example.com/other", "broad"},          // the most specific template
		{"https://charts.example.com.evil.net/team", ""},       // never another host
		{"http://charts.example.com/team", ""},                 // nor another scheme
		{"https://charts.example.com:8443/team", ""},           // nor another port
		{"oci://registry.example.com/org/charts", "oci"},       // OCI locations alike
		{"https://other.example.com/x", ""},                    // a username without a password is none
		{"not a url", ""},
	} {
		got := argoCredentials(tc.repo, creds)
		switch {
		case tc.want == "" && got != nil:
			t.Errorf("%s: credentials of %s, want none", tc.repo, got.By)
		case tc.want != "" && (got == nil || got.Username != tc.want || got.Password != "pw-"+tc.want || got.By != "Argo CD repository Secret argocd/"+tc.want):
			t.Errorf("%s: %+v, want %s's", tc.repo, got, tc.want)
		}
	}
}
