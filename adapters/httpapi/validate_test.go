package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// refusal is one invalid request and the answer it must get.
type refusal struct {
	name   string
	body   string
	status int
	code   string
	param  string // "<null>" for none
}

// checkRefusals runs each case against a fresh server and requires the
// status, code and param, and that the service was never called.
func checkRefusals(t *testing.T, cases []refusal, mutate ...func(*httpapi.Config)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc, mutate...)
			rec := post(h, c.body)
			e := decodeError(t, rec.Body.Bytes())
			is.Equal(rec.Code, c.status)                          // status from the catalog
			is.Equal(e.Code, c.code)                              // stable code
			is.Equal(e.param(), c.param)                          // the offending param path
			is.Equal(len(e.Keys), 4)                              // message, type, param, code always present
			is.Equal(rec.Header().Get("x-should-retry"), "false") // a refusal is deterministic
			is.Equal(svc.Calls(), 0)                              // nothing reaches the service
		})
	}
}

func TestMalformedBodiesAreRefusedAsInvalidRequest(t *testing.T) {
	checkRefusals(t, []refusal{
		{"syntax error", `{"model":`, 400, "invalid_request", "<null>"},
		{"trailing data", withFields("") + `{}`, 400, "invalid_request", "<null>"},
		{"array body", `[]`, 400, "invalid_request", "<null>"},
		{"null body", `null`, 400, "invalid_request", "<null>"},
		{"missing model", `{"messages":` + basicMsg + `}`, 400, "invalid_request", "model"},
		{"numeric model", `{"model":5,"messages":` + basicMsg + `}`, 400, "invalid_request", "model"},
		{"missing messages", `{"model":"` + model + `"}`, 400, "invalid_request", "messages"},
		{"empty messages", withMessages(`[]`), 400, "invalid_request", "messages"},
		{"message not an object", withMessages(`["hi"]`), 400, "invalid_request", "messages[0]"},
		{"stream not a boolean", withFields(`,"stream":"yes"`), 400, "invalid_request", "stream"},
		{"include_usage not a boolean", withFields(`,"stream_options":{"include_usage":1}`), 400, "invalid_request", "stream_options.include_usage"},
		{"ignored field of the wrong type", withFields(`,"temperature":"hot"`), 400, "invalid_request", "temperature"},
		{"max_tokens not an integer", withFields(`,"max_tokens":1.5`), 400, "invalid_request", "max_tokens"},
		{"n zero", withFields(`,"n":0`), 400, "invalid_request", "n"},
	})
}

func TestUnknownModelIsModelNotFound(t *testing.T) {
	checkRefusals(t, []refusal{
		{"unknown model", `{"model":"gpt-4o","messages":` + basicMsg + `}`, 404, "model_not_found", "model"},
	})
}

func TestParametersThatCannotBeHonouredAreRefused(t *testing.T) {
	checkRefusals(t, []refusal{
		{"n above one", withFields(`,"n":2`), 400, "unsupported_parameter", "n"},
		{"logprobs", withFields(`,"logprobs":true`), 400, "unsupported_parameter", "logprobs"},
		{"top_logprobs", withFields(`,"top_logprobs":3`), 400, "unsupported_parameter", "top_logprobs"},
		{"logit_bias", withFields(`,"logit_bias":{"50256":-100}`), 400, "unsupported_parameter", "logit_bias"},
		{"unknown response format", withFields(`,"response_format":{"type":"yaml"}`), 400, "invalid_request", "response_format.type"},
		{"audio modality", withFields(`,"modalities":["text","audio"]`), 400, "unsupported_parameter", "modalities[1]"},
		{"audio output", withFields(`,"audio":{"voice":"alloy","format":"mp3"}`), 400, "unsupported_parameter", "audio"},
		{"prediction", withFields(`,"prediction":{"type":"content","content":"x"}`), 400, "unsupported_parameter", "prediction"},
		{"legacy functions", withFields(`,"functions":[{"name":"f"}]`), 400, "unsupported_parameter", "functions"},
		{"legacy function_call", withFields(`,"function_call":"auto"`), 400, "unsupported_parameter", "function_call"},
		{"web search", withFields(`,"web_search_options":{}`), 400, "unsupported_parameter", "web_search_options"},
	})
}

func TestDefaultValuesOfRefusableParametersAreAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withFields(`,"n":1,"logprobs":false,"top_logprobs":0,"logit_bias":{},"response_format":{"type":"text"},"modalities":["text"],"audio":null,"prediction":null,"functions":null`))
	is.Equal(rec.Code, http.StatusOK) // default values change nothing and are accepted
	is.Equal(svc.Calls(), 1)          // the request reaches the service
}

func TestIgnoredParametersAreAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withFields(`,"temperature":0.2,"top_p":1,"max_tokens":100,"max_completion_tokens":200,"presence_penalty":0,"frequency_penalty":0.5,"stop":["\n"],"seed":7,"user":"u-1","metadata":{"k":"v"},"store":false,"service_tier":"auto","reasoning_effort":"low","verbosity":"low","prompt_cache_key":"k","safety_identifier":"s"`))
	is.Equal(rec.Code, http.StatusOK) // the documented ignored fields are accepted
	is.Equal(svc.Calls(), 1)          // and the request reaches the service
}

func TestUnknownTopLevelFieldsAreIgnored(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withFields(`,"x_vendor_extension":{"a":1},"thinking":true`))
	is.Equal(rec.Code, http.StatusOK) // fields unknown to OpenAI do not break real clients
	is.Equal(svc.Calls(), 1)          // the request reaches the service
}

func TestFieldNamesAreMatchedCaseSensitively(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withFields(`,"Stream":true`))
	is.Equal(rec.Code, http.StatusOK) // "Stream" is an unknown field, not "stream"
	_, req := svc.Last()
	is.True(!req.Stream) // so the answer is not streamed
}

func TestNonJSONContentTypeIsRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	r := chatRequest(withFields(""))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusBadRequest)                          // a form body is refused
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_request") // as an invalid request
	is.Equal(svc.Calls(), 0)                                           // nothing reaches the service
}

func TestJSONContentTypeWithParametersIsAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := chatRequest(withFields(""))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	is.Equal(serve(h, r).Code, http.StatusOK) // parameters of the media type are fine
}

// paddedBody returns a valid request of exactly n bytes.
func paddedBody(t *testing.T, n int) string {
	t.Helper()
	base := withFields(`,"user":""`)
	pad := n - len(base)
	if pad < 0 {
		t.Fatalf("body limit %d below the minimal request", n)
	}
	return withFields(`,"user":"` + strings.Repeat("a", pad) + `"`)
}

func TestBodyExactlyAtTheLimitIsAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc, func(c *httpapi.Config) { c.MaxBodyBytes = 1024 })
	body := paddedBody(t, 1024)
	is.Equal(len(body), 1024)                   // the body is exactly at the limit
	is.Equal(post(h, body).Code, http.StatusOK) // and accepted
	is.Equal(svc.Calls(), 1)                    // it reaches the service
}

func TestBodyOneByteOverTheLimitIsRefusedWith413(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc, func(c *httpapi.Config) { c.MaxBodyBytes = 1024 })
	rec := post(h, paddedBody(t, 1025))
	is.Equal(rec.Code, http.StatusRequestEntityTooLarge)                 // one byte over is 413
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "request_too_large") // with the stable code
	is.Equal(svc.Calls(), 0)                                             // nothing reaches the service
}

// countingReader counts how much of a body was read.
type countingReader struct {
	r *strings.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestChunkedBodyOverTheLimitIsNotReadPastIt(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc, func(c *httpapi.Config) { c.MaxBodyBytes = 1024 })
	body := &countingReader{r: strings.NewReader(paddedBody(t, 100_000))}
	r := chatRequest("")
	r.Body = readCloser{body}
	r.ContentLength = -1 // unknown length, as with chunked encoding
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusRequestEntityTooLarge) // the limit holds without Content-Length
	is.True(body.n <= 1024+1)                            // reading stops at the limit (one byte of look-ahead)
	is.Equal(svc.Calls(), 0)                             // nothing reaches the service
}

func TestDeclaredLengthOverTheLimitIsRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.MaxBodyBytes = 1024 })
	body := &countingReader{r: strings.NewReader(paddedBody(t, 2048))}
	r := chatRequest("")
	r.Body = readCloser{body}
	r.ContentLength = 2048
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusRequestEntityTooLarge) // a declared length over the limit is 413
	is.Equal(body.n, 0)                                  // and nothing is read
}

type readCloser struct{ *countingReader }

func (readCloser) Close() error { return nil }

func TestMessageRefusalsNameTheParamPath(t *testing.T) {
	checkRefusals(t, []refusal{
		{"missing role", withMessages(`[{"content":"hi"}]`), 400, "invalid_request", "messages[0].role"},
		{"unknown role", withMessages(`[{"role":"robot","content":"hi"}]`), 400, "invalid_request", "messages[0].role"},
		{"function role", withMessages(`[{"role":"user","content":"hi"},{"role":"function","name":"f","content":"x"}]`), 400, "unsupported_parameter", "messages[1].role"},
		{"user without content", withMessages(`[{"role":"user"}]`), 400, "invalid_request", "messages[0].content"},
		{"numeric content", withMessages(`[{"role":"user","content":5}]`), 400, "invalid_request", "messages[0].content"},
		{"image part", withMessages(`[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]`), 400, "unsupported_parameter", "messages[1].content[1].type"},
		{"input_audio part", withMessages(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"","format":"wav"}}]}]`), 400, "unsupported_parameter", "messages[0].content[0].type"},
		{"file part", withMessages(`[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]`), 400, "unsupported_parameter", "messages[0].content[0].type"},
		{"refusal part", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]`), 400, "unsupported_parameter", "messages[1].content[0].type"},
		{"unknown part type", withMessages(`[{"role":"user","content":[{"type":"video"}]}]`), 400, "invalid_request", "messages[0].content[0].type"},
		{"text part without text", withMessages(`[{"role":"user","content":[{"type":"text"}]}]`), 400, "invalid_request", "messages[0].content[0].text"},
		{"assistant with nothing", withMessages(`[{"role":"user","content":"a"},{"role":"assistant"}]`), 400, "invalid_request", "messages[1].content"},
		{"non-string arguments", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"x":1}}}]}]`), 400, "invalid_request", "messages[1].tool_calls[0].function.arguments"},
		{"tool call without id", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]`), 400, "invalid_request", "messages[1].tool_calls[0].id"},
		{"custom tool call", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"custom","custom":{"name":"f","input":""}}]}]`), 400, "unsupported_parameter", "messages[1].tool_calls[0].type"},
		{"assistant audio", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","content":"x","audio":{"id":"aud_1"}}]`), 400, "unsupported_parameter", "messages[1].audio"},
		{"tool calls on a user message", withMessages(`[{"role":"user","content":"a","tool_calls":[]}]`), 400, "invalid_request", "messages[0].tool_calls"},
		{"tool message without tool_call_id", withMessages(`[{"role":"user","content":"a"},{"role":"tool","content":"r"}]`), 400, "invalid_request", "messages[1].tool_call_id"},
		{"tool result over the limit", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"` + strings.Repeat("r", 1025) + `"}]`), 413, "request_too_large", "messages[2].content"},
	})
}

// gatewayWithoutCorrelation serves the handler in front of the real use cases
// with CORRELATION_ENABLED=false (the check lives in app), over a fake
// upstream that answers every query with text.
func gatewayWithoutCorrelation(t *testing.T) (http.Handler, *porttest.Upstream) {
	t.Helper()
	up := &porttest.Upstream{Respond: func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("conv-1", "ok")}
	}}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: false}, up, nil, porttest.NewClock(porttest.T0), &porttest.IDs{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	h, _ := newServer(t, gw)
	return h, up
}

func TestToolResultContinuationIsRefusedWhenCorrelationIsDisabled(t *testing.T) {
	for _, c := range []struct {
		name, path, body, param string
	}{
		{"chat", "/v1/chat/completions", withMessages(`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]`), "messages"},
		{"chat with tools", "/v1/chat/completions", `{"model":"` + model + `","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, "messages"},
		{"responses", "/v1/responses", `{"model":"` + model + `","input":[{"role":"user","content":"a"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r"}]}`, "input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			h, up := gatewayWithoutCorrelation(t)
			r := chatRequest(c.body)
			r.URL.Path = c.path
			rec := serve(h, r)
			e := decodeError(t, rec.Body.Bytes())
			is.Equal(rec.Code, 400)                                                             // status from the catalog
			is.Equal(e.Code, "unsupported_tool_result_continuation")                            // stable code
			is.Equal(e.param(), c.param)                                                        // the API's conversation field
			is.Equal(e.Message, errs.MustEntry(errs.UnsupportedToolResultContinuation).Message) // the catalog message alone
			is.Equal(len(e.Keys), 4)                                                            // message, type, param, code always present
			is.Equal(rec.Header().Get("x-should-retry"), "false")                               // a refusal is deterministic
			is.Equal(len(up.Requests()), 0)                                                     // nothing reaches the upstream
		})
	}
}

