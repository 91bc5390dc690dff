package pmconfig_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"

	"github.com/matryer/is"
)

// refusal is one configuration that must be refused.
type refusal struct {
	name     string
	env      env
	variable string // the variable the message must name
	rule     string // a fragment of the rule the message must state
}

func runRefusals(t *testing.T, rows []refusal) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			is := is.New(t)
			err := mustRefuse(t, r.env, r.variable)
			is.True(strings.Contains(err.Error(), r.rule)) // message states the broken rule
		})
	}
}

func TestStrategyEnumAcceptsOnlyTheTwoExplicitValues(t *testing.T) {
	is := is.New(t)
	w := mustParse(t, webEnv())
	is.Equal(w.Strategy, pmconfig.StrategyWebSession) // web_session accepted
	a := mustParse(t, tokenEnv())
	is.Equal(a.Strategy, pmconfig.StrategyAccessToken) // access_token accepted

	var rows []refusal
	for _, v := range []string{"<unset>", "ACCESS_TOKEN", "Web_Session", " web_session", "web_session ",
		"web_session\n", "web-session", "websession", "auto", "access_token,web_session", "\x00", "legacy"} {
		rows = append(rows, refusal{"value " + strconv.Quote(v), webEnv().with(pmconfig.EnvStrategy, v), pmconfig.EnvStrategy, "access_token or web_session"})
	}
	// No implicit branch: a complete web-session or access-token set without a
	// strategy is refused, not inferred.
	rows = append(rows,
		refusal{"web secrets without strategy", webEnv().with(pmconfig.EnvStrategy, "<unset>"), pmconfig.EnvStrategy, "required"},
		refusal{"token secrets without strategy", tokenEnv().with(pmconfig.EnvStrategy, "<unset>"), pmconfig.EnvStrategy, "required"},
		refusal{"empty strategy", tokenEnv().with(pmconfig.EnvStrategy, ""), pmconfig.EnvStrategy, "required"},
	)
	runRefusals(t, rows)
}

func TestSecretExclusivity(t *testing.T) {
	t.Run("valid one-secret sets", func(t *testing.T) {
		is := is.New(t)
		w := mustParse(t, webEnv())
		is.Equal(w.SessionCookie, testCookie) // cookie kept exactly
		is.Equal(w.AccessToken, "")           // no token on web_session
		a := mustParse(t, tokenEnv())
		is.Equal(a.AccessToken, testToken) // token kept exactly
		is.Equal(a.SessionCookie, "")      // no cookie on access_token
	})
	t.Run("empty forbidden variables count as unset", func(t *testing.T) {
		is := is.New(t)
		_, err := webEnv().with(pmconfig.EnvAccessToken, "", pmconfig.EnvOrigin, "", pmconfig.EnvChatPath, "").parse()
		is.NoErr(err) // empty access-token variables are ignored on web_session
		_, err = tokenEnv().with(pmconfig.EnvSessionCookie, "", pmconfig.EnvSubdomain, "", pmconfig.EnvTerminalRule, "").parse()
		is.NoErr(err) // empty web-session variables are ignored on access_token
	})
	runRefusals(t, []refusal{
		{"neither secret on web_session", webEnv().with(pmconfig.EnvSessionCookie, "<unset>"), pmconfig.EnvSessionCookie, "required"},
		{"neither secret on access_token", tokenEnv().with(pmconfig.EnvAccessToken, "<unset>"), pmconfig.EnvAccessToken, "required"},
		{"both secrets on web_session", webEnv().with(pmconfig.EnvAccessToken, testToken), pmconfig.EnvSessionCookie, "POSTMAN_ACCESS_TOKEN and POSTMAN_SESSION_COOKIE: both secrets"},
		{"both secrets on access_token", tokenEnv().with(pmconfig.EnvSessionCookie, testCookie), pmconfig.EnvSessionCookie, "POSTMAN_ACCESS_TOKEN and POSTMAN_SESSION_COOKIE: both secrets"},
		{"token on web_session instead of cookie", webEnv().with(pmconfig.EnvSessionCookie, "<unset>", pmconfig.EnvAccessToken, testToken), pmconfig.EnvAccessToken, "must not be set when POSTMAN_TRANSPORT_STRATEGY is web_session"},
		{"cookie on access_token instead of token", tokenEnv().with(pmconfig.EnvAccessToken, "<unset>", pmconfig.EnvSessionCookie, testCookie), pmconfig.EnvSessionCookie, "must not be set when POSTMAN_TRANSPORT_STRATEGY is access_token"},
		{"origin on web_session", webEnv().with(pmconfig.EnvOrigin, "https://api.example.test"), pmconfig.EnvOrigin, "must not be set"},
		{"chat path on web_session", webEnv().with(pmconfig.EnvChatPath, "/_gw/chat"), pmconfig.EnvChatPath, "must not be set"},
		{"subdomain on access_token", tokenEnv().with(pmconfig.EnvSubdomain, testSubdomain), pmconfig.EnvSubdomain, "must not be set"},
		{"terminal rule on access_token", tokenEnv().with(pmconfig.EnvTerminalRule, "explicit_only"), pmconfig.EnvTerminalRule, "must not be set"},
		{"whitespace forbidden value is set", webEnv().with(pmconfig.EnvOrigin, " "), pmconfig.EnvOrigin, "must not be set"},
		{"subdomain missing", webEnv().with(pmconfig.EnvSubdomain, "<unset>"), pmconfig.EnvSubdomain, "required"},
		{"origin missing", tokenEnv().with(pmconfig.EnvOrigin, "<unset>"), pmconfig.EnvOrigin, "required"},
		{"workspace missing on web_session", webEnv().with(pmconfig.EnvWorkspaceID, "<unset>"), pmconfig.EnvWorkspaceID, "required"},
		{"workspace missing on access_token", tokenEnv().with(pmconfig.EnvWorkspaceID, "<unset>"), pmconfig.EnvWorkspaceID, "required"},
	})
}

