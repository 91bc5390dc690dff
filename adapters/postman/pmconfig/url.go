package pmconfig

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/pmgate/pmgate/domain/setting"
)

// ChatURL returns a fresh copy of the exact chat URL: for web_session
// https://<subdomain>.postman.co/_gw/chat, for access_token Origin+ChatPath. It
// is rebuilt from the fields and checked after construction (docs/UPSTREAM.md);
// it is nil only for a Config not produced by Parse whose fields fail those checks.
func (c Config) ChatURL() *url.URL {
	switch c.Strategy {
	case StrategyWebSession:
		if checkSubdomain(c.Subdomain) != nil {
			return nil
		}
		return webSessionURL(c.Subdomain)
	case StrategyAccessToken:
		if checkChatPath(c.ChatPath) != nil {
			return nil
		}
		return accessTokenURL(c.Origin, c.ChatPath) // validates the origin
	}
	return nil
}

// webOrigin is the serialized origin of a validated subdomain.
func webOrigin(sub string) string { return "https://" + sub + "." + WebSessionDomain }

// webSessionURL builds the web-session URL of a validated subdomain and returns
// it only if every post-construction check holds (https, the exact host, the
// fixed path, nothing else).
func webSessionURL(sub string) *url.URL {
	host := sub + "." + WebSessionDomain
	u := &url.URL{Scheme: "https", Host: host, Path: DefaultChatPath}
	want := webOrigin(sub) + DefaultChatPath
	if !exactURL(u, want, host, "", DefaultChatPath) {
		return nil
	}
	left, ok := strings.CutSuffix(u.Hostname(), "."+WebSessionDomain)
	if !ok || left != sub || strings.Contains(left, ".") {
		return nil
	}
	if u.Port() != "" { // the default port, 443
		return nil
	}
	return u
}

// accessTokenURL builds Origin+ChatPath and returns it only if the result keeps
// exactly the configured origin and path.
func accessTokenURL(origin, path string) *url.URL {
	host, port, err := splitOrigin(origin)
	if err != nil {
		return nil
	}
	hostport := strings.TrimPrefix(origin, "https://")
	u := &url.URL{Scheme: "https", Host: hostport, Path: path}
	if !exactURL(u, origin+path, hostport, port, path) {
		return nil
	}
	if u.Hostname() != strings.Trim(host, "[]") {
		return nil
	}
	return u
}

// exactURL checks a constructed URL: its serialization is want, and parsing
// that serialization back yields https, no userinfo, exactly host and port,
// exactly path, no query or fragment, and the origin want minus path.
func exactURL(u *url.URL, want, hostport, port, path string) bool {
	if u.String() != want {
		return false
	}
	p, err := url.Parse(want)
	if err != nil {
		return false
	}
	origin := (&url.URL{Scheme: p.Scheme, Host: p.Host}).String()
	return p.Scheme == "https" && p.User == nil && p.Opaque == "" &&
		p.Host == hostport && p.Port() == port &&
		p.Path == path && p.RawPath == "" && p.EscapedPath() == path &&
		p.RawQuery == "" && !p.ForceQuery && p.Fragment == "" && p.RawFragment == "" &&
		origin+path == want
}

// splitOrigin validates POSTMAN_ORIGIN (exactly https://host[:port]) and returns
// its host (brackets kept for IPv6) and port ("" when absent).
func splitOrigin(origin string) (host, port string, err error) {
	rest, ok := strings.CutPrefix(origin, "https://")
	if !ok {
		return "", "", refuse(EnvOrigin, "must start with https:// (lowercase); nothing else is accepted")
	}
	for i := 0; i < len(rest); i++ {
		switch b := rest[i]; {
		case b == '/' || b == '?' || b == '#':
			return "", "", refuse(EnvOrigin, "must be exactly https://host[:port] with no path (not even \"/\"), query or fragment")
		case b == '@':
			return "", "", refuse(EnvOrigin, "must not contain userinfo")
		case b < 0x21 || b > 0x7e || b == '\\' || b == '%':
			return "", "", refuse(EnvOrigin, "must be visible ASCII without '\\' or '%'")
		}
	}
	host = rest
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return "", "", refuse(EnvOrigin, "has an unterminated IPv6 literal")
		}
		host, rest = rest[:end+1], rest[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", "", refuse(EnvOrigin, "must be exactly https://host[:port]")
			}
			port = p
			if err := checkPort(port); err != nil {
				return "", "", err
			}
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" || "["+a.String()+"]" != host {
			return "", "", refuse(EnvOrigin, "an IPv6 host must be a canonical address in brackets, without zone")
		}
		return host, port, nil
	}
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		host, port = rest[:i], rest[i+1:]
		if err := checkPort(port); err != nil {
			return "", "", err
		}
	}
	if err := checkHost(host); err != nil {
		return "", "", err
	}
	return host, port, nil
}

func checkPort(p string) error {
	v, ok := setting.Decimal(p)
	if !ok || p[0] == '0' || v < 1 || v > 65535 {
		return refuse(EnvOrigin, "the port must be a decimal number from 1 to 65535 without leading zeros")
	}
	return nil
}

// checkHost accepts a lowercase LDH DNS name whose last label is not all digits,
// or a canonical IPv4 address.
func checkHost(h string) error {
	if h == "" {
		return refuse(EnvOrigin, "needs a host")
	}
	if len(h) > 253 {
		return refuse(EnvOrigin, "the host must be at most 253 bytes")
	}
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is4() || a.String() != h {
			return refuse(EnvOrigin, "a numeric host must be a canonical IPv4 address")
		}
		return nil
	}
	for _, l := range labels {
		if !subdomainRE().MatchString(l) {
			return refuse(EnvOrigin, "the host must be a lowercase DNS name of labels matching ^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
		}
	}
	return nil
}

// checkChatPath validates POSTMAN_CHAT_PATH.
func checkChatPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return refuse(EnvChatPath, "must be an absolute path starting with '/'")
	}
	if len(p) > MaxChatPathBytes {
		return refuse(EnvChatPath, "must be at most 1024 bytes")
	}
	for i := 0; i < len(p); i++ {
		switch b := p[i]; {
		case b == '?':
			return refuse(EnvChatPath, "must not contain a query ('?')")
		case b == '#':
			return refuse(EnvChatPath, "must not contain a fragment ('#')")
		case b == '%':
			return refuse(EnvChatPath, "must not contain percent encoding ('%')")
		case b <= 0x20 || b >= 0x7f:
			return refuse(EnvChatPath, "must not contain whitespace, control or non-ASCII bytes")
		case !pathByte(b):
			return refuse(EnvChatPath, "may contain only A-Z a-z 0-9 - . _ ~ / : @ $ & + , ; =")
		}
	}
	if strings.Contains(p, "//") {
		return refuse(EnvChatPath, "must not contain an empty segment ('//')")
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return refuse(EnvChatPath, "must not contain a '.' or '..' segment")
		}
	}
	return nil
}

func pathByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("-._~/:@$&+,;=", b) >= 0
}
