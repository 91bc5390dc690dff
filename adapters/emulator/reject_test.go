package emulator_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

func setHeader(name, value string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set(name, value) }
}

func delHeader(name string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Del(name) }
}

func TestRequestsBreakingTheStrategyPolicyAreRejected(t *testing.T) {
	t.Parallel()
	huge := append(append([]byte(`{"input":{"query":"`), bytes.Repeat([]byte("a"), 8<<20)...), `"}}`...)
	cases := []struct {
		name     string
		strategy string
		body     any
		edits    []func(*http.Request)
		status   int
		message  string
	}{
		{"wrong cookie", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Cookie", "postman.sid=wrong-SECRET")}, 401, "Unauthorized"},
		{"missing cookie", emulator.StrategyWebSession, nil, []func(*http.Request){delHeader("Cookie")}, 401, "Unauthorized"},
		{"extra cookie", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Cookie", "postman.sid="+cookie+"; other=1")}, 401, "Unauthorized"},
		{"x-access-token on web_session", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("X-Access-Token", token)}, 400, "Forbidden request header"},
		{"authorization on web_session", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Authorization", "Bearer SECRET")}, 400, "Forbidden request header"},
		{"missing service header", emulator.StrategyWebSession, nil, []func(*http.Request){delHeader("X-Pstmn-Req-Service")}, 400, "Invalid request headers"},
		{"wrong origin", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Origin", "https://evil.postman.co")}, 400, "Invalid request headers"},
		{"wrong referer", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Referer", "https://acme.postman.co/x")}, 400, "Invalid request headers"},
		{"wrong accept", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Accept", "application/json")}, 400, "Invalid request headers"},
		{"wrong content type", emulator.StrategyWebSession, nil, []func(*http.Request){setHeader("Content-Type", "text/plain")}, 400, "Invalid request headers"},
		{"wrong token", emulator.StrategyAccessToken, nil, []func(*http.Request){setHeader("X-Access-Token", "wrong-SECRET")}, 401, "Unauthorized"},
		{"missing token", emulator.StrategyAccessToken, nil, []func(*http.Request){delHeader("X-Access-Token")}, 401, "Unauthorized"},
		{"cookie on access_token", emulator.StrategyAccessToken, nil, []func(*http.Request){setHeader("Cookie", "postman.sid="+cookie)}, 400, "Forbidden request header"},
		{"authorization on access_token", emulator.StrategyAccessToken, nil, []func(*http.Request){setHeader("Authorization", "Bearer SECRET")}, 400, "Forbidden request header"},
		{"wrong workspace", emulator.StrategyAccessToken, func() body {
			b := userQuery("x")
			b["mandatoryContext"] = map[string]any{"workspaceId": "other"}
			return b
		}(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"unknown model", emulator.StrategyWebSession, func() body { b := userQuery("x"); b.dev()["selectedModel"] = "GPT_1"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		// thinkingLevel is enum(["low","medium","high"]) in the 12.29.2 client
		// (ps2Api types.go normalizeThinkingLevel); GF's xhigh/none fall outside.
		{"thinking level xhigh", emulator.StrategyWebSession, func() body { b := userQuery("x"); b.dev()["thinkingLevel"] = "xhigh"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"thinking level none", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b.dev()["thinkingLevel"] = "none"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"null model", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b.dev()["selectedModel"] = nil; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"wrong product", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b.input()["product"] = "workspace_localmode_v12"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"wrong platform", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b["platform"] = "DESKTOP_MACOS"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"unknown chat type", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b.input()["chatType"] = "USER_CONTINUE_LOOP"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"empty query", emulator.StrategyAccessToken, userQuery(""), nil, 400, "INPUT_VALIDATION_ERROR"},
		{"bad tool schema", emulator.StrategyAccessToken, func() body {
			b := userQuery("x").withTools(false, true, map[string]any{"name": "t", "description": "d"})
			return b
		}(), nil, 400, "Invalid request body"},
		{"wrong field type", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b.dev()["autoRun"] = "yes"; return b }(), nil, 400, "Invalid request body"},
		{"invalid JSON", emulator.StrategyAccessToken, []byte(`{"input":`), nil, 400, "Invalid JSON body"},
		{"body over 8 MiB", emulator.StrategyAccessToken, huge, nil, 413, "Request body too large"},
		{"unknown scenario", emulator.StrategyAccessToken, userQuery("x #scenario=SECRET_nope"), nil, 400, "Unknown emulator scenario"},
		{"loop out of range", emulator.StrategyWebSession, userQuery("x #loop=6"), nil, 400, "Invalid emulator directive"},
		{"continuation fields on a user query", emulator.StrategyAccessToken, func() body { b := userQuery("x"); b.input()["toolCallId"] = "tc-1"; return b }(), nil, 400, "INPUT_VALIDATION_ERROR: Forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := start(t)
			p := tokenPeer(t, s)
			if tc.strategy == emulator.StrategyWebSession {
				p = webPeer(t, s)
			}
			b := tc.body
			if b == nil {
				b = userQuery("hello")
			}
			resp, got := p.post(b, tc.edits...)
			is.Equal(resp.StatusCode, tc.status)                          // status
			is.Equal(errorMessage(t, got), tc.message)                    // fixed message, nothing reflected
			is.Equal(resp.Header.Get("Content-Type"), "application/json") // JSON error
			is.Equal(s.Count(emulator.KindRejected), 1)                   // counted as rejected
			is.Equal(s.Count(emulator.KindUserQuery), 0)                  // not as a user query
			rec := s.Requests()[0]
			is.True(rec.Rejected)               // recorded as rejected
			is.Equal(rec.Status, tc.status)     // with its status
			is.Equal(rec.Strategy, tc.strategy) // and its strategy
		})
	}
}

func TestWrongPathAndMethodAreRejected(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)

	resp, _ := p.post(userQuery("x"), func(r *http.Request) { r.URL.Path = "/_gw/other" })
	is.Equal(resp.StatusCode, http.StatusNotFound) // wrong path
	resp, _ = p.post(userQuery("x"), func(r *http.Request) { r.Method = http.MethodPut })
	is.Equal(resp.StatusCode, http.StatusMethodNotAllowed) // POST only
	is.Equal(resp.Header.Get("Allow"), http.MethodPost)    // says which
	is.Equal(s.Count(emulator.KindRejected), 2)            // both recorded

	custom := start(t, func(c *emulator.Config) { c.ChatPath = "/custom/chat" })
	resp, _ = tokenPeer(t, custom).post(userQuery("x"))
	is.Equal(resp.StatusCode, http.StatusNotFound) // ChatPath replaces /_gw/chat on access_token
}

func TestWebSessionRequiresMatchingTLSServerName(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := webPeer(t, s)
	p.hc.Transport.(*http.Transport).TLSClientConfig.ServerName = "localhost"
	resp, _ := p.post(userQuery("x"))
	is.Equal(resp.StatusCode, http.StatusMisdirectedRequest) // SNI must equal the Host
}

func TestContinuationShapesOutsideTheStrategyAreForbidden(t *testing.T) {
	t.Parallel()
	toolTurn := func(t *testing.T, p *peer, parallel bool) (string, string, []*call) {
		st := p.turn(userQuery("go").withTools(parallel, true, weatherTool, timeTool))
		calls, group := st.calls(t)
		return st.conversationID(), group, calls
	}
	cases := []struct {
		name  string
		web   bool
		shape string
		build func(conv, group string, calls []*call) body
	}{
		{"web_session packed with the wrong first id", true, emulator.ShapeBoth, func(conv, group string, calls []*call) body {
			b := toolResponse(conv, false, weatherTool).packed(group, result{calls[0].id, "x"}, result{"tc-other", "y"})
			b.input()["toolCallId"] = "tc-other"
			return b
		}},
		{"grouped when only flat is accepted", false, emulator.ShapeFlat, func(conv, group string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).grouped(group, result{calls[0].id, "x"})
		}},
		{"flat when only grouped is accepted", false, emulator.ShapeGrouped, func(conv, group string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "x"})
		}},
		{"both forms at once", false, emulator.ShapeBoth, func(conv, group string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).grouped(group, result{calls[0].id, "x"}).flat(group, result{calls[0].id, "x"})
		}},
		{"grouped without group id", false, emulator.ShapeBoth, func(conv, _ string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).grouped("", result{calls[0].id, "x"})
		}},
		{"no result at all", false, emulator.ShapeBoth, func(conv, _ string, _ []*call) body {
			return toolResponse(conv, false, weatherTool)
		}},
		{"non-empty query", false, emulator.ShapeBoth, func(conv, group string, calls []*call) body {
			b := toolResponse(conv, false, weatherTool).grouped(group, result{calls[0].id, "x"})
			b.input()["query"] = "hello"
			return b
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := start(t, func(c *emulator.Config) { c.ContinuationShape = tc.shape })
			p := tokenPeer(t, s)
			if tc.web {
				p = webPeer(t, s)
			}
			conv, group, calls := toolTurn(t, p, false)
			resp, got := p.post(tc.build(conv, group, calls))
			is.Equal(resp.StatusCode, http.StatusBadRequest)                    // refused before any stream
			is.Equal(errorMessage(t, got), "INPUT_VALIDATION_ERROR: Forbidden") // fixed message
			is.Equal(s.Count(emulator.KindRejected), 1)                         // counted
		})
	}
}

func TestContinuationsThatDoNotMatchFailInStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		web       bool
		parallel  bool
		build     func(conv, group string, calls []*call) body
		errorType string
		withConv  bool
	}{
		{"unknown conversation", false, false, func(_, group string, calls []*call) body {
			return toolResponse("conv-unknown", false, weatherTool).grouped(group, result{calls[0].id, "x"})
		}, "CONVERSATION_NOT_FOUND", false},
		{"unknown call id", false, false, func(conv, group string, _ []*call) body {
			return toolResponse(conv, false, weatherTool).grouped(group, result{"tc-nope", "x"})
		}, "TOOL_CALL_NOT_FOUND", true},
		{"wrong group id", true, false, func(conv, _ string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).flat("grp-nope", result{calls[0].id, "x"})
		}, "TOOL_CALL_NOT_FOUND", true},
		{"web_session without group id", true, false, func(conv, _ string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).flat("", result{calls[0].id, "x"})
		}, "TOOL_CALL_NOT_FOUND", true},
		{"web_session grouped array for a serial group", true, false, func(conv, group string, calls []*call) body {
			return toolResponse(conv, false, weatherTool).grouped(group, result{calls[0].id, "x"})
		}, "INPUT_VALIDATION_ERROR", true},
		{"partial grouped answer", false, true, func(conv, group string, calls []*call) body {
			return toolResponse(conv, true, weatherTool, timeTool).grouped(group, result{calls[1].id, "x"})
		}, "TOOL_CALL_NOT_FOUND", true},
		{"duplicate grouped answer", false, true, func(conv, group string, calls []*call) body {
			return toolResponse(conv, true, weatherTool, timeTool).grouped(group, result{calls[0].id, "x"}, result{calls[0].id, "y"})
		}, "TOOL_CALL_NOT_FOUND", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := start(t)
			p := tokenPeer(t, s)
			if tc.web {
				p = webPeer(t, s)
			}
			st := p.turn(userQuery("go").withTools(tc.parallel, true, weatherTool, timeTool))
			calls, group := st.calls(t)
			got := p.turn(tc.build(st.conversationID(), group, calls))
			want := []string{"failure"}
			if tc.withConv {
				want = []string{"conversation", "failure"}
			}
			is.Equal(got.shape(), want)                               // failure, then EOF (no usage, no [DONE])
			is.Equal(got.first("failure")["errorType"], tc.errorType) // which failure
			is.Equal(s.Count(emulator.KindToolResponse), 1)           // a protocol-valid request, not a rejection
			if tc.errorType == "CONVERSATION_NOT_FOUND" {
				is.Equal(got.first("failure")["message"], "Conversation not found") // fixed message
			}
		})
	}
}

