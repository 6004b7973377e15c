package charts

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
)

// Hops (ARCHITECTURE.md, "Remote Helm charts"): the first request of a
// fetch goes to an allowed location. What that server then names (a
// redirect, an index entry's URL, a registry's blob redirect) may be
// another host; content is verified by digest, but the request itself
// could reach this machine's or its network's services. So a connection
// to a host:port no allowed location has is made only to a public
// unicast address, checked when it is dialled on the address actually
// dialled (after DNS: a name that resolves to a public address for a
// check and a private one for the connection gains nothing).

// hops is the policy of one fetch's connections: the host:ports the
// allowed locations name, which may be dialled whatever their address,
// and the proxies the environment names.
type hops struct {
	allowed map[string]bool // "host:port"

	mu      sync.Mutex
	proxies map[string]bool // "host:port" of proxies used
}

// newHops is the policy of a fetch whose allowed locations are allowed.
// An oci:// location is spoken to over HTTPS, or plain HTTP on loopback.
func newHops(allowed []Location) *hops {
	h := &hops{allowed: map[string]bool{}, proxies: map[string]bool{}}
	for _, a := range allowed {
		u, err := normalize(a.URL)
		if err != nil {
			continue
		}
		h.allowed[hostPort(u.Hostname(), u.Port(), defaultPort(u.Scheme))] = true
		if u.Scheme == "oci" && loopback(u.Hostname()) {
			// Spoken to over plain HTTP (fetchOCI).
			h.allowed[hostPort(u.Hostname(), u.Port(), "80")] = true
		}
	}
	return h
}

// hostPort is host:port, lower-case, with def when port is empty.
func hostPort(host, port, def string) string {
	if port == "" {
		port = def
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

// defaultPort is the port of scheme when a URL gives none: 80 for http,
// else 443.
func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// originOf is the location to pass to --chart-repo to allow u's host.
func originOf(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}

// HopError is a connection a fetch refused: a host no allowed location
// names, at an address that is not public.
type HopError struct {
	// Addr is the host:port the hop asked for; IP the address it
	// resolved to; Why what kind of address that is.
	Addr, IP, Why string
}

// Error says which hop was refused and why.
func (e *HopError) Error() string {
	if e.IP == "" || e.IP == strings.Trim(hostOnly(e.Addr), "[]") {
		return fmt.Sprintf("a hop to %s, which no allowed location names, was refused: it is %s", e.Addr, e.Why)
	}
	return fmt.Sprintf("a hop to %s, which no allowed location names, was refused: it resolves to %s, %s", e.Addr, e.IP, e.Why)
}

// hostOnly is the host of host:port.
func hostOnly(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// notPublic says what kind of address ip is when it is not a public
// unicast address: "" for a public one.
func notPublic(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsLoopback():
		return "a loopback address (this machine)"
	case ip.IsLinkLocalUnicast():
		return "a link-local address (where cloud metadata services answer)"
	case ip.IsMulticast():
		return "a multicast address"
	case ip.IsPrivate():
		return "a private address"
	}
	for _, r := range reserved {
		if r.prefix.Contains(ip) {
			if r.embedded != nil {
				if why := notPublic(r.embedded(ip)); why != "" {
					return why + " inside " + r.why
				}
				continue
			}
			return r.why
		}
	}
	if !ip.IsGlobalUnicast() {
		return "not a global unicast address"
	}
	return ""
}

// reserved are the ranges beyond netip's predicates that are not public:
// each with what it is and, for IPv6 ranges that carry an IPv4 address,
// how to read it (that address decides).
var reserved = []struct {
	prefix   netip.Prefix
	why      string
	embedded func(netip.Addr) netip.Addr
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `an address of "this network"`, nil},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address (shared, not public)", nil},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment", nil},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address", nil},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address", nil},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address", nil},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address", last4},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local NAT64 address", nil},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address", sixToFour},
}

// last4 is the IPv4 address in the last 32 bits of a NAT64 address.
func last4(ip netip.Addr) netip.Addr {
	b := ip.As16()
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
}

// sixToFour is the IPv4 address a 6to4 address carries (bits 16 to 48).
func sixToFour(ip netip.Addr) netip.Addr {
	b := ip.As16()
	return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
}

// dial dials addr: any address when a location allows its host:port (or
// it is a proxy the environment names), else only a public unicast
// address, checked on each address the dialer tries.
func (h *hops) dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		key := hostPort(hostOnly(addr), portOnly(addr), "")
		h.mu.Lock()
		trusted := h.allowed[key] || h.proxies[key]
		h.mu.Unlock()
		if trusted {
			return d.DialContext(ctx, network, addr)
		}
		guarded := *d
		guarded.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &HopError{Addr: addr, IP: address, Why: "not an address kdrift can check"}
			}
			if why := notPublic(ap.Addr()); why != "" {
				return &HopError{Addr: addr, IP: ap.Addr().Unmap().String(), Why: why}
			}
			return nil
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// portOnly is the port of host:port.
func portOnly(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

// proxy wraps the environment's proxy choice: a request through a proxy
// is dialled by the proxy, so for a host no location allows, kdrift
// resolves the name itself and requires public addresses before handing
// the request over (the proxy resolves it again: a name that changes its
// answer in between is the proxy's to refuse).
func (h *hops) proxy(next func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	if next == nil {
		return nil
	}
	return func(req *http.Request) (*url.URL, error) {
		p, err := next(req)
		if err != nil || p == nil {
			return p, err
		}
		h.mu.Lock()
		h.proxies[hostPort(p.Hostname(), p.Port(), defaultPort(p.Scheme))] = true
		h.mu.Unlock()
		target := hostPort(req.URL.Hostname(), req.URL.Port(), defaultPort(req.URL.Scheme))
		if h.allowed[target] {
			return p, nil
		}
		ips, err := net.DefaultResolver.LookupNetIP(req.Context(), "ip", req.URL.Hostname())
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			if why := notPublic(ip); why != "" {
				return nil, &HopError{Addr: target, IP: ip.Unmap().String(), Why: why}
			}
		}
		return p, nil
	}
}
