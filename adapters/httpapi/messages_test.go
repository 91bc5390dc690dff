package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
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

// frame is one SSE frame of a Messages stream.
type frame struct {
	event string
	data  map[string]any
}

// frames parses a Messages stream strictly: every frame has an event line
// and one data line whose type equals it, and ends with a blank line.
func frames(t *testing.T, body string) []frame {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var out []frame
	for _, raw := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		sc := bufio.NewScanner(strings.NewReader(raw))
		var f frame
		lines := 0
		for sc.Scan() {
			line := sc.Text()
			lines++
			switch {
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f.data); err != nil {
					t.Fatalf("data is not JSON: %q", line)
				}
			default:
				t.Fatalf("unexpected line %q", line)
			}
		}
		if lines != 2 || f.event == "" || f.data == nil || f.data["type"] != f.event {
			t.Fatalf("bad frame %q", raw)
		}
		out = append(out, f)
	}
	return out
}

// checkGrammar holds a whole successful stream to the Messages grammar:
// message_start first and once (msg_ id, usage), blocks in index order one
// at a time, deltas of the open block's kind, message_delta with usage, then
// message_stop last. It returns the stop reason, the text and the tool
// inputs.
func checkGrammar(t *testing.T, fs []frame) (stop string, text string, inputs []string) {
	t.Helper()
	if len(fs) < 3 || fs[0].event != "message_start" || fs[len(fs)-1].event != "message_stop" {
		t.Fatalf("stream must open with message_start and end with message_stop: %v", events(fs))
	}
	msg := fs[0].data["message"].(map[string]any)
	if id, _ := msg["id"].(string); !strings.HasPrefix(id, "msg_") {
		t.Fatalf("message id %q", id)
	}
	if _, ok := msg["usage"].(map[string]any); !ok {
		t.Fatalf("message_start without usage")
	}
	next, open, kind := 0, -1, ""
	var tb strings.Builder
	var cur strings.Builder
	sawDelta := false
	uses := 0
	for _, f := range fs[1 : len(fs)-1] {
		switch f.event {
		case "ping":
		case "content_block_start":
			if open >= 0 || sawDelta {
				t.Fatalf("block started while another is open or after message_delta")
			}
			if int(f.data["index"].(float64)) != next {
				t.Fatalf("block index %v, want %d", f.data["index"], next)
			}
			cb := f.data["content_block"].(map[string]any)
			kind = cb["type"].(string)
			if kind == "tool_use" {
				uses++
				if in, _ := json.Marshal(cb["input"]); string(in) != "{}" {
					t.Fatalf("tool_use starts with input %s", in)
				}
				if id, _ := cb["id"].(string); !strings.HasPrefix(id, "toolu_") {
					t.Fatalf("tool id %q", id)
				}
				cur.Reset()
			}
			open = next
			next++
		case "content_block_delta":
			if int(f.data["index"].(float64)) != open {
				t.Fatalf("delta for index %v, open %d", f.data["index"], open)
			}
			d := f.data["delta"].(map[string]any)
			switch {
			case kind == "text" && d["type"] == "text_delta":
				tb.WriteString(d["text"].(string))
			case kind == "tool_use" && d["type"] == "input_json_delta":
				cur.WriteString(d["partial_json"].(string))
			default:
				t.Fatalf("delta %v in a %s block", d["type"], kind)
			}
		case "content_block_stop":
			if int(f.data["index"].(float64)) != open {
				t.Fatalf("stop for index %v, open %d", f.data["index"], open)
			}
			if kind == "tool_use" {
				if !json.Valid([]byte(cur.String())) {
					t.Fatalf("tool input is not JSON: %q", cur.String())
				}
				inputs = append(inputs, cur.String())
			}
			open = -1
		case "message_delta":
			if open >= 0 {
				t.Fatalf("message_delta with an open block")
			}
			if _, ok := f.data["usage"].(map[string]any); !ok {
				t.Fatalf("message_delta without usage")
			}
			stop = f.data["delta"].(map[string]any)["stop_reason"].(string)
			sawDelta = true
		default:
			t.Fatalf("unexpected event %q", f.event)
		}
	}
	if !sawDelta {
		t.Fatalf("no message_delta")
	}
	if (uses > 0) != (stop == "tool_use") && stop != "stop_sequence" {
		t.Fatalf("stop reason %q with %d tool_use blocks", stop, uses)
	}
	return stop, tb.String(), inputs
}

func events(fs []frame) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.event
	}
	return out
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
	stop, text, _ := checkGrammar(t, frames(t, rec.Body.String()))
	is.Equal(stop, "end_turn")
	is.Equal(text, "Hello")
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
		{errs.UpstreamFailure, 502, "api_error"},
		{errs.UpstreamTimeout, 504, "timeout_error"},
		{errs.CorrelationCapacityExceeded, 503, "overloaded_error"},
		{errs.InternalError, 500, "api_error"},
	}
	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(nil, errs.New(c.code)))
			rec := serve(h, msgRequest(msgBody(userHi, "")))
			is.Equal(rec.Code, c.status)
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
	is.Equal(rec.Code, 405)
	is.Equal(decodeAnth(t, rec.Body.Bytes()).Error.Type, "invalid_request_error")
	r = httptest.NewRequest(http.MethodPost, "/v1/messages/batches", nil)
	r.Header.Set("x-api-key", apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 404)
	is.Equal(decodeAnth(t, rec.Body.Bytes()).Error.Type, "not_found_error")
}

// ctxTurn blocks until the context ends.
func ctxTurn() *fakeTurn {
	return newTurn(func(ctx context.Context) (app.Delta, error) {
		<-ctx.Done()
		return app.Delta{}, ctx.Err()
	})
}
