package postman_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/budget"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// goldenBody compares body (indented) with testdata/requests/<name>.json.
func goldenBody(t *testing.T, name string, body []byte) {
	t.Helper()
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(json.Indent(&out, body, "", "  ")) // the body is valid JSON
	out.WriteByte('\n')
	path := filepath.Join("testdata", "requests", name+".json")
	if *update {
		is.NoErr(os.WriteFile(path, out.Bytes(), 0o644)) // golden written
		return
	}
	want, err := os.ReadFile(path)
	is.NoErr(err)                        // the golden file exists (run with -update)
	is.Equal(out.String(), string(want)) // the body is byte-for-byte the golden one
}

func tokenConfig(t *testing.T, pairs ...string) pmconfig.Config {
	return mustParse(t, env(tokenEnv("https://127.0.0.1:8443"), pairs...))
}

func webConfig(t *testing.T, pairs ...string) pmconfig.Config {
	return mustParse(t, env(webEnv(), pairs...))
}

func transcriptMessages() []chat.Message {
	return []chat.Message{
		{Role: chat.RoleSystem, Content: str("You are terse.")},
		{Role: chat.RoleDeveloper, Content: str("Prefer metric units.")},
		{Role: chat.RoleUser, Name: "alice", Content: str("Weather in Oslo?")},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_pmn_A", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		{Role: chat.RoleTool, ToolCallID: "call_pmn_A", Content: str("12°C <sunny> & dry")},
		{Role: chat.RoleAssistant, Content: str("It is 12°C.")},
		{Role: chat.RoleUser, Content: str("And tomorrow?")},
	}
}

func TestQueryBodiesMatchGolden(t *testing.T) {
	t.Parallel()
	noDesc := []chat.Tool{{Name: "ping"}}
	cases := []struct {
		name string
		cfg  pmconfig.Config
		req  ports.UpstreamRequest
	}{
		{"query_single_user_web", webConfig(t), userText("hello there")},
		{"query_single_user_token", tokenConfig(t), userText("hello there")},
		{"query_transcript", tokenConfig(t), ports.UpstreamRequest{Chat: chat.Request{Model: publicModel, Messages: transcriptMessages(), ParallelToolCalls: true}}},
		{"query_tools_parallel_auto", webConfig(t), toolRequest("weather?", true)},
		{"query_tools_parallel_false", webConfig(t), toolRequest("weather?", false)},
		{"query_tools_parallel_setting_web", webConfig(t, pmconfig.EnvParallelTools, "true"), toolRequest("weather?", false)},
		{"query_tools_parallel_client_token", tokenConfig(t), toolRequest("weather?", true)},
		{"query_tools_choice_none", webConfig(t), func() ports.UpstreamRequest {
			r := toolRequest("weather?", true)
			r.Chat.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceNone}
			return r
		}()},
		{"query_tool_without_description_or_schema", tokenConfig(t), func() ports.UpstreamRequest {
			r := userText("ping")
			r.Chat.Tools = noDesc
			return r
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			body, err := postman.BuildBody(c.cfg, c.req)
			is.NoErr(err) // the body builds
			goldenBody(t, c.name, body)
			again, err := postman.BuildBody(c.cfg, c.req)
			is.NoErr(err)                         // it builds again
			is.Equal(string(again), string(body)) // deterministically
		})
	}
}

func continuation(group string, n int) *ports.Continuation {
	c := &ports.Continuation{ConversationID: "conv-1", UpstreamGroupID: group}
	for i := range n {
		name := weatherTools[i].Name
		c.Results = append(c.Results, ports.ContinuationResult{
			UpstreamCallID: "tc-" + strconv.Itoa(i+1), OriginalName: name, Content: `{"ok":true,"n":` + strconv.Itoa(i+1) + `} <b>&</b>`,
		})
	}
	return c
}

func TestContinuationBodiesMatchGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  pmconfig.Config
		cont *ports.Continuation
	}{
		{"continuation_token_grouped", tokenConfig(t), continuation("grp-1", 2)},
		{"continuation_token_grouped_single", tokenConfig(t), continuation("grp-1", 1)},
		{"continuation_token_flat", tokenConfig(t), continuation("", 1)},
		{"continuation_web_single", webConfig(t), continuation("grp-1", 1)},
		{"continuation_web_packed", webConfig(t), continuation("grp-1", 2)},
		{"continuation_web_ungrouped", webConfig(t), continuation("", 1)},
		{"continuation_web_parallel_grouped", webConfig(t, pmconfig.EnvParallelTools, "true"), continuation("grp-1", 2)},
		{"continuation_token_serial_flat_grouped", tokenConfig(t, pmconfig.EnvParallelTools, "false"), continuation("grp-1", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			req := toolRequest("ignored in a continuation", true)
			req.Chat.Messages = transcriptMessages()
			req.Continuation = c.cont
			body, err := postman.BuildBody(c.cfg, req)
			is.NoErr(err) // the body builds
			goldenBody(t, c.name, body)
			is.True(!strings.Contains(string(body), "ignored in a continuation")) // the transcript is not sent with a TOOL_RESPONSE
		})
	}
}

func TestWebPackedResultsRoundTrip(t *testing.T) {
	is := is.New(t)
	body, err := postman.BuildBody(webConfig(t), ports.UpstreamRequest{Chat: toolRequest("x", true).Chat, Continuation: continuation("grp-1", 2)})
	is.NoErr(err) // builds
	var b struct {
		Input struct {
			ToolCallID   string `json:"toolCallId"`
			ToolResponse string `json:"toolResponse"`
		} `json:"input"`
	}
	is.NoErr(json.Unmarshal(body, &b)) // valid JSON
	var packed []struct {
		ToolCallID string `json:"toolCallId"`
		Status     string `json:"status"`
		Content    string `json:"content"`
	}
	is.NoErr(json.Unmarshal([]byte(b.Input.ToolResponse), &packed)) // toolResponse is a JSON string of results
	is.Equal(len(packed), 2)                                        // both results
	is.Equal(packed[0].ToolCallID, b.Input.ToolCallID)              // toolCallId is the first id
	is.Equal(packed[1].Content, `{"ok":true,"n":2} <b>&</b>`)       // contents are exact
	is.Equal(packed[0].Status, "SUCCESS")                           // accepted text results are SUCCESS
}

func TestContinuationRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  pmconfig.Config
		cont *ports.Continuation
		code errs.Code
	}{
		{"no conversation id", tokenConfig(t), &ports.Continuation{UpstreamGroupID: "g", Results: continuation("g", 1).Results}, errs.InvalidRequest},
		{"no results", tokenConfig(t), &ports.Continuation{ConversationID: "c", UpstreamGroupID: "g"}, errs.InvalidRequest},
		{"ungrouped pair on access_token", tokenConfig(t), continuation("", 2), errs.InvalidRequest},
		{"internal call id", webConfig(t), &ports.Continuation{ConversationID: "c", UpstreamGroupID: "g",
			Results: []ports.ContinuationResult{{UpstreamCallID: postman.InternalIDPrefix + "0", OriginalName: "get_weather", Content: "x"}}}, errs.UnsupportedToolResultContinuation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			_, err := postman.BuildBody(c.cfg, ports.UpstreamRequest{Chat: toolRequest("x", true).Chat, Continuation: c.cont})
			is.Equal(errs.CodeOf(err), c.code)        // refused with a stable code
			is.True(errors.Is(err, ports.ErrNotSent)) // before anything is sent
		})
	}
}

func TestUnknownModelIsRefusedBeforeSending(t *testing.T) {
	is := is.New(t)
	req := userText("hi")
	req.Chat.Model = "not-configured"
	_, err := postman.BuildBody(tokenConfig(t), req)
	is.True(errs.Has(err, errs.ModelNotFound)) // model_not_found
	is.True(errors.Is(err, ports.ErrNotSent))  // nothing sent
}

