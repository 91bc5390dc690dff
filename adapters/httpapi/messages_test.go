package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// msgRequest returns an authenticated Messages POST of body (x-api-key, as
// Claude Code sends with ANTHROPIC_API_KEY), with ?beta=true.
func msgRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/messages?beta=true", strings.NewReader(body))
	r.Header.Set("x-api-key", apiKey)
	r.Header.Set("anthropic-version", "2023-06-01")
	r.Header.Set("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,some-future-beta")
	r.Header.Set("Content-Type", "application/json")
	return r
}

// msgBody is a Messages request with the given messages and extra fields.
func msgBody(msgs, extra string) string {
	return `{"model":"` + model + `","max_tokens":1024,"messages":` + msgs + extra + `}`
}

const userHi = `[{"role":"user","content":"hi"}]`

// anthError is the decoded Anthropic error body.
type anthError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string  `json:"type"`
		Message string  `json:"message"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func decodeAnth(t *testing.T, b []byte) anthError {
	t.Helper()
	var e anthError
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("not an Anthropic error: %v: %s", err, b)
	}
	return e
}

func TestMessagesAnswersTextAsJSON(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "Hello"}, app.Delta{Text: " world"}, app.Delta{Finish: app.FinishStop}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, msgRequest(msgBody(userHi, `,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.1; cch=abc;"},{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]`)))
	is.Equal(rec.Code, 200)
	var m struct {
		ID, Type, Role, Model string
		Content               []map[string]any
		StopReason            string  `json:"stop_reason"`
		StopSequence          *string `json:"stop_sequence"`
		Usage                 map[string]int64
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &m))
	_, err := anthropicsse.CheckMessage(rec.Body.Bytes())
	is.NoErr(err)
	is.True(strings.HasPrefix(m.ID, "msg_"))
	is.Equal(m.Type, "message")
	is.Equal(m.Role, "assistant")
	is.Equal(m.Model, model)
	is.Equal(len(m.Content), 1)
	is.Equal(m.Content[0]["type"], "text")
	is.Equal(m.Content[0]["text"], "Hello world")
	is.Equal(m.StopReason, "end_turn")
	is.True(m.StopSequence == nil)
	is.True(m.Usage["input_tokens"] > 0)                      // an estimate, never 0
	is.Equal(m.Usage["output_tokens"], int64(4))              // ceil(11 bytes / 3)
	is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated") // and marked as one
	_, req := svc.Last()
	is.Equal(req.API, "messages")
	is.Equal(len(req.Messages), 2)
	is.Equal(req.Messages[0].Role, chat.RoleSystem)
	is.Equal(*req.Messages[0].Content, "Be brief.") // the attribution block is gone
}