func TestCookieValidation(t *testing.T) {
	for _, v := range []string{
		"a",                       // minimum
		strings.Repeat("c", 4096), // maximum
		"s%3Aabc.def%2Bghi",       // signed, URL-encoded session value
		"eyJhbGciOi.J9==",         // '=' inside base64-like values stays allowed
		"postman.sid",             // the name alone is not the whole-cookie form
		"x-postman.sid=1",         // the prefix rule is a prefix rule
		"!#$%&()*+-./:<=>?@[]^_`{|}~" + `"'` + "a", // every visible byte except ; , \
	} {
		t.Run("accepts "+strconv.Quote(v[:min(len(v), 20)]), func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, webEnv().with(pmconfig.EnvSessionCookie, v))
			is.Equal(c.SessionCookie, v)                                       // value kept byte for byte
			is.Equal(c.Headers().Get(pmconfig.HeaderCookie), "postman.sid="+v) // single literal prefix added
		})
	}
	var rows []refusal
	bad := map[string]struct{ v, rule string }{
		"4097 bytes":        {strings.Repeat("c", 4097), "at most 4096 bytes"},
		"CR":                {"ab\rc", "visible ASCII"},
		"LF":                {"ab\nc", "visible ASCII"},
		"CRLF injection":    {"ab\r\nX-Evil: 1", "visible ASCII"},
		"NUL":               {"ab\x00c", "visible ASCII"},
		"space":             {"ab c", "visible ASCII"},
		"tab":               {"ab\tc", "visible ASCII"},
		"DEL":               {"ab\x7fc", "visible ASCII"},
		"control":           {"ab\x01c", "visible ASCII"},
		"non-ASCII":         {"abé", "visible ASCII"},
		"semicolon":         {"ab;c", "';', ',' or '\\'"},
		"comma":             {"ab,c", "';', ',' or '\\'"},
		"backslash":         {`ab\c`, "';', ',' or '\\'"},
		"whole cookie":      {"postman.sid=abc", "value of postman.sid only"},
		"whole cookie case": {"Postman.SID=abc", "value of postman.sid only"},
		"header form":       {"Cookie: postman.sid=abc", "visible ASCII"},
		"two cookies":       {"postman.sid=abc;other=1", "';', ',' or '\\'"},
	}
	for name, b := range bad {
		rows = append(rows, refusal{name, webEnv().with(pmconfig.EnvSessionCookie, b.v), pmconfig.EnvSessionCookie, b.rule})
	}
	runRefusals(t, rows)
}

func TestAccessTokenValidation(t *testing.T) {
	for _, v := range []string{"a", strings.Repeat("t", 4096), "PMAK-0123;,\\=abc"} {
		t.Run("accepts "+strconv.Quote(v[:min(len(v), 20)]), func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, tokenEnv().with(pmconfig.EnvAccessToken, v))
			is.Equal(c.Headers().Get(pmconfig.HeaderAccessToken), v) // token sent byte for byte
		})
	}
	var rows []refusal
	for name, v := range map[string]string{
		"4097 bytes": strings.Repeat("t", 4097), "space": "a b", "tab": "a\tb", "CR": "a\rb", "LF": "a\nb",
		"NUL": "a\x00b", "DEL": "a\x7fb", "non-ASCII": "aé",
	} {
		rows = append(rows, refusal{name, tokenEnv().with(pmconfig.EnvAccessToken, v), pmconfig.EnvAccessToken, "1-4096 bytes of visible ASCII"})
	}
	runRefusals(t, rows)
}