func TestMismatchedAnswerLeavesTheGroupPending(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	st := p.turn(userQuery("go").withTools(false, true, weatherTool))
	calls, group := st.calls(t)
	conv := st.conversationID()

	bad := p.turn(toolResponse(conv, false, weatherTool).grouped(group, result{"tc-nope", "x"}))
	is.Equal(bad.first("failure")["errorType"], "TOOL_CALL_NOT_FOUND") // refused
	good := p.turn(toolResponse(conv, false, weatherTool).grouped(group, result{calls[0].id, "ok"}))
	is.Equal(good.text(), "Tool results received: get_weather=ok") // the group was still pending
}

func TestSeveralThirdPartyGroupsFailWithForbidden(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	b := userQuery("two groups").withTools(false, true, weatherTool)
	b["clientTools"].(map[string]any)["thirdParty"].(map[string]any)["second"] = map[string]any{"tools": []any{timeTool}}
	st := webPeer(t, s).turn(b)
	is.Equal(st.shape(), []string{"failure"})                            // in-stream failure only
	is.Equal(st.first("failure")["errorType"], "INPUT_VALIDATION_ERROR") // error type
	is.Equal(st.first("failure")["message"], "Forbidden")                // reads INPUT_VALIDATION_ERROR: Forbidden
}