func TestMessagesStreamsTextInTheMessagesGrammar(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "Hel"}, app.Delta{Text: "lo"}, app.Delta{Finish: app.FinishStop}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`)))
	is.Equal(rec.Code, 200)
	is.Equal(rec.Header().Get("Content-Type"), "text/event-stream")
	is.True(!strings.Contains(rec.Body.String(), "[DONE]"))
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err) // the strict grammar
	is.Equal(res.StopReason, "end_turn")
	is.Equal(res.Text(), "Hello")
	is.True(strings.HasPrefix(res.MessageID, "msg_"))
	is.True(res.InputTokens > 0) // message_start carries the input estimate
}

func TestMessagesAcceptsEitherCredentialHeader(t *testing.T) {
	h, _ := newServer(t, &fakeService{})
	for name, set := range map[string]func(r *http.Request){
		"x-api-key": func(r *http.Request) {},
		"bearer":    func(r *http.Request) { r.Header.Del("x-api-key"); r.Header.Set("Authorization", "Bearer "+apiKey) },
		"both":      func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+apiKey) },
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			r := msgRequest(msgBody(userHi, ""))
			set(r)
			is.Equal(serve(h, r).Code, 200)
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		is := is.New(t)
		r := msgRequest(msgBody(userHi, ""))
		r.Header.Set("x-api-key", "nope-nope-nope")
		rec := serve(h, r)
		is.Equal(rec.Code, 401)
		e := decodeAnth(t, rec.Body.Bytes())
		is.Equal(e.Type, "error")
		is.Equal(e.Error.Type, "authentication_error")
		is.Equal(e.Error.Code, "invalid_api_key")
		is.Equal(rec.Header().Get("x-pmgate-error-code"), "invalid_api_key")
		is.Equal(rec.Header().Get("x-should-retry"), "false")
		is.True(e.RequestID != "")
	})
}

func TestMessagesErrorsUseAnthropicStatusesAndTypes(t *testing.T) {
	cases := []struct {
		code   errs.Code
		status int
		typ    string
	}{
		{errs.InvalidRequest, 400, "invalid_request_error"},
		{errs.ModelNotFound, 404, "not_found_error"},
		{errs.RequestTooLarge, 413, "request_too_large"},
		{errs.ConcurrencyLimitExceeded, 429, "rate_limit_error"},
		{errs.ContinuationHistoryMismatch, 400, "invalid_request_error"}, // deterministic: never 409, which is retried
		{errs.ToolCallAlreadyConsumed, 400, "invalid_request_error"},
		{errs.UnknownToolCall, 404, "not_found_error"},
		{errs.UpstreamQueryTooLong, 400, "invalid_request_error"},
		{errs.UpstreamFailure, 500, "api_error"}, // 502: Anthropic pairs api_error with 500
		{errs.UpstreamRateLimited, 429, "rate_limit_error"},
		{errs.UpstreamRequestRejected, 400, "invalid_request_error"}, // 422
		{errs.RequestTimeout, 504, "timeout_error"},                  // 408
		{errs.UpstreamTimeout, 504, "timeout_error"},
		{errs.CorrelationCapacityExceeded, 529, "overloaded_error"}, // 503
		{errs.InternalError, 500, "api_error"},
	}
	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(nil, errs.New(c.code)))
			rec := serve(h, msgRequest(msgBody(userHi, "")))
			is.Equal(rec.Code, c.status)
			_, err := anthropicsse.CheckError(rec.Code, rec.Body.Bytes())
			is.NoErr(err) // a status/type pair Anthropic uses
			e := decodeAnth(t, rec.Body.Bytes())
			is.Equal(e.Type, "error")
			is.Equal(e.Error.Type, c.typ)
			is.Equal(e.Error.Code, string(c.code))
			is.Equal(rec.Header().Get("x-pmgate-error-code"), string(c.code))
			ent := errs.MustEntry(c.code)
			is.Equal(rec.Header().Get("x-should-retry") == "false", !ent.Retryable)
		})
	}
}

func TestMessagesRoutesAnswerInTheAnthropicShape(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodGet, "/v1/messages", nil)
	r.Header.Set("x-api-key", apiKey)
	rec := serve(h, r)
	is.Equal(rec.Code, 400) // Anthropic pairs invalid_request_error with 400 only
	is.Equal(rec.Header().Get("Allow"), "POST")
	is.Equal(decodeAnth(t, rec.Body.Bytes()).Error.Type, "invalid_request_error")
	r = httptest.NewRequest(http.MethodPost, "/v1/messages/batches", nil)
	r.Header.Set("x-api-key", apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 404)
	is.Equal(decodeAnth(t, rec.Body.Bytes()).Error.Type, "not_found_error")
}

func TestCountTokensIsAnEstimateThatIsNeverZero(t *testing.T) {
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	count := func(h http.Handler, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/messages/count_tokens?beta=true", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+apiKey)
		r.Header.Set("Content-Type", "application/json")
		return serve(h, r)
	}
	small := count(h, `{"model":"`+model+`","messages":`+userHi+`}`) // no max_tokens, as count_tokens is sent
	is.Equal(small.Code, 200)
	is.Equal(small.Header().Get("x-pmgate-usage"), "estimated")
	var a, b struct {
		InputTokens int64 `json:"input_tokens"`
	}
	is.NoErr(json.Unmarshal(small.Body.Bytes(), &a))
	is.True(a.InputTokens > 0)
	big := count(h, `{"model":"`+model+`","system":"`+strings.Repeat("s", 300)+`","messages":`+userHi+`,"tools":[{"name":"f","input_schema":{"type":"object"}}]}`)
	is.NoErr(json.Unmarshal(big.Body.Bytes(), &b))
	is.True(b.InputTokens >= a.InputTokens+100) // system and tools count too
	is.Equal(svc.Calls(), 0)                    // nothing reached the upstream

	off, _ := newServer(t, svc, func(c *httpapi.Config) { c.UsageEstimatesOff = true })
	rec := count(off, `{"model":"`+model+`","messages":`+userHi+`}`)
	is.Equal(rec.Code, 404) // nothing honest to count: Claude Code estimates locally
	is.Equal(decodeAnth(t, rec.Body.Bytes()).Error.Type, "not_found_error")
}

func TestMessagesStreamUsageIsMarkedAndTheOffSettingShowsOnlyReportedCounts(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "abc"}, app.Delta{Finish: app.FinishStop}), nil),
		func(c *httpapi.Config) { c.UsageEstimatesOff = true })
	rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`)))
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(rec.Header().Get("x-pmgate-usage"), "unreported")
	is.Equal(res.InputTokens, int64(0))
	is.Equal(res.OutputTokens, int64(0))

	u := &chat.Usage{PromptTokens: i64(40), CompletionTokens: i64(7)}
	h, _ = newServer(t, returning(script(app.Delta{Text: "abc"}, app.Delta{Finish: app.FinishStop, Usage: u}), nil))
	rec = serve(h, msgRequest(msgBody(userHi, "")))
	res, err = anthropicsse.CheckMessage(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(rec.Header().Get("x-pmgate-usage"), "reported") // the upstream's counts, as they are
	is.Equal(res.InputTokens, int64(40))
	is.Equal(res.OutputTokens, int64(7))
}
