package charts

import (
	"net/netip"
	"testing"
)

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

// TestNotPublic: the addresses a hop to a host no location allows may
// not reach, and public ones it may.
func TestNotPublic(t *testing.T) {
	for _, tc := range []struct {
		ip     string
		public bool
	}{
		{"93.184.215.14", true},
		{"8.8.8.8", true},
		{"2606:4700::6810:84e5", true},
		{"100.63.255.255", true},
		{"100.128.0.1", true},
		{"172.32.0.1", true},
		{"64:ff9b::808:808", true},    // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},     // 6to4 of 8.8.8.8
		{"::ffff:8.8.8.8", true},      // IPv4-mapped
		{"127.0.0.1", false},          // loopback
		{"127.255.0.9", false},        // loopback
		{"::1", false},                // loopback
		{"::ffff:127.0.0.1", false},   // IPv4-mapped loopback
		{"10.1.2.3", false},           // RFC 1918
		{"172.16.0.1", false},         // RFC 1918
		{"172.31.255.255", false},     // RFC 1918
		{"192.168.1.1", false},        // RFC 1918
		{"fd00::1", false},            // ULA
		{"fc00::1", false},            // ULA
		{"169.254.169.254", false},    // link-local: cloud metadata
		{"fe80::1", false},            // link-local
		{"fd00:ec2::254", false},      // ULA: the IPv6 metadata address
		{"0.0.0.0", false},            // unspecified
		{"::", false},                 // unspecified
		{"0.1.2.3", false},            // "this network"
		{"224.0.0.1", false},          // multicast
		{"ff02::1", false},            // multicast
		{"100.64.0.1", false},         // CGNAT
		{"100.127.255.254", false},    // CGNAT
		{"255.255.255.255", false},    // broadcast
		{"240.0.0.1", false},          // reserved
		{"198.18.0.1", false},         // benchmarking
		{"192.0.0.8", false},          // IETF
		{"fec0::1", false},            // site-local
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"2002:a9fe:a9fe::1", false},  // 6to4 of 169.254.169.254
		{"2002:c0a8:101::1", false},   // 6to4 of 192.168.1.1
		{"64:ff9b:1::a00:1", false},   // local-use NAT64
	} {
		why := notPublic(netip.MustParseAddr(tc.ip))
		if (why == "") != tc.public {
			t.Errorf("notPublic(%s) = %q, want public %v", tc.ip, why, tc.public)
		}
	}
}