func TestSubdomainValidation(t *testing.T) {
	for _, v := range []string{"a", "0", "team-1", "a-b-c", "xn--bcher-kva", "9abc", strings.Repeat("a", 63)} {
		t.Run("accepts "+v[:min(len(v), 20)], func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, webEnv().with(pmconfig.EnvSubdomain, v))
			is.Equal(c.ChatURL().Hostname(), v+".postman.co") // exactly one label under .postman.co
		})
	}
	var rows []refusal
	for _, v := range []string{"a.b", "a@b", "a/b", "a:1", "%61", "é", "-a", "a-", "-", strings.Repeat("a", 64),
		"A", "Team", "a_b", " a", "a ", "a b", "a\r\nb", "a\x00", "https://a", "a.postman.co", "a?b", "a#b", "[::1]", "a\\b"} {
		rows = append(rows, refusal{"refuses " + strconv.Quote(v), webEnv().with(pmconfig.EnvSubdomain, v), pmconfig.EnvSubdomain, "one lowercase DNS label"})
	}
	for _, v := range []string{"go", "identity", "id", "www"} {
		rows = append(rows, refusal{"reserved " + v, webEnv().with(pmconfig.EnvSubdomain, v), pmconfig.EnvSubdomain, "reserved Postman host"})
	}
	runRefusals(t, rows)
}

func TestWorkspaceIDValidation(t *testing.T) {
	is := is.New(t)
	for _, v := range []string{"w", strings.Repeat("w", 256), "team:123/abc"} {
		c := mustParse(t, webEnv().with(pmconfig.EnvWorkspaceID, v))
		is.Equal(c.WorkspaceID, v) // opaque id kept exactly
	}
	var rows []refusal
	for name, v := range map[string]string{"257 bytes": strings.Repeat("w", 257), "space": "w 1", "LF": "w\n", "NUL": "w\x00", "non-ASCII": "wé"} {
		rows = append(rows, refusal{name, tokenEnv().with(pmconfig.EnvWorkspaceID, v), pmconfig.EnvWorkspaceID, "1-256 bytes of visible ASCII"})
	}
	runRefusals(t, rows)
}

func TestOriginValidation(t *testing.T) {
	for _, v := range []string{
		"https://api.example.test", "https://localhost:1", "https://127.0.0.1:8443", "https://[::1]:8443", "https://[::1]",
		"https://example.com:443", "https://h:65535", "https://xn--bcher-kva.example", "https://a-b.c0.example",
	} {
		t.Run("accepts "+v, func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, tokenEnv().with(pmconfig.EnvOrigin, v))
			is.Equal(c.ChatURL().String(), v+"/_gw/chat") // URL keeps exactly the configured origin
		})
	}
	var rows []refusal
	for _, v := range []string{
		"http://api.example.test", "HTTPS://api.example.test", "https:api.example.test", "//api.example.test", "api.example.test",
		"https://", "https://api.example.test/", "https://api.example.test/x", "https://api.example.test?", "https://api.example.test?q=1",
		"https://api.example.test#f", "https://u@api.example.test", "https://u:p@api.example.test", "https://api.example.test:",
		"https://api.example.test:0", "https://api.example.test:65536", "https://api.example.test:080", "https://api.example.test:+80",
		"https://api.example.test:8a", "https://API.example.test", "https://ex ample.test", "https://api.example.test\r\n",
		" https://api.example.test", "https://api.example.test ", "https://1.2.3", "https://256.1.1.1", "https://01.2.3.4",
		"https://[::1", "https://[fe80::1%25eth0]", "https://[0:0:0:0:0:0:0:1]", "https://[::1]x", "https://[1.2.3.4]",
		"https://a..b", "https://.a", "https://a.", "https://-a.test", "https://a-.test", "https://a_b.test", "https://é.test",
		"https://%61.test", `https://a\@b.test`, "https://a:1:2", "https://" + strings.Repeat("a.", 127) + "test",
	} {
		rows = append(rows, refusal{"refuses " + strconv.Quote(v[:min(len(v), 40)]), tokenEnv().with(pmconfig.EnvOrigin, v), pmconfig.EnvOrigin, ""})
	}
	runRefusals(t, rows)
}