func TestTranscriptFormat(t *testing.T) {
	is := is.New(t)
	is.Equal(postman.Transcript([]chat.Message{{Role: chat.RoleUser, Content: str("just this")}}), "just this") // a lone user message is its text
	want := "[System]\nYou are terse.\n\n" +
		"[Developer]\nPrefer metric units.\n\n" +
		"[User name=alice]\nWeather in Oslo?\n\n" +
		"[Assistant Tool Calls]\n[{\"id\":\"call_pmn_A\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}]\n\n" +
		"[Tool Result id=call_pmn_A]\n12°C <sunny> & dry\n\n" +
		"[Assistant]\nIt is 12°C.\n\n" +
		"[User]\nAnd tomorrow?"
	is.Equal(postman.Transcript(transcriptMessages()), want) // the documented block format
	both := []chat.Message{{Role: chat.RoleAssistant, Content: str("Let me check."), ToolCalls: []chat.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}}
	is.Equal(postman.Transcript(both), "[Assistant]\nLet me check.\n\n[Assistant Tool Calls]\n[{\"id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"}]") // text, then the calls
	is.Equal(postman.Transcript([]chat.Message{{Role: chat.RoleSystem, Content: str("s")}}), "[System]\ns")                                           // a lone system message is a block
	is.Equal(postman.Transcript([]chat.Message{{Role: chat.RoleUser}, {Role: chat.RoleUser, Content: str("x")}}), "[User]\n\n\n[User]\nx")            // nil content is an empty body
}

// countingServer is a fake that counts the requests it receives.
func countingServer(t *testing.T) (*fakeTLS, *atomic.Int32) {
	var n atomic.Int32
	f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		sseHandler(okStream)(w, r)
	}))
	return f, &n
}

func TestBodySizeLimitAtBoundaryAndPlusOne(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	text := strings.Repeat("é", 1500) // 3000 bytes of UTF-8
	probe, err := postman.BuildBody(tokenConfig(t), userText(text))
	is.NoErr(err) // builds under the default limit
	size := len(probe)
	f, n := countingServer(t)
	for _, c := range []struct {
		limit int
		ok    bool
	}{{size, true}, {size - 1, false}} {
		cfg := mustParse(t, env(tokenEnv(f.srv.URL), "MAX_BODY_BYTES", strconv.Itoa(c.limit)))
		_, d, err := open(t, mustNew(t, cfg, postman.WithRootCAs(f.pool)), userText(text))
		if c.ok {
			is.NoErr(err)           // a body of exactly MAX_BODY_BYTES is sent
			is.Equal(d.err, io.EOF) // and answered
		} else {
			is.True(errs.Has(err, errs.UpstreamRequestTooLarge)) // one byte more is refused
			is.True(errors.Is(err, ports.ErrNotSent))            // before sending
		}
	}
	is.Equal(n.Load(), int32(1)) // only the body within the limit reached the server
}

func TestToolResultLimitAtBoundaryAndPlusOne(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	cfg := tokenConfig(t, "MAX_TOOL_RESULT_BYTES", "256")
	for _, c := range []struct {
		size int
		ok   bool
	}{{256, true}, {257, false}} {
		cont := continuation("grp-1", 2)
		cont.Results[1].Content = strings.Repeat("r", c.size)
		_, err := postman.BuildBody(cfg, ports.UpstreamRequest{Chat: toolRequest("x", true).Chat, Continuation: cont})
		if c.ok {
			is.NoErr(err) // a result of exactly MAX_TOOL_RESULT_BYTES is accepted
		} else {
			is.True(errs.Has(err, errs.UpstreamRequestTooLarge)) // one byte more is refused
			is.True(errors.Is(err, ports.ErrNotSent))            // before sending
		}
	}
}

