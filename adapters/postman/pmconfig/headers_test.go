package pmconfig_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/secret"

	"github.com/matryer/is"
)

const downstreamKey = "sk-downstream-FAKE-0123456789"

func headerNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func TestWebSessionHeaders(t *testing.T) {
	is := is.New(t)
	c := mustParse(t, webEnv().with("PROVIDER_API_KEY", downstreamKey))
	h := c.Headers()
	is.Equal(headerNames(h), []string{"Accept", "Content-Type", "Cookie", "Origin", "Referer", "User-Agent", "X-Pstmn-Req-Service"}) // exact allowlist
	is.Equal(h.Get("Content-Type"), "application/json")                                                                              // JSON body
	is.Equal(h.Get("Accept"), "text/event-stream")                                                                                   // SSE
	is.Equal(h.Get("Cookie"), "postman.sid="+testCookie)                                                                             // one literal prefix plus the value
	is.Equal(h.Get("X-Pstmn-Req-Service"), "agent-mode-service")                                                                     // service header
	is.Equal(h.Get("Origin"), "https://team-1.postman.co")                                                                           // Origin derived from the subdomain
	is.Equal(h.Get("Referer"), "https://team-1.postman.co/")                                                                         // Referer derived from the subdomain
	is.Equal(h.Get("User-Agent"), pmconfig.DefaultUserAgent)                                                                         // documented UA
	is.Equal(len(h.Values("X-Access-Token")), 0)                                                                                     // no access token on the cookie path
	is.Equal(len(h.Values("Authorization")), 0)                                                                                      // no Authorization
	for _, vs := range h {
		is.Equal(len(vs), 1)                             // one value per header
		is.True(!strings.Contains(vs[0], downstreamKey)) // downstream key never forwarded
		is.True(!strings.ContainsAny(vs[0], "\r\n\x00")) // no header injection
	}
	c = mustParse(t, webEnv().with(pmconfig.EnvAppVersion, "12.15.4-260616-1202"))
	is.Equal(c.Headers().Get("X-App-Version"), "12.15.4-260616-1202") // app version only when set
}

func TestAccessTokenHeaders(t *testing.T) {
	is := is.New(t)
	c := mustParse(t, tokenEnv().with("PROVIDER_API_KEY", downstreamKey))
	h := c.Headers()
	is.Equal(headerNames(h), []string{"Accept", "Content-Type", "User-Agent", "X-Access-Token", "X-Pstmn-Req-Service"}) // exact allowlist
	is.Equal(h.Get("X-Access-Token"), testToken)                                                                        // token header
	is.Equal(h.Get("X-Pstmn-Req-Service"), "agent-mode-service")                                                        // service header
	is.Equal(len(h.Values("Cookie")), 0)                                                                                // no cookie on the token path
	is.Equal(len(h.Values("Authorization")), 0)                                                                         // no Authorization
	is.Equal(len(h.Values("Origin")), 0)                                                                                // no Origin on the token path
	is.Equal(len(h.Values("Referer")), 0)                                                                               // no Referer on the token path
	for _, vs := range h {
		is.True(!strings.Contains(vs[0], downstreamKey)) // downstream key never forwarded
	}
}

func TestHeadersAreFreshPerCall(t *testing.T) {
	for name, e := range map[string]env{"web_session": webEnv(), "access_token": tokenEnv()} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, e)
			first := c.Headers()
			snapshot := first.Clone()
			first.Set("Authorization", "Bearer evil")
			first.Set("Cookie", "postman.sid=evil")
			first.Del("User-Agent")
			first["Accept"][0] = "text/html"
			is.Equal(c.Headers(), snapshot) // mutating a returned header never affects the next call
		})
	}
}

func TestSecretsAreTheActiveUpstreamSecret(t *testing.T) {
	is := is.New(t)
	is.Equal(mustParse(t, webEnv()).Secrets(), []string{testCookie})  // cookie on web_session
	is.Equal(mustParse(t, tokenEnv()).Secrets(), []string{testToken}) // token on access_token
	is.Equal(len(pmconfig.Config{}.Secrets()), 0)                     // nothing for a zero config
}

func TestConfiguredSecretsAreRedacted(t *testing.T) {
	is := is.New(t)
	for _, c := range []pmconfig.Config{mustParse(t, webEnv()), mustParse(t, tokenEnv())} {
		out := secret.NewRedactor(c.Secrets()...).String("value " + c.Secrets()[0] + " end")
		is.Equal(out, "value [REDACTED] end") // the configured secret is redacted
	}
}