func TestChatPathValidation(t *testing.T) {
	is := is.New(t)
	c := mustParse(t, tokenEnv())
	is.Equal(c.ChatPath, "/_gw/chat") // default path
	for _, v := range []string{"/", "/_gw/chat", "/a/b/", "/v1:chat", "/a@b", "/a;b=c", "/a.b/c..d", "/" + strings.Repeat("p", 1023)} {
		t.Run("accepts "+v[:min(len(v), 20)], func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, tokenEnv().with(pmconfig.EnvChatPath, v))
			is.Equal(c.ChatURL().Path, v)                                // exact path
			is.Equal(c.ChatURL().String(), "https://api.example.test"+v) // exact serialization
		})
	}
	var rows []refusal
	for _, v := range []string{
		"_gw/chat", "chat", "/a?b", "/a?", "/a#b", "/a/../b", "/..", "/a/..", "/a/./b", "/.", "/%2e%2e", "/a%20b",
		"//x", "/a//b", "/a b", "/a\tb", "/a\r\nb", "/a\x00", "/é", `/a"b`, "/a!b", "/a<b", "/a\\b", "/" + strings.Repeat("p", 1024),
	} {
		rows = append(rows, refusal{"refuses " + strconv.Quote(v[:min(len(v), 20)]), tokenEnv().with(pmconfig.EnvChatPath, v), pmconfig.EnvChatPath, ""})
	}
	runRefusals(t, rows)
}

func TestModelMap(t *testing.T) {
	t.Run("every public model mapped, labels trimmed, upstream first", func(t *testing.T) {
		is := is.New(t)
		c := mustParse(t, webEnv().with(
			providerModels, " gpt-5.5 , claude-sonnet-4-5 ",
			pmconfig.EnvModelMap, " claude-sonnet-4-5 = CLAUDE_45_SONNET_BEDROCK | claude-sonnet-4.5 | CLAUDE_45_SONNET_BEDROCK , gpt-5.5=GPT_55|gpt-5.5|gpt-5.5"))
		want := []pmconfig.ModelMapping{
			{Public: "gpt-5.5", Upstream: "GPT_55", Observed: []string{"GPT_55", "gpt-5.5"}},
			{Public: "claude-sonnet-4-5", Upstream: "CLAUDE_45_SONNET_BEDROCK", Observed: []string{"CLAUDE_45_SONNET_BEDROCK", "claude-sonnet-4.5"}},
		}
		is.Equal(c.Models, want) // one mapping per public model, in PROVIDER_MODELS order, labels once
		m, ok := c.Model("claude-sonnet-4-5")
		is.True(ok)                                      // mapped model found
		is.Equal(m.Upstream, "CLAUDE_45_SONNET_BEDROCK") // upstream enum
		_, ok = c.Model("gpt-4")
		is.True(!ok) // unknown public model not found
	})
	t.Run("Model returns a copy", func(t *testing.T) {
		is := is.New(t)
		c := mustParse(t, webEnv())
		m, _ := c.Model("claude-sonnet-4-5")
		m.Observed[0] = "EVIL"
		again, _ := c.Model("claude-sonnet-4-5")
		is.Equal(again.Observed[0], "CLAUDE_45_SONNET_BEDROCK") // caller mutation does not reach the config
	})
	t.Run("bounds", func(t *testing.T) {
		is := is.New(t)
		id128, enum64, label128 := strings.Repeat("m", 128), strings.Repeat("A", 64), strings.Repeat("l", 128)
		c := mustParse(t, webEnv().with(providerModels, id128, pmconfig.EnvModelMap, id128+"="+enum64+"|"+label128))
		is.Equal(c.Models[0].Observed, []string{enum64, label128}) // maximal id, enum and label accepted
		labels := make([]string, 32)
		for i := range labels {
			labels[i] = "l" + strconv.Itoa(i)
		}
		c = mustParse(t, webEnv().with(providerModels, "m", pmconfig.EnvModelMap, "m=M|"+strings.Join(labels, "|")))
		is.Equal(len(c.Models[0].Observed), 33) // 32 labels plus the upstream enum
		ids := make([]string, 256)
		entries := make([]string, 256)
		for i := range ids {
			ids[i] = "m" + strconv.Itoa(i)
			entries[i] = ids[i] + "=M"
		}
		c = mustParse(t, webEnv().with(providerModels, strings.Join(ids, ","), pmconfig.EnvModelMap, strings.Join(entries, ",")))
		is.Equal(len(c.Models), 256) // 256 models accepted
	})

	labels33 := make([]string, 33)
	for i := range labels33 {
		labels33[i] = "l" + strconv.Itoa(i)
	}
	m := func(models, mapping string) env {
		return webEnv().with(providerModels, models, pmconfig.EnvModelMap, mapping)
	}
	runRefusals(t, []refusal{
		{"missing entry", m("a,b", "a=A"), pmconfig.EnvModelMap, `no entry for public model "b"`},
		{"unknown public model", m("a", "a=A,z=Z"), pmconfig.EnvModelMap, "does not list"},
		{"duplicate entry", m("a", "a=A,a=B"), pmconfig.EnvModelMap, "already maps"},
		{"entry without =", m("a", "a"), pmconfig.EnvModelMap, "public=UPSTREAM_ENUM"},
		{"empty entry", m("a", "a=A,"), pmconfig.EnvModelMap, "entry 2 is empty"},
		{"lowercase enum", m("a", "a=gpt_55"), pmconfig.EnvModelMap, "^[A-Z0-9_]{1,64}$"},
		{"dash in enum", m("a", "a=GPT-55"), pmconfig.EnvModelMap, "^[A-Z0-9_]{1,64}$"},
		{"65-byte enum", m("a", "a="+strings.Repeat("A", 65)), pmconfig.EnvModelMap, "^[A-Z0-9_]{1,64}$"},
		{"empty enum", m("a", "a=|x"), pmconfig.EnvModelMap, "^[A-Z0-9_]{1,64}$"},
		{"empty label", m("a", "a=A||x"), pmconfig.EnvModelMap, "observed label 1"},
		{"trailing bar", m("a", "a=A|x|"), pmconfig.EnvModelMap, "observed label 2"},
		{"129-byte label", m("a", "a=A|"+strings.Repeat("l", 129)), pmconfig.EnvModelMap, "1-128 bytes"},
		{"label with space", m("a", "a=A|x y"), pmconfig.EnvModelMap, "visible ASCII"},
		{"33 labels", m("a", "a=A|"+strings.Join(labels33, "|")), pmconfig.EnvModelMap, "more than 32"},
		{"no mapping at all", webEnv().with(pmconfig.EnvModelMap, "<unset>"), pmconfig.EnvModelMap, "required"},
	})
}