func TestAccessTokenOnlyEmulatorTreatsPostmanHostsAsAccessToken(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.Subdomain, c.SessionCookie = "", "" })
	resp, _ := webPeer(t, s).post(userQuery("x"))
	is.Equal(resp.StatusCode, http.StatusUnauthorized)               // no web_session strategy: the cookie is not a token
	is.Equal(s.Requests()[0].Strategy, emulator.StrategyAccessToken) // recognised as access_token
}

func TestStartValidatesTheConfig(t *testing.T) {
	t.Parallel()
	cases := map[string]emulator.Config{
		"no workspace":        {AccessToken: "t"},
		"no strategy":         {WorkspaceID: "w"},
		"cookie without host": {WorkspaceID: "w", SessionCookie: "SECRET-c"},
		"bad subdomain":       {WorkspaceID: "w", Subdomain: "a.b", SessionCookie: "SECRET-c"},
		"not loopback":        {WorkspaceID: "w", AccessToken: "SECRET-t", Addr: "0.0.0.0:0"},
		"bad shape":           {WorkspaceID: "w", AccessToken: "t", ContinuationShape: "array"},
		"relative chat path":  {WorkspaceID: "w", AccessToken: "t", ChatPath: "chat"},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			cfg.CADir = t.TempDir()
			s, err := emulator.Start(t.Context(), cfg)
			is.True(err != nil) // refused
			is.True(s == nil)   // no server
			if err != nil {
				is.True(!strings.Contains(err.Error(), "SECRET")) // no secret in the error
			}
		})
	}
}

func TestChunkedBodyOver8MiBIsRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	big := bytes.Repeat([]byte("a"), 8<<20+1)
	req := p.request(context.Background(), []byte{})
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(big))) // no Content-Length: chunked
	req.ContentLength = -1
	resp, err := p.hc.Do(req)
	is.NoErr(err) // the refusal arrives
	defer resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusRequestEntityTooLarge) // limit enforced while reading
	is.Equal(s.Count(emulator.KindRejected), 1)                 // recorded
	is.Equal(len(s.Requests()[0].Body), 8<<20)                  // bounded record
}
