package pmconfig_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"

	"github.com/matryer/is"
)

// checkWebURL is the test's own statement of the web-session URL rules,
// independent of the package's checks.
func checkWebURL(u *url.URL, sub string) string {
	switch {
	case u == nil:
		return "nil URL"
	case u.Scheme != "https":
		return "scheme"
	case u.User != nil:
		return "userinfo"
	case u.Hostname() != sub+".postman.co":
		return "hostname"
	case strings.Contains(strings.TrimSuffix(u.Hostname(), ".postman.co"), "."):
		return "more than one label"
	case u.Port() != "" && u.Port() != "443":
		return "port"
	case u.Path != "/_gw/chat" || u.RawPath != "" || u.EscapedPath() != "/_gw/chat":
		return "path"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return "query/fragment/opaque"
	case (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() != "https://"+sub+".postman.co":
		return "origin"
	case u.String() != "https://"+sub+".postman.co/_gw/chat":
		return "serialization"
	}
	return ""
}

// checkTokenURL states the access_token exactness independently: the URL is the
// configured origin followed by the configured path, and parses back the same.
func checkTokenURL(u *url.URL, origin, path string) string {
	if u == nil {
		return "nil URL"
	}
	if u.String() != origin+path {
		return "serialization"
	}
	p, err := url.Parse(u.String())
	switch {
	case err != nil:
		return "reparse"
	case p.Scheme != "https" || p.User != nil || p.Opaque != "":
		return "scheme/userinfo/opaque"
	case "https://"+p.Host != origin:
		return "host"
	case p.Path != path || p.RawPath != "" || p.EscapedPath() != path:
		return "path"
	case p.RawQuery != "" || p.ForceQuery || p.Fragment != "":
		return "query/fragment"
	}
	return ""
}

func TestWebSessionURLIsExact(t *testing.T) {
	is := is.New(t)
	c := mustParse(t, webEnv())
	u := c.ChatURL()
	is.Equal(u.String(), "https://team-1.postman.co/_gw/chat") // exact URL
	is.Equal(checkWebURL(u, testSubdomain), "")                // every post-construction check holds
}

func TestHostileSubdomainsNeverReachTheURL(t *testing.T) {
	for _, sub := range []string{
		"a.b", "a@b", "a/b", "a:1", "%61", "é", "-a", "a-", strings.Repeat("a", 64), "evil.com#", "evil.com/", "a?x=1",
		"a\\b", "a b", "a\r\nHost: x", "user:pass@evil", "[::1]", "a..b", ".", "", "A",
	} {
		t.Run(sub, func(t *testing.T) {
			is := is.New(t)
			_, err := webEnv().with(pmconfig.EnvSubdomain, sub).parse()
			is.True(err != nil) // hostile subdomain refused before any URL exists
			// A hand-built Config with the same subdomain gets no URL either.
			hand := pmconfig.Config{Strategy: pmconfig.StrategyWebSession, Subdomain: sub}
			is.True(hand.ChatURL() == nil) // ChatURL re-checks the fields
		})
	}
	t.Run("xn-- is an ordinary label", func(t *testing.T) {
		is := is.New(t)
		c := mustParse(t, webEnv().with(pmconfig.EnvSubdomain, "xn--bcher-kva"))
		is.Equal(checkWebURL(c.ChatURL(), "xn--bcher-kva"), "") // punycode label accepted as-is
	})
	t.Run("63-byte label", func(t *testing.T) {
		is := is.New(t)
		sub := strings.Repeat("a", 63)
		c := mustParse(t, webEnv().with(pmconfig.EnvSubdomain, sub))
		is.Equal(checkWebURL(c.ChatURL(), sub), "") // longest label accepted
	})
}

func TestAccessTokenURLKeepsTheConfiguredOrigin(t *testing.T) {
	for _, tc := range []struct{ origin, path string }{
		{"https://api.example.test", ""},
		{"https://127.0.0.1:8443", "/v1/chat"},
		{"https://[::1]:9000", "/_gw/chat"},
		{"https://example.com:443", "/x"},
	} {
		t.Run(tc.origin+tc.path, func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, tokenEnv().with(pmconfig.EnvOrigin, tc.origin, pmconfig.EnvChatPath, tc.path))
			path := tc.path
			if path == "" {
				path = pmconfig.DefaultChatPath
			}
			is.Equal(checkTokenURL(c.ChatURL(), tc.origin, path), "") // origin and path kept exactly
		})
	}
}

func TestChatURLIsAFreshCopy(t *testing.T) {
	is := is.New(t)
	c := mustParse(t, webEnv())
	u := c.ChatURL()
	u.Host = "evil.example"
	u.Path = "/steal"
	is.Equal(c.ChatURL().String(), "https://team-1.postman.co/_gw/chat") // caller mutation does not reach the next call
}

func TestChatURLOfUnknownStrategyIsNil(t *testing.T) {
	is := is.New(t)
	is.True(pmconfig.Config{}.ChatURL() == nil)                                                            // zero config has no URL
	is.True(pmconfig.Config{Strategy: "other", Subdomain: "a", Origin: "https://a.test"}.ChatURL() == nil) // no implicit branch
}