func TestTooManyToolsAndBadSchemaAreRefused(t *testing.T) {
	is := is.New(t)
	req := toolRequest("x", true)
	_, err := postman.BuildBody(tokenConfig(t, "MAX_TOOLS", "1"), req)
	is.True(errs.Has(err, errs.InvalidRequest)) // more tools than MAX_TOOLS
	req.Chat.Tools = []chat.Tool{{Name: "bad", Parameters: []byte(`{"type":`), UpstreamParameters: []byte(`{"type":`)}}
	_, err = postman.BuildBody(tokenConfig(t), req)
	is.True(errs.Has(err, errs.InvalidRequest)) // a schema that is not JSON
	is.True(errors.Is(err, ports.ErrNotSent))   // refused before sending
}

// publicDetail is what the HTTP layer reads of a refusal.
type publicDetail interface {
	PublicParam() string
	PublicDetail() string
}

func TestMoreToolsThanTheUpstreamAcceptsAreRefusedBeforeSending(t *testing.T) {
	is := is.New(t)
	tools := make([]chat.Tool, 21)
	for i := range tools {
		tools[i] = chat.Tool{Name: "t" + strconv.Itoa(i)}
	}
	for _, cfg := range []pmconfig.Config{webConfig(t), tokenConfig(t)} {
		req := userText("x")
		req.Chat.Tools = tools[:20]
		_, err := postman.BuildBody(cfg, req)
		is.NoErr(err) // 20 tools, the default POSTMAN_MAX_TOOLS_UPSTREAM, are sent
		req.Chat.Tools = tools
		_, err = postman.BuildBody(cfg, req)
		is.Equal(errs.CodeOf(err), errs.UnsupportedParameter) // 21 are refused
		is.True(errors.Is(err, ports.ErrNotSent))             // before anything is sent
		var pd publicDetail
		is.True(errors.As(err, &pd))                                               // with a public param and detail
		is.Equal(pd.PublicParam(), "tools")                                        // naming the tools
		is.True(strings.Contains(pd.PublicDetail(), "21 tools"))                   // the count
		is.True(strings.Contains(pd.PublicDetail(), "20"))                         // and the limit
		is.True(strings.Contains(pd.PublicDetail(), "POSTMAN_MAX_TOOLS_UPSTREAM")) // and the setting
	}
	req := userText("x")
	req.Chat.Tools = tools
	_, err := postman.BuildBody(webConfig(t, pmconfig.EnvMaxToolsUpstream, "21"), req)
	is.NoErr(err) // the setting raises the limit
}

func TestQueryLengthIsCountedInUTF16AndCappedBeforeSending(t *testing.T) {
	is := is.New(t)
	is.Equal(postman.QueryChars("abc"), 3)
	is.Equal(postman.QueryChars("é"), 1)   // one BMP character, two UTF-8 bytes
	is.Equal(postman.QueryChars("😀"), 2)   // outside the BMP: a surrogate pair
	is.Equal(postman.QueryChars("a😀b"), 4) // like JavaScript's "a😀b".length
	for _, cfg := range []pmconfig.Config{webConfig(t), tokenConfig(t)} {
		_, err := postman.BuildBody(cfg, userText(strings.Repeat("x", 10000)))
		is.NoErr(err) // exactly POSTMAN_MAX_QUERY_CHARS is sent
		_, err = postman.BuildBody(cfg, userText(strings.Repeat("x", 9999)+"😀"))
		is.Equal(errs.CodeOf(err), errs.UpstreamQueryTooLong) // 10,001 code units are refused although 9,999 + 1 runes
		is.True(errors.Is(err, ports.ErrNotSent))             // before anything is sent
		var pd publicDetail
		is.True(errors.As(err, &pd))                          // with a public param and detail
		is.Equal(pd.PublicParam(), "messages[0]")             // naming the message, which alone is over
		is.True(strings.Contains(pd.PublicDetail(), "10001")) // the size
		is.True(strings.Contains(pd.PublicDetail(), "10000")) // and the limit
		is.True(!strings.Contains(pd.PublicDetail(), "xxxx")) // never the content
		is.True(!strings.Contains(errs.Redact(err), "xxxx"))  // not even in logs
	}
	// The transcript of a longer conversation counts as a whole.
	_, err := postman.BuildBody(webConfig(t, pmconfig.EnvMaxQueryChars, "20"), ports.UpstreamRequest{Chat: chat.Request{Model: publicModel, Messages: transcriptMessages()}})
	is.Equal(errs.CodeOf(err), errs.UpstreamQueryTooLong) // the whole transcript is the query
	// A continuation carries no query: its results are never capped by it.
	req := toolRequest("x", false)
	req.Continuation = continuation("grp-1", 1)
	req.Continuation.Results[0].Content = strings.Repeat("r", 50000)
	_, err = postman.BuildBody(webConfig(t), req)
	is.NoErr(err) // a long tool result travels in toolResponse
}

