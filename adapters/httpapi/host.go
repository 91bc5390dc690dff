package httpapi

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/domain/errs"
)

// hostPolicy decides which Host values (and browser Origins) the gateway
// serves. It is the DNS-rebinding defence: a page on a foreign origin whose
// name was re-pointed at 127.0.0.1 reaches the gateway with its own name in
// Host (and in Origin), never with a loopback name, so refusing unknown names
// before any handler runs keeps every route — today's and future ones — out of
// its reach.
//
// Always allowed: localhost, every 127.0.0.0/8 address and ::1 (a page cannot
// present them as its Host unless it was served from this machine's loopback).
// Also allowed: the configured names and IP literals. When one of them is an
// unspecified address (0.0.0.0 or ::, i.e. the gateway listens on every
// interface) any IP literal is allowed too: an IP-literal Host can never be the
// result of rebinding a name. A port in Host or Origin is ignored.
type hostPolicy struct {
	names map[string]bool // lower-case names and canonical IP strings
	anyIP bool
}

func newHostPolicy(allowed []string) hostPolicy {
	p := hostPolicy{names: map[string]bool{"localhost": true}}
	for _, h := range allowed {
		h = strings.ToLower(strings.Trim(h, "[]"))
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				p.anyIP = true
			}
			h = ip.String()
		}
		p.names[h] = true
	}
	return p
}

// allows reports whether a host (without port, brackets optional) is served.
func (p hostPolicy) allows(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || p.anyIP || p.names[ip.String()]
	}
	return p.names[strings.TrimSuffix(host, ".")]
}

// allowsHostHeader checks a Host header value (host[:port]).
func (p hostPolicy) allowsHostHeader(v string) bool {
	if h, _, err := net.SplitHostPort(v); err == nil {
		return p.allows(h)
	}
	return p.allows(v)
}

// allowsOrigin checks an Origin header value: absent is fine (not a browser,
// or a same-origin navigation); "null" and anything that is not an
// http(s)://host[:port] origin with an allowed host is refused.
func (p hostPolicy) allowsOrigin(v string) bool {
	if v == "" {
		return true
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return p.allows(u.Hostname())
}

// checkHost refuses a request whose Host or Origin is not served, before any
// route sees it: 421 host_not_allowed or 403 origin_not_allowed.
func (s *server) checkHost(r *http.Request) error {
	switch {
	case !s.hosts.allowsHostHeader(r.Host):
		return rules.Refuse(errs.HostNotAllowed, "", "To serve this name, add it to ALLOWED_HOSTS.")
	case !s.hosts.allowsOrigin(r.Header.Get("Origin")):
		return rules.Refuse(errs.OriginNotAllowed, "", "To allow this origin, add its host name to ALLOWED_HOSTS.")
	}
	return nil
}

// ParseAllowedHosts validates the ALLOWED_HOSTS syntax: a comma-separated list
// of host names (letters, digits, '-' and '.', at most 253 bytes) or IP
// literals (IPv6 with or without brackets), without ports, schemes or
// wildcards. Blank entries are skipped. The result is what Config.AllowedHosts
// takes.
func ParseAllowedHosts(v string) ([]string, bool) {
	var out []string
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); ip != nil {
			out = append(out, ip.String())
			continue
		}
		if !validHostName(h) {
			return nil, false
		}
		out = append(out, strings.ToLower(strings.TrimSuffix(h, ".")))
	}
	return out, true
}

func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