func TestSelectedModelForm(t *testing.T) {
	one := func(kv ...string) env {
		return webEnv().with(append([]string{providerModels, "gpt-5.5", pmconfig.EnvModelMap, "<unset>"}, kv...)...)
	}
	t.Run("web_session", func(t *testing.T) {
		is := is.New(t)
		c := mustParse(t, one(pmconfig.EnvSelectedModel, "GPT_55", pmconfig.EnvObservedModels, " gpt-5.5 ,GPT-5.5"))
		is.Equal(c.Models, []pmconfig.ModelMapping{{Public: "gpt-5.5", Upstream: "GPT_55", Observed: []string{"GPT_55", "gpt-5.5", "GPT-5.5"}}}) // selected form builds the single mapping
		c = mustParse(t, one(pmconfig.EnvSelectedModel, "GPT_55"))
		is.Equal(c.Models[0].Observed, []string{"GPT_55"}) // observed labels default to the upstream enum
	})
	t.Run("also works for access_token", func(t *testing.T) {
		is := is.New(t)
		c := mustParse(t, tokenEnv().with(providerModels, "gpt-5.5", pmconfig.EnvModelMap, "<unset>", pmconfig.EnvSelectedModel, "GPT_55"))
		is.Equal(c.Models[0].Upstream, "GPT_55") // both forms work for both strategies
	})
	labels33 := make([]string, 33)
	for i := range labels33 {
		labels33[i] = "l" + strconv.Itoa(i)
	}
	runRefusals(t, []refusal{
		{"two public models", one(providerModels, "a,b", pmconfig.EnvSelectedModel, "A"), pmconfig.EnvSelectedModel, "exactly one id"},
		{"both forms", one(pmconfig.EnvSelectedModel, "GPT_55", pmconfig.EnvModelMap, "gpt-5.5=GPT_55"), pmconfig.EnvSelectedModel, "together with POSTMAN_MODEL_MAP"},
		{"map with observed", one(pmconfig.EnvObservedModels, "x", pmconfig.EnvModelMap, "gpt-5.5=GPT_55"), pmconfig.EnvObservedModels, "together with POSTMAN_MODEL_MAP"},
		{"observed without selected", one(pmconfig.EnvObservedModels, "x"), pmconfig.EnvObservedModels, "requires POSTMAN_WEB_SESSION_SELECTED_MODEL"},
		{"bad selected enum", one(pmconfig.EnvSelectedModel, "gpt-5.5"), pmconfig.EnvSelectedModel, "^[A-Z0-9_]{1,64}$"},
		{"selected with space", one(pmconfig.EnvSelectedModel, " GPT_55"), pmconfig.EnvSelectedModel, "^[A-Z0-9_]{1,64}$"},
		{"empty observed item", one(pmconfig.EnvSelectedModel, "GPT_55", pmconfig.EnvObservedModels, "a,,b"), pmconfig.EnvObservedModels, "item 2"},
		{"overlong observed label", one(pmconfig.EnvSelectedModel, "GPT_55", pmconfig.EnvObservedModels, strings.Repeat("l", 129)), pmconfig.EnvObservedModels, "1-128 bytes"},
		{"33 observed labels", one(pmconfig.EnvSelectedModel, "GPT_55", pmconfig.EnvObservedModels, strings.Join(labels33, ",")), pmconfig.EnvObservedModels, "at most 32"},
	})
}

