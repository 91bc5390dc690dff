package pmconfig_test

import (
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/errs"
)

// FuzzParse feeds arbitrary strategy, secrets, subdomain, origin, path and model
// map values. Parse never panics; a refusal is config_invalid and never
// contains a long secret; an accepted configuration has a URL that passes the
// post-construction checks and headers carrying only its own secret.
func FuzzParse(f *testing.F) {
	const mm = "a=GPT_55,b=CLAUDE_45_HAIKU_BEDROCK|claude-haiku"
	f.Add("web_session", "", testCookie, "team-1", "", "", mm)
	f.Add("web_session", "", "postman.sid=abc", "team-1", "", "", mm)
	f.Add("web_session", "", testCookie, "a.b", "", "", mm)
	f.Add("web_session", "", testCookie, "xn--bcher-kva", "", "", mm)
	f.Add("web_session", "", testCookie, "a@evil.com#", "", "", mm)
	f.Add("web_session", testToken, testCookie, "team-1", "", "", mm)
	f.Add("web_session", "", "ab\r\nX: 1", "team-1", "", "", mm)
	f.Add("access_token", testToken, "", "", "https://api.example.test", "", mm)
	f.Add("access_token", testToken, "", "", "https://127.0.0.1:8443", "/v1/chat", mm)
	f.Add("access_token", testToken, "", "", "https://[::1]:1", "/_gw/chat", "a=A,b=B|x|y")
	f.Add("access_token", testToken, "", "", "https://u:p@api.example.test", "/", mm)
	f.Add("access_token", testToken, "", "", "https://api.example.test", "/a/../b", mm)
	f.Add("access_token", testToken, "", "", "https://api.example.test:443", "/a;b=c:d@e", mm)
	f.Add("access_token", testToken, "", "", "https://api.example.test/", "//x", mm)
	f.Add("access_token", testToken, "", "", "https://api.example.test", "", "a=A")
	f.Add("", testToken, testCookie, "team-1", "https://api.example.test", "", mm)
	f.Fuzz(func(t *testing.T, strategy, token, cookie, sub, origin, path, modelMap string) {
		e := env{
			pmconfig.EnvStrategy:      strategy,
			pmconfig.EnvAccessToken:   token,
			pmconfig.EnvSessionCookie: cookie,
			pmconfig.EnvSubdomain:     sub,
			pmconfig.EnvOrigin:        origin,
			pmconfig.EnvChatPath:      path,
			pmconfig.EnvModelMap:      modelMap,
			pmconfig.EnvWorkspaceID:   testWorkspace,
			providerModels:            "a,b",
		}
		c, err := e.parse()
		if err != nil {
			if !errs.Has(err, errs.ConfigInvalid) {
				t.Fatalf("refusal without config_invalid: %v", err)
			}
			for _, s := range []string{token, cookie} {
				if len(s) >= 32 && strings.Contains(err.Error()+errs.Redact(err), s) {
					t.Fatalf("refusal contains a secret")
				}
			}
			return
		}
		u := c.ChatURL()
		h := c.Headers()
		switch c.Strategy {
		case pmconfig.StrategyWebSession:
			if why := checkWebURL(u, sub); why != "" {
				t.Fatalf("accepted web_session URL fails %s: %q", why, u)
			}
			if h.Get(pmconfig.HeaderCookie) != "postman.sid="+cookie || len(h.Values(pmconfig.HeaderAccessToken)) != 0 {
				t.Fatalf("web_session headers: %v", h)
			}
		case pmconfig.StrategyAccessToken:
			p := path
			if p == "" {
				p = pmconfig.DefaultChatPath
			}
			if why := checkTokenURL(u, origin, p); why != "" {
				t.Fatalf("accepted access_token URL fails %s: %q", why, u)
			}
			if h.Get(pmconfig.HeaderAccessToken) != token || len(h.Values(pmconfig.HeaderCookie)) != 0 {
				t.Fatalf("access_token headers: %v", h)
			}
		default:
			t.Fatalf("accepted strategy %q", c.Strategy)
		}
		if len(h.Values("Authorization")) != 0 {
			t.Fatalf("Authorization header sent")
		}
		for _, vs := range h {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("header value with CR/LF/NUL")
				}
			}
		}
		if len(c.Models) != 2 || c.Models[0].Observed[0] != c.Models[0].Upstream {
			t.Fatalf("models: %+v", c.Models)
		}
	})
}