func TestToolResultsEarlierInTheHistoryAreNotAContinuation(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, up := gatewayWithoutCorrelation(t)
	rec := post(h, withMessages(`[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}]`))
	is.Equal(rec.Code, http.StatusOK) // a finished tool loop followed by a user turn is a fresh turn
	is.Equal(len(up.Requests()), 1)   // and reaches the upstream
}

func TestToolResultContinuationIsPassedOnWhenCorrelationIsEnabled(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withMessages(`[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r1"},{"type":"text","text":"r2"}]}]`))
	is.Equal(rec.Code, http.StatusOK) // the continuation is served
	_, req := svc.Last()
	is.Equal(len(req.Messages), 3)                                                                    // every message is passed on
	is.Equal(req.Messages[1].Content, (*string)(nil))                                                 // "" next to tool calls is normalized to nil
	is.Equal(req.Messages[1].ToolCalls, []chat.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}}) // the tool calls keep their exact arguments
	is.Equal(req.Messages[2].ToolCallID, "c1")                                                        // the result names its call
	is.Equal(*req.Messages[2].Content, "r1r2")                                                        // result text parts are joined
}

func TestTextPartsAreJoinedWithoutSeparator(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withMessages(`[{"role":"user","content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world","cache_control":{"type":"ephemeral"}}]}]`))
	is.Equal(rec.Code, http.StatusOK) // text parts are accepted
	_, req := svc.Last()
	is.Equal(*req.Messages[0].Content, "Hello, world") // and joined with ""
}

func TestMessagesAreNormalized(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withMessages(`[
		{"role":"system","content":"s","name":"sys"},
		{"role":"developer","content":"d"},
		{"role":"user","content":"u","name":"alice"},
		{"role":"assistant","content":null,"refusal":null,"name":"bot","annotations":[],"audio":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":null},
		{"role":"user","content":""}]`))
	is.Equal(rec.Code, http.StatusOK) // every role and the optional assistant fields are accepted
	_, req := svc.Last()
	empty, s, d, u := "", "s", "d", "u"
	want := []chat.Message{
		{Role: chat.RoleSystem, Content: &s, Name: "sys"},
		{Role: chat.RoleDeveloper, Content: &d},
		{Role: chat.RoleUser, Content: &u, Name: "alice"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		{Role: chat.RoleTool, ToolCallID: "c1"},
		{Role: chat.RoleUser, Content: &empty},
	}
	is.Equal(req.Messages, want)                                         // names kept on system/user, dropped on assistant; null content is nil
	is.Equal(req.Model, model)                                           // the public model id is passed on
	is.True(req.ParallelToolCalls)                                       // parallel tool calls default to true
	is.Equal(req.ToolChoice, chat.ToolChoice{Mode: chat.ToolChoiceAuto}) // tool_choice defaults to auto
}