func TestUserAgentAndAppVersion(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		is := is.New(t)
		c := mustParse(t, webEnv())
		is.Equal(c.UserAgent, pmconfig.DefaultUserAgent)                 // documented constant
		is.True(!strings.Contains(pmconfig.DefaultUserAgent, "Mozilla")) // no browser imitation
		is.Equal(c.AppVersion, "")                                       // app version unset by default
		is.Equal(len(c.Headers().Values(pmconfig.HeaderAppVersion)), 0)  // and not sent
	})
	t.Run("configured", func(t *testing.T) {
		is := is.New(t)
		ua, av := "my gateway/2.0 (ops)", "12.15.4-260616-1202"
		c := mustParse(t, tokenEnv().with(pmconfig.EnvUserAgent, ua, pmconfig.EnvAppVersion, av))
		is.Equal(c.Headers().Get(pmconfig.HeaderUserAgent), ua)  // configured UA sent
		is.Equal(c.Headers().Get(pmconfig.HeaderAppVersion), av) // configured app version sent
		c = mustParse(t, tokenEnv().with(pmconfig.EnvUserAgent, strings.Repeat("u", 256), pmconfig.EnvAppVersion, strings.Repeat("v", 256)))
		is.Equal(len(c.UserAgent)+len(c.AppVersion), 512) // 256 bytes each accepted
	})
	var rows []refusal
	for name, v := range map[string]string{"257 bytes": strings.Repeat("u", 257), "CRLF": "a\r\nX-Evil: 1", "LF": "a\nb", "NUL": "a\x00",
		"tab": "a\tb", "non-ASCII": "aé", "leading space": " a", "trailing space": "a ", "DEL": "a\x7f"} {
		rows = append(rows, refusal{"UA " + name, webEnv().with(pmconfig.EnvUserAgent, v), pmconfig.EnvUserAgent, "printable ASCII"})
	}
	for name, v := range map[string]string{"257 bytes": strings.Repeat("v", 257), "space": "1 2", "CRLF": "1\r\n", "NUL": "1\x00", "non-ASCII": "1é"} {
		rows = append(rows, refusal{"app version " + name, tokenEnv().with(pmconfig.EnvAppVersion, v), pmconfig.EnvAppVersion, "visible ASCII"})
	}
	runRefusals(t, rows)
}

func TestTerminalRule(t *testing.T) {
	is := is.New(t)
	is.Equal(mustParse(t, webEnv()).TerminalRule, completion.RuleUsageAfterOutput) // web_session default
	explicit := mustParse(t, webEnv().with(pmconfig.EnvTerminalRule, "explicit_only"))
	is.Equal(explicit.TerminalRule, completion.RuleExplicitOnly) // explicit_only accepted
	usage := mustParse(t, webEnv().with(pmconfig.EnvTerminalRule, "usage_after_output_v1"))
	is.Equal(usage.TerminalRule, completion.RuleUsageAfterOutput)        // usage_after_output_v1 accepted explicitly
	is.Equal(mustParse(t, tokenEnv()).TerminalRule, completion.Rule("")) // no web rule on access_token
	var rows []refusal
	for _, v := range []string{"EXPLICIT_ONLY", " explicit_only", "explicit_only\n", "legacy_done", "usage_after_output", "usage_after_output_v2", "eof"} {
		rows = append(rows, refusal{"refuses " + strconv.Quote(v), webEnv().with(pmconfig.EnvTerminalRule, v), pmconfig.EnvTerminalRule, "explicit_only or usage_after_output_v1"})
	}
	rows = append(rows, refusal{"set on access_token", tokenEnv().with(pmconfig.EnvTerminalRule, "usage_after_output_v1"), pmconfig.EnvTerminalRule, "must not be set"})
	runRefusals(t, rows)
}

