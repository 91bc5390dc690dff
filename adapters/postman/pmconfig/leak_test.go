package pmconfig_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/errs"

	"github.com/matryer/is"
)

// Distinctive markers carried inside the secrets.
const (
	cookieMarker = "Qz7Kp2Wm9Xv4"
	tokenMarker  = "Jh3Ty8Rb5Nc1"
	markedCookie = "s%3A" + cookieMarker + ".Sg"
	markedToken  = "PMAK-" + tokenMarker
)

// fragments returns every 5-byte window of the markers: not even part of a
// secret may leak.
func fragments() []string {
	var out []string
	for _, m := range []string{cookieMarker, tokenMarker} {
		for i := 0; i+5 <= len(m); i++ {
			out = append(out, m[i:i+5])
		}
	}
	return out
}

// renderings returns every way an error is printed.
func renderings(err error) map[string]string {
	return map[string]string{
		"Error()":     err.Error(),
		"errs.Redact": errs.Redact(err),
		"%v":          fmt.Sprintf("%v", err),
		"%+v":         fmt.Sprintf("%+v", err),
		"%#v":         fmt.Sprintf("%#v", err),
	}
}

// failurePaths covers every refusal of Parse, each with marker-bearing secrets
// present: in the secret variables, or as the refused value itself.
func failurePaths() map[string]env {
	web := webEnv().with(pmconfig.EnvSessionCookie, markedCookie)
	tok := tokenEnv().with(pmconfig.EnvAccessToken, markedToken)
	paths := map[string]env{}
	add := func(name string, e env) { paths[name] = e }
	for name, base := range map[string]env{"web": web, "token": tok} {
		add(name+"/strategy unset", base.with(pmconfig.EnvStrategy, "<unset>"))
		add(name+"/strategy unknown", base.with(pmconfig.EnvStrategy, "web_session "))
		add(name+"/both secrets", base.with(pmconfig.EnvSessionCookie, markedCookie, pmconfig.EnvAccessToken, markedToken))
		add(name+"/workspace missing", base.with(pmconfig.EnvWorkspaceID, "<unset>"))
		add(name+"/workspace bad", base.with(pmconfig.EnvWorkspaceID, "w "+cookieMarker))
		add(name+"/map missing", base.with(pmconfig.EnvModelMap, "<unset>"))
		add(name+"/map entry", base.with(pmconfig.EnvModelMap, cookieMarker))
		add(name+"/map unknown", base.with(pmconfig.EnvModelMap, cookieMarker+"=A"))
		add(name+"/map enum", base.with(pmconfig.EnvModelMap, "gpt-5.5="+tokenMarker))
		add(name+"/map label", base.with(pmconfig.EnvModelMap, "gpt-5.5=A| "+tokenMarker+" x"))
		add(name+"/map incomplete", base.with(pmconfig.EnvModelMap, "gpt-5.5=A"))
		add(name+"/selected and map", base.with(pmconfig.EnvSelectedModel, tokenMarker))
		add(name+"/selected two models", base.with(pmconfig.EnvModelMap, "<unset>", pmconfig.EnvSelectedModel, "A"))
		add(name+"/selected bad", base.with(providerModels, "m", pmconfig.EnvModelMap, "<unset>", pmconfig.EnvSelectedModel, cookieMarker))
		add(name+"/observed bad", base.with(providerModels, "m", pmconfig.EnvModelMap, "<unset>", pmconfig.EnvSelectedModel, "A", pmconfig.EnvObservedModels, "a "+cookieMarker))
		add(name+"/observed alone", base.with(providerModels, "m", pmconfig.EnvModelMap, "<unset>", pmconfig.EnvObservedModels, cookieMarker))
		add(name+"/user agent", base.with(pmconfig.EnvUserAgent, cookieMarker+"\r\n"))
		add(name+"/app version", base.with(pmconfig.EnvAppVersion, tokenMarker+" x"))
		for _, n := range []string{pmconfig.EnvMaxQueryChars, pmconfig.EnvMaxToolsUpstream, pmconfig.EnvParallelTools} {
			add(name+"/"+n, base.with(n, tokenMarker))
		}
	}
	// web_session paths.
	add("web/token instead of cookie", web.with(pmconfig.EnvSessionCookie, "<unset>", pmconfig.EnvAccessToken, markedToken))
	add("web/origin set", web.with(pmconfig.EnvOrigin, "https://"+cookieMarker))
	add("web/chat path set", web.with(pmconfig.EnvChatPath, "/"+cookieMarker))
	add("web/cookie missing", web.with(pmconfig.EnvSessionCookie, "<unset>"))
	add("web/subdomain missing", web.with(pmconfig.EnvSubdomain, "<unset>"))
	add("web/subdomain bad", web.with(pmconfig.EnvSubdomain, cookieMarker+".evil"))
	add("web/subdomain reserved", web.with(pmconfig.EnvSubdomain, "www"))
	add("web/terminal rule", web.with(pmconfig.EnvTerminalRule, cookieMarker))
	for name, v := range map[string]string{
		"too long": strings.Repeat(markedCookie, 4096/len(markedCookie)+1), "CR": markedCookie + "\r", "LF": markedCookie + "\n",
		"NUL": markedCookie + "\x00", "space": markedCookie + " x", "semicolon": markedCookie + ";x", "comma": markedCookie + ",x",
		"backslash": markedCookie + `\x`, "whole cookie": "postman.sid=" + markedCookie, "header": "Cookie: postman.sid=" + markedCookie,
		"non-ASCII": markedCookie + "é", "DEL": markedCookie + "\x7f",
	} {
		add("web/cookie "+name, web.with(pmconfig.EnvSessionCookie, v))
	}
	// access_token paths.
	add("token/cookie instead of token", tok.with(pmconfig.EnvAccessToken, "<unset>", pmconfig.EnvSessionCookie, markedCookie))
	add("token/subdomain set", tok.with(pmconfig.EnvSubdomain, cookieMarker))
	add("token/terminal rule set", tok.with(pmconfig.EnvTerminalRule, "explicit_only"))
	add("token/token missing", tok.with(pmconfig.EnvAccessToken, "<unset>"))
	add("token/origin missing", tok.with(pmconfig.EnvOrigin, "<unset>"))
	for name, v := range map[string]string{
		"scheme": "http://" + tokenMarker + ".test", "path": "https://a.test/" + tokenMarker, "userinfo": "https://" + tokenMarker + "@a.test",
		"port": "https://a.test:" + tokenMarker, "host": "https://" + tokenMarker + ".test", "ipv6": "https://[" + tokenMarker + "]",
		"query": "https://a.test?" + tokenMarker, "numeric": "https://1.2." + strings.Repeat("9", 5),
	} {
		add("token/origin "+name, tok.with(pmconfig.EnvOrigin, v))
	}
	for name, v := range map[string]string{
		"relative": tokenMarker, "query": "/a?" + tokenMarker, "fragment": "/a#" + tokenMarker, "dotdot": "/../" + tokenMarker,
		"percent": "/%" + tokenMarker, "double slash": "//" + tokenMarker, "space": "/ " + tokenMarker, "bad byte": "/!" + tokenMarker,
	} {
		add("token/chat path "+name, tok.with(pmconfig.EnvChatPath, v))
	}
	for name, v := range map[string]string{
		"too long": strings.Repeat(markedToken, 4096/len(markedToken)+1), "space": markedToken + " x", "CR": markedToken + "\r",
		"LF": markedToken + "\n", "NUL": markedToken + "\x00", "non-ASCII": markedToken + "é",
	} {
		add("token/token "+name, tok.with(pmconfig.EnvAccessToken, v))
	}
	return paths
}