func TestContinuationsCarryAgentAndStartedFromLikeFirstTurns(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		cfg  pmconfig.Config
		cont *ports.Continuation
	}{
		{webConfig(t), continuation("grp-1", 1)},
		{webConfig(t), continuation("grp-1", 2)},
		{webConfig(t, pmconfig.EnvParallelTools, "true"), continuation("grp-1", 2)},
		{tokenConfig(t), continuation("grp-1", 2)},
		{tokenConfig(t), continuation("", 1)},
	} {
		req := toolRequest("x", true)
		req.Continuation = c.cont
		body, err := postman.BuildBody(c.cfg, req)
		is.NoErr(err)
		var b struct {
			Input map[string]json.RawMessage `json:"input"`
		}
		is.NoErr(json.Unmarshal(body, &b))
		agent, ok := b.Input["agent"]
		is.True(ok)                                              // agent is present
		is.Equal(string(agent), "null")                          // and null
		is.Equal(string(b.Input["startedFrom"]), `"CHAT_INPUT"`) // startedFrom as on a first turn
		is.Equal(string(b.Input["conversationId"]), `"conv-1"`)  // the stored conversation id
		_, seeded := b.Input["seedingMessages"]
		is.True(!seeded) // never seeding messages
	}
}

func TestParallelFlagChoosesTheContinuationForm(t *testing.T) {
	is := is.New(t)
	form := func(cfg pmconfig.Config, parallel bool, cont *ports.Continuation) (string, bool) {
		req := toolRequest("x", parallel)
		req.Continuation = cont
		body, err := postman.BuildBody(cfg, req)
		is.NoErr(err)
		var b struct {
			Input          map[string]json.RawMessage `json:"input"`
			DevModeOptions struct {
				Parallel bool `json:"isParallelToolCallingSupported"`
			} `json:"devModeOptions"`
		}
		is.NoErr(json.Unmarshal(body, &b))
		if _, ok := b.Input["toolResponses"]; ok {
			return "grouped", b.DevModeOptions.Parallel
		}
		return "flat", b.DevModeOptions.Parallel
	}
	f, p := form(webConfig(t), true, continuation("grp-1", 2))
	is.Equal([2]any{f, p}, [2]any{"flat", false}) // web_session default: flag off, flat form, whatever the client asks
	f, p = form(webConfig(t, pmconfig.EnvParallelTools, "true"), false, continuation("grp-1", 2))
	is.Equal([2]any{f, p}, [2]any{"grouped", true}) // web_session with the setting on: the array form
	f, p = form(tokenConfig(t), true, continuation("grp-1", 1))
	is.Equal([2]any{f, p}, [2]any{"grouped", true}) // access_token: the client's flag, grouped when on
	f, p = form(tokenConfig(t), false, continuation("grp-1", 1))
	is.Equal([2]any{f, p}, [2]any{"flat", false}) // access_token with the client's flag off: flat
	f, p = form(tokenConfig(t, pmconfig.EnvParallelTools, "false"), true, continuation("grp-1", 1))
	is.Equal([2]any{f, p}, [2]any{"flat", false}) // the setting wins over the client
}