func TestIntegerDefaults(t *testing.T) {
	is := is.New(t)
	c := mustParse(t, webEnv())
	is.Equal(c.MaxQueryChars, 10000)      // POSTMAN_MAX_QUERY_CHARS default
	is.Equal(c.MaxToolsUpstream, 20)      // POSTMAN_MAX_TOOLS_UPSTREAM default
	is.Equal(c.Limits, pmconfig.Limits{}) // the request limits are the wiring's to set
}

func TestParallelToolCalls(t *testing.T) {
	is := is.New(t)
	web, tok := mustParse(t, webEnv()), mustParse(t, tokenEnv())
	is.Equal(web.Parallel(true), false)                     // web_session default: off whatever the client asks
	is.Equal(tok.Parallel(true), true)                      // access_token default: the client's choice
	is.Equal(tok.Parallel(false), false)                    // access_token default: the client's choice
	is.Equal(web.Summary()["parallel_tool_calls"], "false") // the summary shows the effective default
	is.Equal(tok.Summary()["parallel_tool_calls"], "client")
	for _, e := range []env{webEnv(), tokenEnv()} {
		on := mustParse(t, e.with(pmconfig.EnvParallelTools, "true"))
		off := mustParse(t, e.with(pmconfig.EnvParallelTools, "false"))
		is.Equal(on.Parallel(false), true)  // the setting wins over the client
		is.Equal(off.Parallel(true), false) // the setting wins over the client
		is.Equal(on.Summary()["parallel_tool_calls"], "true")
	}
	var rows []refusal
	for _, v := range []string{"TRUE", "1", "yes", "on", " true", "client"} {
		rows = append(rows, refusal{"parallel " + strconv.Quote(v), webEnv().with(pmconfig.EnvParallelTools, v), pmconfig.EnvParallelTools, "must be true or false"})
	}
	runRefusals(t, rows)
}

func TestIntegerBounds(t *testing.T) {
	type bound struct {
		name   string
		lo, hi int
		read   func(pmconfig.Config) int
	}
	bounds := []bound{
		{pmconfig.EnvMaxQueryChars, 1, 1000000, func(c pmconfig.Config) int { return c.MaxQueryChars }},
		{pmconfig.EnvMaxToolsUpstream, 0, 256, func(c pmconfig.Config) int { return c.MaxToolsUpstream }},
		{pmconfig.EnvMaxToolResult, 1, 128 << 20, func(c pmconfig.Config) int { return c.MaxToolResultChars }},
	}
	var rows []refusal
	for _, b := range bounds {
		t.Run(b.name+" edges accepted", func(t *testing.T) {
			is := is.New(t)
			is.Equal(b.read(mustParse(t, webEnv().with(b.name, strconv.Itoa(b.lo)))), b.lo)     // lower bound accepted
			is.Equal(b.read(mustParse(t, webEnv().with(b.name, strconv.Itoa(b.hi)))), b.hi)     // upper bound accepted
			is.Equal(b.read(mustParse(t, webEnv().with(b.name, "0"+strconv.Itoa(b.lo)))), b.lo) // leading zeros are digits
		})
		rule := "decimal integer from " + strconv.Itoa(b.lo)
		if b.lo > 0 {
			rows = append(rows, refusal{b.name + " lower-1", webEnv().with(b.name, strconv.Itoa(b.lo-1)), b.name, rule})
		}
		rows = append(rows, refusal{b.name + " upper+1", webEnv().with(b.name, strconv.Itoa(b.hi+1)), b.name, rule})
		for _, v := range []string{"-1", "+" + strconv.Itoa(b.lo), " " + strconv.Itoa(b.lo), strconv.Itoa(b.lo) + " ", "1_024", "0x400", "1e3", "１０２４", "1.0", "99999999999999999999999", "abc"} {
			rows = append(rows, refusal{b.name + " malformed " + strconv.Quote(v), webEnv().with(b.name, v), b.name, rule})
		}
	}
	runRefusals(t, rows)
}

func TestParseWithNilGetenvRefusesStrategy(t *testing.T) {
	is := is.New(t)
	_, err := pmconfig.Parse(nil, nil)
	is.True(err != nil)                                                       // nothing configured is refused
	is.True(strings.Contains(err.Error(), pmconfig.EnvStrategy+": required")) // the strategy is the first requirement
}