func TestNoSecretInAnyRefusal(t *testing.T) {
	for name, e := range failurePaths() {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := e.parse()
			is.True(err != nil)                        // this path is a refusal
			is.True(errs.Has(err, errs.ConfigInvalid)) // with code config_invalid
			for how, text := range renderings(err) {
				for _, f := range fragments() {
					if strings.Contains(text, f) {
						t.Fatalf("%s of the refusal contains secret fragment %q", how, f)
					}
				}
			}
		})
	}
}

func TestNoSecretInSummaryOrPrintedConfig(t *testing.T) {
	for name, e := range map[string]env{
		"web":   webEnv().with(pmconfig.EnvSessionCookie, markedCookie),
		"token": tokenEnv().with(pmconfig.EnvAccessToken, markedToken),
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			c := mustParse(t, e)
			j, err := json.Marshal(c)
			is.NoErr(err) // config marshals
			s := c.Summary()
			var all []string
			for k, v := range s {
				all = append(all, k+"="+v)
			}
			for _, text := range []string{ // summary, %v, %+v, %#v, %s, JSON
				strings.Join(all, " "), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c),
				fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c), string(j),
			} {
				for _, f := range fragments() {
					is.True(!strings.Contains(text, f)) // no secret fragment in any printed form
				}
				is.True(!strings.Contains(text, testWorkspace)) // workspace id never printed
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Run("web_session", func(t *testing.T) {
		is := is.New(t)
		s := mustParse(t, webEnv()).Summary()
		is.Equal(s["strategy"], "web_session")                                                                  // strategy
		is.Equal(s["host"], "team-1.postman.co")                                                                // host
		is.Equal(s["chat_path"], "/_gw/chat")                                                                   // path
		is.Equal(s["session_cookie"], "set")                                                                    // secret shown only as set: no value, no length
		is.Equal(s["workspace"], "set")                                                                         // workspace never shown
		is.Equal(s["terminal_rule"], "usage_after_output_v1")                                                   // web rule
		is.Equal(s["model_map"], "gpt-5.5=GPT_55,claude-sonnet-4-5=CLAUDE_45_SONNET_BEDROCK|claude-sonnet-4.5") // mapping
		is.Equal(s["user_agent"], pmconfig.DefaultUserAgent)                                                    // UA
		is.Equal(s["app_version"], "unset")                                                                     // app version
		is.Equal(s["max_query_chars"], "10000")                                                                 // the service's limits
		_, hasToken := s["access_token"]
		is.True(!hasToken) // the other strategy's secret is not mentioned
	})
	t.Run("access_token", func(t *testing.T) {
		is := is.New(t)
		s := mustParse(t, tokenEnv().with(pmconfig.EnvOrigin, "https://127.0.0.1:8443")).Summary()
		is.Equal(s["strategy"], "access_token") // strategy
		is.Equal(s["host"], "127.0.0.1:8443")   // host with port
		is.Equal(s["access_token"], "set")      // secret shown only as set
		_, hasRule := s["terminal_rule"]
		is.True(!hasRule) // no web rule on access_token
	})
}