func TestOnlyTheLoweredSchemaIsSentUpstream(t *testing.T) {
	is := is.New(t)
	req := toolRequest("x", true)
	original := `{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"$comment":"caller's own"}`
	lowered := `{"type":"object","properties":{"url":{"type":"string","description":"Schema notes: format: uri"}},"description":"Schema notes: $comment: caller's own"}`
	req.Chat.Tools = []chat.Tool{{Name: "fetch", Parameters: []byte(original), UpstreamParameters: []byte(lowered)}}
	body, err := postman.BuildBody(tokenConfig(t), req)
	is.NoErr(err)
	var b struct {
		ClientTools struct {
			ThirdParty map[string]struct {
				Tools []struct {
					Parameters json.RawMessage `json:"parameters"`
				} `json:"tools"`
			} `json:"thirdParty"`
		} `json:"clientTools"`
	}
	is.NoErr(json.Unmarshal(body, &b))
	is.Equal(len(b.ClientTools.ThirdParty), 1)
	for _, g := range b.ClientTools.ThirdParty {
		is.Equal(string(g.Tools[0].Parameters), lowered) // the lowered bytes, exactly
	}
	is.True(!strings.Contains(string(body), `"format"`)) // the caller's keyword never reaches the upstream

	req.Chat.Tools[0].UpstreamParameters = nil
	_, err = postman.BuildBody(tokenConfig(t), req)
	is.True(errs.Has(err, errs.InternalError)) // a schema the ingress did not lower is never sent
	is.True(errors.Is(err, ports.ErrNotSent))
}

func TestARequestOverBothBudgetsIsRefusedOnceSayingBoth(t *testing.T) {
	is := is.New(t)
	tools := make([]chat.Tool, 21)
	for i := range tools {
		tools[i] = chat.Tool{Name: "t" + strconv.Itoa(i)}
	}
	req := userText(strings.Repeat("x", 10001))
	req.Chat.Tools = tools
	req.Chat.Client = budget.ClientOpencode
	_, err := postman.BuildBody(webConfig(t, pmconfig.EnvMaxQueryChars, "10000"), req)
	is.Equal(errs.CodeOf(err), errs.UnsupportedParameter) // the tool count's code
	is.True(errors.Is(err, ports.ErrNotSent))             // nothing sent
	var pd publicDetail
	is.True(errors.As(err, &pd))
	d := pd.PublicDetail()
	is.True(strings.Contains(d, "21 tools") && strings.Contains(d, "20 (the default of POSTMAN_MAX_TOOLS_UPSTREAM)")) // the tools
	is.True(strings.Contains(d, "10001 characters") && strings.Contains(d, "10000 (set by POSTMAN_MAX_QUERY_CHARS)")) // and the query, at once
	is.True(strings.Contains(d, "docs/CLIENTS.md#opencode"))                                                          // the sender's recipe
	is.Equal(pd.PublicParam(), "messages")                                                                            // both: the request as a whole
}

func TestAContinuedConversationsOversizedMessageIsNamedByItsIndexInTheRequest(t *testing.T) {
	is := is.New(t)
	pasted := strings.Repeat("y", 12000)
	req := ports.UpstreamRequest{Chat: chat.Request{Model: publicModel, Messages: []chat.Message{{Role: chat.RoleUser, Content: &pasted}}},
		ConversationID: "conv-1", HistoryMessages: 14}
	_, err := postman.BuildBody(webConfig(t), req)
	is.Equal(errs.CodeOf(err), errs.UpstreamQueryTooLong)
	is.True(errors.Is(err, ports.ErrNotSent))
	var pd publicDetail
	is.True(errors.As(err, &pd))
	is.Equal(pd.PublicParam(), "messages[14]")                                            // its index in the client's request
	is.True(strings.Contains(pd.PublicDetail(), "messages[14] (user, 12000 characters)")) // which message and how large
	is.True(strings.Contains(pd.PublicDetail(), "continued conversation"))                // only the new messages count
}