func TestEveryRefusalIsReportedAtOnce(t *testing.T) {
	is := is.New(t)
	e := webEnv().with(pmconfig.EnvSessionCookie, "<unset>", pmconfig.EnvSubdomain, "www", pmconfig.EnvWorkspaceID, "<unset>",
		pmconfig.EnvMaxQueryChars, "x")
	err := mustRefuse(t, e, pmconfig.EnvSessionCookie)
	for _, v := range []string{pmconfig.EnvSessionCookie, pmconfig.EnvSubdomain, pmconfig.EnvWorkspaceID,
		pmconfig.EnvMaxQueryChars} {
		is.True(strings.Contains(err.Error(), v+":"))      // every broken variable is named
		is.True(strings.Contains(errs.Redact(err), v+":")) // also in the redacted form
	}
}

func TestEveryProblemIsReportedInOneRunEvenUnderARefusedStrategy(t *testing.T) {
	is := is.New(t)
	// The strategy in the wrong case, a URL for the subdomain, a workspace
	// URL for the id, a model label for the enum and three bad limits: each
	// one is named, none hides another.
	e := webEnv().with(pmconfig.EnvStrategy, "Web_Session", pmconfig.EnvSubdomain, "https://acme.postman.co/",
		pmconfig.EnvWorkspaceID, "https://acme.postman.co/workspace/My-Space~1234/overview",
		pmconfig.EnvModelMap, "gpt-5.5=gpt-5.4,claude-sonnet-4-5=CLAUDE_45_SONNET_BEDROCK",
		pmconfig.EnvMaxQueryChars, "x", pmconfig.EnvMaxToolsUpstream, "y", pmconfig.EnvParallelTools, "True",
		pmconfig.EnvUserAgent, " ua", pmconfig.EnvAppVersion, "a b", pmconfig.EnvOrigin, "https://x.test", pmconfig.EnvChatPath, "/c")
	_, err := e.parse()
	is.True(err != nil)
	msg := errs.Redact(err)
	for _, want := range []string{
		"POSTMAN_TRANSPORT_STRATEGY: must be access_token or web_session, exactly as written here: did you mean web_session?",
		"POSTMAN_WORKSPACE_SUBDOMAIN: is a URL or a host name, not the subdomain",
		"POSTMAN_WORKSPACE_ID: is a URL, not the id",
		"mandatoryContext.workspaceId",
		"POSTMAN_MODEL_MAP: entry 1: the upstream model must match ^[A-Z0-9_]{1,64}$: the upstream enum is upper case",
		"POSTMAN_MAX_QUERY_CHARS:", "POSTMAN_MAX_TOOLS_UPSTREAM:",
		"POSTMAN_PARALLEL_TOOL_CALLS: must be true or false, exactly as written here: did you mean true?",
		"POSTMAN_USER_AGENT:", "POSTMAN_APP_VERSION:",
		"POSTMAN_ORIGIN: must not be set when POSTMAN_TRANSPORT_STRATEGY is web_session",
		"POSTMAN_CHAT_PATH: must not be set when POSTMAN_TRANSPORT_STRATEGY is web_session",
	} {
		is.True(strings.Contains(msg, want)) // every problem, in one run
	}
	is.True(!strings.Contains(err.Error(), "acme")) // the values are never echoed
	is.True(!strings.Contains(err.Error(), "gpt-5.4"))
}

func TestASubdomainInTheWrongCaseOrPastedAsAHostIsToldWhatToKeep(t *testing.T) {
	for v, want := range map[string]string{"Acme": "lower case, as the address bar shows it", "acme.postman.co": "not the subdomain",
		"https://acme.postman.co/workspace/x": "not the subdomain", "acme/": "not the subdomain"} {
		t.Run(v, func(t *testing.T) {
			is := is.New(t)
			err := mustRefuse(t, webEnv().with(pmconfig.EnvSubdomain, v), pmconfig.EnvSubdomain)
			is.True(strings.Contains(err.Error(), want)) // what to keep, in words
		})
	}
}

func TestTheSecretsSayWhichStrategyAStrategylessConfigurationMeant(t *testing.T) {
	is := is.New(t)
	_, err := webEnv().with(pmconfig.EnvStrategy, "<unset>", pmconfig.EnvSubdomain, "Acme").parse()
	is.True(strings.Contains(err.Error(), "POSTMAN_TRANSPORT_STRATEGY: required"))
	is.True(strings.Contains(err.Error(), "POSTMAN_WORKSPACE_SUBDOMAIN: must be one lowercase DNS label")) // checked as web_session
	_, err = tokenEnv().with(pmconfig.EnvStrategy, "auto", pmconfig.EnvOrigin, "http://x").parse()
	is.True(strings.Contains(err.Error(), "POSTMAN_ORIGIN:")) // checked as access_token
}
