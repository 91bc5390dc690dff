package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// completionJSON decodes a chat.completion keeping raw values for presence
// and null checks.
type completionJSON struct {
	ID      string
	Object  string
	Created int64
	Model   string
	Choices []struct {
		Index   int
		Message struct {
			Role      string
			Content   *string
			ToolCalls []struct {
				ID       string
				Type     string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			Refusal json.RawMessage
		}
		FinishReason string          `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	}
	Usage json.RawMessage
}

func decodeCompletion(t *testing.T, body []byte) (completionJSON, map[string]json.RawMessage) {
	t.Helper()
	var c completionJSON
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("completion: %v: %s", err, body)
	}
	_ = json.Unmarshal(body, &raw)
	return c, raw
}

func TestJSONTextCompletionHasTheOpenAIShape(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "Hel"}, app.Delta{Text: "lo"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusOK)                              // a finished turn is 200
	is.Equal(rec.Header().Get("Content-Type"), "application/json") // as JSON
	c, raw := decodeCompletion(t, rec.Body.Bytes())
	is.True(strings.HasPrefix(c.ID, "chatcmpl-"))                                                // an OpenAI-style id
	is.Equal(c.Object, "chat.completion")                                                        // the object type
	is.True(c.Created > 0)                                                                       // a creation time
	is.Equal(c.Model, model)                                                                     // the requested public model id
	is.Equal(len(c.Choices), 1)                                                                  // one choice
	is.Equal(c.Choices[0].Message.Role, "assistant")                                             // from the assistant
	is.Equal(*c.Choices[0].Message.Content, "Hello")                                             // with the whole text
	is.Equal(c.Choices[0].FinishReason, "stop")                                                  // a proven stop
	is.Equal(string(c.Choices[0].Logprobs), "null")                                              // logprobs null
	is.Equal(string(c.Choices[0].Message.Refusal), "null")                                       // refusal null
	is.Equal(string(raw["usage"]), `{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}`) // no counts reported: estimated (ceil(bytes/3))
	is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")                                    // and marked as an estimate
	is.True(!strings.Contains(rec.Body.String(), "tool_calls"))                                  // no tool_calls key without calls
}

func TestJSONToolCallCompletionCarriesTheCalls(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 0, ID: "call_pmn_a", Name: "get_weather", Arguments: `{"city":`}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 1, ID: "call_pmn_b", Name: "get_time"}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 0, Arguments: `"Paris"}`}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 1, Arguments: `{}`}},
		app.Delta{Finish: app.FinishToolCalls},
	), nil))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusOK) // a finished tool-call turn is 200
	c, _ := decodeCompletion(t, rec.Body.Bytes())
	m := c.Choices[0].Message
	is.Equal(m.Content, (*string)(nil))                             // content is null when only calls were produced
	is.Equal(len(m.ToolCalls), 2)                                   // both calls
	is.Equal(m.ToolCalls[0].ID, "call_pmn_a")                       // in index order, with public ids
	is.Equal(m.ToolCalls[0].Type, "function")                       // of type function
	is.Equal(m.ToolCalls[0].Function.Name, "get_weather")           // with the name
	is.Equal(m.ToolCalls[0].Function.Arguments, `{"city":"Paris"}`) // and the fragments joined byte-for-byte
	is.Equal(m.ToolCalls[1].Function.Arguments, `{}`)               // per call
	is.Equal(c.Choices[0].FinishReason, "tool_calls")               // finish tool_calls
}

func TestJSONUsageCarriesOnlyReportedCounts(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	u := &chat.Usage{PromptTokens: i64(12), CompletionTokens: i64(3), TotalTokens: i64(15)}
	h, _ := newServer(t, returning(script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishStop, Usage: u}), nil))
	rec := post(h, withFields(""))
	_, raw := decodeCompletion(t, rec.Body.Bytes())
	is.Equal(string(raw["usage"]), `{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}`) // the upstream's counts

	is.Equal(rec.Header().Get("x-pmgate-usage"), "reported")

	partial := &chat.Usage{PromptTokens: i64(12)}
	off := func(c *httpapi.Config) { c.UsageEstimatesOff = true }
	h, _ = newServer(t, returning(script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishStop, Usage: partial}), nil), off)
	_, raw = decodeCompletion(t, post(h, withFields("")).Body.Bytes())
	is.Equal(string(raw["usage"]), `{"prompt_tokens":12}`) // estimates off: an unreported count is absent, not 0

	h, _ = newServer(t, returning(script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishStop, Usage: partial}), nil))
	rec = post(h, withFields(""))
	_, raw = decodeCompletion(t, rec.Body.Bytes())
	is.Equal(string(raw["usage"]), `{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}`) // the reported count kept, the other estimated
	is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")

	h, _ = newServer(t, returning(script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishStop}), nil), off)
	rec = post(h, withFields(""))
	_, raw = decodeCompletion(t, rec.Body.Bytes())
	is.Equal(string(raw["usage"]), "null") // estimates off, nothing reported: null, never zeros
	is.Equal(rec.Header().Get("x-pmgate-usage"), "unreported")
}

func TestJSONErrorBeforeTheEndHasNoPartialContent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "partial answer"}, errs.New(errs.UpstreamIncompleteStream)), nil))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusBadGateway) // the catalog status of the failure
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(e.Code, "upstream_incomplete_stream")           // its stable code
	is.True(!strings.Contains(rec.Body.String(), "partial")) // nothing of the partial text
	is.Equal(rec.Header().Get("x-should-retry"), "false")    // deterministic
}

func TestJSONTurnEndingWithoutAFinishIsAnInternalError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "looks complete"}), nil))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusInternalServerError) // EOF without a proven finish is never a success
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(e.Code, "internal_error")                              // internal
	is.Equal(e.Message, errs.MustEntry(errs.InternalError).Message) // with the generic message
}

func TestJSONFinishThatDisagreesWithTheCallsIsAnInternalError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishToolCalls}), nil))
	is.Equal(post(h, withFields("")).Code, http.StatusInternalServerError) // tool_calls without a call is refused
}

func TestServiceErrorIsAnsweredFromTheCatalog(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(nil, errs.New(errs.ContinuationHistoryMismatch)))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusConflict) // the catalog status
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(e.Code, "continuation_history_mismatch")                             // the stable code
	is.Equal(e.Type, "conflict_error")                                            // the catalog type
	is.Equal(e.Message, errs.MustEntry(errs.ContinuationHistoryMismatch).Message) // the catalog message
	is.Equal(e.param(), "<null>")                                                 // no param
}

func TestUncodedServiceErrorIsAGenericInternalError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, logs := newServer(t, returning(nil, errAt("dial 10.0.0.7: secret-conversation-id")))
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusInternalServerError) // an error without a code is internal
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(e.Code, "internal_error")                                  // with the internal code
	is.Equal(e.Message, errs.MustEntry(errs.InternalError).Message)     // and only the generic message
	is.True(!strings.Contains(rec.Body.String(), "secret"))             // no detail of the cause reaches the client
	is.True(!strings.Contains(logs.String(), "secret-conversation-id")) // nor the log: the cause is redacted
}
