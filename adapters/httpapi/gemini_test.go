package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// gemRequest returns a Gemini POST of body to method, authenticated with
// x-goog-api-key as @google/genai sends it.
func gemRequest(method, query, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1beta/models/"+model+":"+method+query, strings.NewReader(body))
	r.Header.Set("x-goog-api-key", apiKey)
	r.Header.Set("Content-Type", "application/json")
	return r
}

func gemStreamReq(body string) *http.Request {
	return gemRequest("streamGenerateContent", "?alt=sse", body)
}

const gemHi = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

// gemError is the decoded Gemini error body.
type gemError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type     string            `json:"@type"`
			Reason   string            `json:"reason"`
			Metadata map[string]string `json:"metadata"`
		} `json:"details"`
	} `json:"error"`
}

func decodeGem(t *testing.T, b []byte) gemError {
	t.Helper()
	var e gemError
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == 0 {
		t.Fatalf("not a Gemini error: %v: %s", err, b)
	}
	return e
}

func (e gemError) reason() string {
	if len(e.Error.Details) == 0 {
		return ""
	}
	return e.Error.Details[0].Reason
}

func (e gemError) param() string {
	if len(e.Error.Details) == 0 {
		return ""
	}
	return e.Error.Details[0].Metadata["param"]
}

// gemResponse is a GenerateContentResponse as a client reads it.
type gemResponse struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     int64 `json:"promptTokenCount"`
		CandidatesTokenCount int64 `json:"candidatesTokenCount"`
		TotalTokenCount      int64 `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	Error *gemError `json:"-"`
}

// gemStreamResult is a checked alt=sse stream.
type gemStreamResult struct {
	chunks   []gemResponse
	text     string
	finish   string
	calls    []string // id:name:args
	errEvent *gemError
	tail     *gemError // the raw error object after the last event
}

// checkGemStream reads an alt=sse body and checks its grammar: every event
// one data line of JSON; a finishReason only in the last chunk and only
// once; function calls only in the chunk with the finishReason; an error
// event only last, never with a finishReason before it, and followed by
// the same error object as a raw tail that is no event (what the SDK
// gemini-cli bundles reads as an error).
func checkGemStream(t *testing.T, body []byte) gemStreamResult {
	t.Helper()
	var res gemStreamResult
	if i := bytes.LastIndex(body, []byte("\n\n")); i >= 0 && i+2 < len(body) {
		tail := body[i+2:]
		e := decodeGem(t, tail)
		res.tail = &e
		body = body[:i+2]
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var events []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "data: "):
			events = append(events, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("not an alt=sse line: %q", line)
		}
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("the stream does not end with a whole event: %q", body)
	}
	for i, ev := range events {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal([]byte(ev), &probe); err != nil {
			t.Fatalf("event %d is not JSON: %s", i, ev)
		}
		if _, ok := probe["error"]; ok {
			if i != len(events)-1 {
				t.Fatalf("an error event before the end")
			}
			e := decodeGem(t, []byte(ev))
			res.errEvent = &e
			continue
		}
		if res.finish != "" {
			t.Fatalf("an event after the finishReason")
		}
		var c gemResponse
		if err := json.Unmarshal([]byte(ev), &c); err != nil || len(c.Candidates) != 1 {
			t.Fatalf("event %d is not one candidate: %s", i, ev)
		}
		cand := c.Candidates[0]
		for _, p := range cand.Content.Parts {
			if p.Text != nil {
				res.text += *p.Text
			}
			if f := p.FunctionCall; f != nil {
				if cand.FinishReason == "" {
					t.Fatalf("a function call before the proven end")
				}
				res.calls = append(res.calls, f.ID+":"+f.Name+":"+string(f.Args))
			}
		}
		if cand.FinishReason != "" && c.UsageMetadata == nil {
			t.Fatalf("the last chunk has no usageMetadata")
		}
		res.finish = cand.FinishReason
		res.chunks = append(res.chunks, c)
	}
	if res.errEvent != nil && res.finish != "" {
		t.Fatalf("an error after a finishReason")
	}
	if (res.errEvent == nil) != (res.tail == nil) || res.tail != nil && res.tail.reason() != res.errEvent.reason() {
		t.Fatalf("an error event without the same raw tail, or a tail without the event")
	}
	return res
}

func TestGeminiAnswersTextAsJSON(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "Hello"}, app.Delta{Text: " world"}, app.Delta{Finish: app.FinishStop}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, gemRequest("generateContent", "", gemHi))
	is.Equal(rec.Code, 200)
	var resp gemResponse
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &resp))
	is.Equal(len(resp.Candidates), 1)
	is.Equal(*resp.Candidates[0].Content.Parts[0].Text, "Hello world")
	is.Equal(resp.Candidates[0].Content.Role, "model")
	is.Equal(resp.Candidates[0].FinishReason, "STOP")
	is.True(resp.UsageMetadata.PromptTokenCount > 0) // estimated, and said so
	is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")
	_, req := svc.Last()
	is.Equal(req.API, "gemini")
	is.Equal(req.Model, model)
	is.True(!req.Stream)
	is.Equal(len(req.Messages), 1)
	is.Equal(*req.Messages[0].Content, "hi")
}

func TestGeminiStreamsTextThenOneFinishChunk(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "Hel"}, app.Delta{Text: "lo"}, app.Delta{Finish: app.FinishStop}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, gemStreamReq(gemHi))
	is.Equal(rec.Code, 200)
	is.Equal(rec.Header().Get("Content-Type"), "text/event-stream")
	res := checkGemStream(t, rec.Body.Bytes())
	is.Equal(res.text, "Hello")
	is.Equal(res.finish, "STOP")
	is.Equal(len(res.chunks), 3)
	_, req := svc.Last()
	is.True(req.Stream)
}

const gemTools = `,"tools":[{"functionDeclarations":[{"name":"read_file","description":"read a file",` +
	`"parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}]}]`

func TestGeminiStreamsFunctionCallsWholeOnlyInTheLastChunk(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "Let me look."},
		toolDelta(0, "call_a", "read_file", `{"path":`), toolDelta(0, "", "", `"a.go"}`),
		toolDelta(1, "call_b", "read_file", `{"path":"b.go"}`),
		app.Delta{Finish: app.FinishToolCalls}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, gemStreamReq(`{"contents":[{"role":"user","parts":[{"text":"read"}]}]`+gemTools+`}`))
	is.Equal(rec.Code, 200)
	res := checkGemStream(t, rec.Body.Bytes())
	is.Equal(res.text, "Let me look.")
	is.Equal(res.finish, "STOP")
	is.Equal(res.calls, []string{`call_a:read_file:{"path":"a.go"}`, `call_b:read_file:{"path":"b.go"}`})
	_, req := svc.Last()
	is.Equal(len(req.Tools), 1)
	is.Equal(req.Tools[0].Name, "read_file")
	is.True(len(req.Tools[0].UpstreamParameters) > 0) // lowered like every tool
}

func TestGeminiJSONFunctionCall(t *testing.T) {
	is := is.New(t)
	svc := returning(script(toolDelta(0, "call_a", "read_file", `{"path":"a.go"}`), app.Delta{Finish: app.FinishToolCalls}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, gemRequest("generateContent", "", `{"contents":[{"role":"user","parts":[{"text":"read"}]}]`+gemTools+`}`))
	is.Equal(rec.Code, 200)
	var resp gemResponse
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &resp))
	parts := resp.Candidates[0].Content.Parts
	is.Equal(len(parts), 1)
	is.Equal(parts[0].FunctionCall.ID, "call_a")
	is.Equal(string(parts[0].FunctionCall.Args), `{"path":"a.go"}`)
	is.Equal(resp.Candidates[0].FinishReason, "STOP")
}

// A broken turn after the headers is one error event that @google/genai
// throws (an object with a numeric code in 400..599), never a finishReason
// and never a function call, whatever was shown before.
func TestGeminiStreamFailureAfterHeadersIsOneErrorEvent(t *testing.T) {
	for _, code := range []errs.Code{errs.UpstreamFailure, errs.UpstreamIncompleteStream, errs.UpstreamCompletionAmbiguous,
		errs.UpstreamTimeout, errs.UpstreamUnverifiedEventShape} {
		t.Run(string(code), func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(script(app.Delta{Text: "partial"}, toolDelta(0, "call_a", "read_file", `{"path":"a.go"}`),
				errs.New(code)), nil))
			rec := serve(h, gemStreamReq(`{"contents":[{"role":"user","parts":[{"text":"read"}]}]`+gemTools+`}`))
			is.Equal(rec.Code, 200)
			res := checkGemStream(t, rec.Body.Bytes())
			is.True(res.errEvent != nil)
			is.Equal(res.finish, "")
			is.Equal(len(res.calls), 0) // the call shown never: gemini-cli would run it
			is.True(res.errEvent.Error.Code >= 400 && res.errEvent.Error.Code < 600)
			is.True(res.errEvent.Error.Status != "")
			is.Equal(res.errEvent.reason(), string(code)) // the stable code in the frame
		})
	}
}

func TestGeminiStreamFailureBeforeOutputIsAPlainError(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, returning(script(errs.New(errs.UpstreamFailure)), nil))
	rec := serve(h, gemStreamReq(gemHi))
	is.True(rec.Code >= 500)
	e := decodeGem(t, rec.Body.Bytes())
	is.Equal(e.reason(), string(errs.UpstreamFailure))
	is.Equal(rec.Header().Get("x-pmgate-error-code"), string(errs.UpstreamFailure))
}

func TestGeminiStreamWithoutAltSSEIsRefused(t *testing.T) {
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := serve(h, gemRequest("streamGenerateContent", "", gemHi))
	is.Equal(rec.Code, 400)
	e := decodeGem(t, rec.Body.Bytes())
	is.Equal(e.Error.Status, "INVALID_ARGUMENT")
	is.Equal(e.param(), "alt")
	is.True(strings.Contains(e.Error.Message, "alt=sse"))
	is.Equal(svc.Calls(), 0)
}

func TestGeminiEnforcesStopSequences(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "one EN"}, app.Delta{Text: "D two"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := serve(h, gemStreamReq(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"stopSequences":["END"]}}`))
	res := checkGemStream(t, rec.Body.Bytes())
	is.Equal(res.text, "one ")
	is.Equal(res.finish, "STOP")
}

func TestGeminiNeverAnswersAnEmptyTurn(t *testing.T) {
	for _, q := range []string{"generateContent", "streamGenerateContent?alt=sse"} {
		is := is.New(t)
		h, _ := newServer(t, returning(script(app.Delta{Finish: app.FinishStop}), nil))
		method, query, _ := strings.Cut(q, "?")
		if query != "" {
			query = "?" + query
		}
		rec := serve(h, gemRequest(method, query, gemHi))
		is.True(rec.Code >= 500)
		is.Equal(decodeGem(t, rec.Body.Bytes()).reason(), string(errs.UpstreamEmptyStream))
	}
}

// The three key forms are accepted; a wrong key is refused in the Gemini
// shape, UNAUTHENTICATED.
func TestGeminiAcceptsEachKeyForm(t *testing.T) {
	forms := map[string]func(r *http.Request){
		"x-goog-api-key": func(r *http.Request) { r.Header.Set("x-goog-api-key", apiKey) },
		"bearer":         func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+apiKey) },
		"query":          func(r *http.Request) { r.URL.RawQuery = "alt=sse&key=" + apiKey },
	}
	for name, set := range forms {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, &fakeService{})
			r := httptest.NewRequest(http.MethodPost, "/v1beta/models/"+model+":streamGenerateContent?alt=sse", strings.NewReader(gemHi))
			r.Header.Set("Content-Type", "application/json")
			set(r)
			rec := serve(h, r)
			is.Equal(rec.Code, 200)
			is.Equal(checkGemStream(t, rec.Body.Bytes()).text, "ok")
		})
	}
	t.Run("wrong", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, &fakeService{})
		r := gemRequest("generateContent", "", gemHi)
		r.Header.Set("x-goog-api-key", "not-the-key")
		rec := serve(h, r)
		is.Equal(rec.Code, 401)
		e := decodeGem(t, rec.Body.Bytes())
		is.Equal(e.Error.Status, "UNAUTHENTICATED")
		is.Equal(e.reason(), string(errs.InvalidAPIKey))
	})
	t.Run("not on the other APIs", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, &fakeService{})
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions?key="+apiKey, strings.NewReader(withFields("")))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("x-goog-api-key", apiKey)
		is.Equal(serve(h, r).Code, 401) // the Gemini forms are the Gemini routes' only
	})
}

// A key in the URL reaches no log line: neither the access line nor any
// other, on success and on refusal, nor an error text.
func TestGeminiKeyInTheURLIsNeverLogged(t *testing.T) {
	is := is.New(t)
	h, logs := newServer(t, &fakeService{})
	for _, q := range []string{"?alt=sse&key=" + apiKey, "?key=" + apiKey + "x&alt=sse", "?key=" + apiKey} {
		r := httptest.NewRequest(http.MethodPost, "/v1beta/models/"+model+":streamGenerateContent"+q, strings.NewReader(gemHi))
		r.Header.Set("Content-Type", "application/json")
		rec := serve(h, r)
		is.True(!strings.Contains(rec.Body.String(), apiKey))
		for k, v := range rec.Header() {
			is.True(!strings.Contains(k+strings.Join(v, ","), apiKey))
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/v1beta/models/"+model+":embedContent?key="+apiKey, strings.NewReader(gemHi))
	rec := serve(h, r)
	is.Equal(rec.Code, 404) // authenticated by the URL's key, then no such method
	is.True(!strings.Contains(rec.Body.String(), apiKey))
	out := logs.String()
	is.True(strings.Contains(out, `"path":"/v1beta/models/{model}:streamGenerateContent"`)) // the route, not the URL
	is.True(!strings.Contains(out, apiKey))
	is.True(!strings.Contains(out, "key="))
}

func TestGeminiErrorsUseGeminiStatusNames(t *testing.T) {
	cases := []struct {
		name   string
		req    *http.Request
		status int
		gstat  string
		param  string
	}{
		{"unknown model", httptest.NewRequest(http.MethodPost, "/v1beta/models/nope:generateContent", strings.NewReader(gemHi)), 404, "NOT_FOUND", "model"},
		{"bad field", gemRequest("generateContent", "", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"cachedContent":"cachedContents/x"}`), 400, "INVALID_ARGUMENT", "cachedContent"},
		{"image part", gemRequest("generateContent", "", `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}`), 400, "INVALID_ARGUMENT", "contents.0.parts.0.inlineData"},
		{"unknown method", gemRequest("embedContent", "", gemHi), 404, "NOT_FOUND", ""},
		{"unknown path", httptest.NewRequest(http.MethodGet, "/v1beta/files", nil), 404, "NOT_FOUND", ""},
		{"wrong method", httptest.NewRequest(http.MethodGet, "/v1beta/models/"+model+":generateContent", nil), 405, "FAILED_PRECONDITION", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, &fakeService{})
			c.req.Header.Set("x-goog-api-key", apiKey)
			c.req.Header.Set("Content-Type", "application/json")
			rec := serve(h, c.req)
			is.Equal(rec.Code, c.status)
			e := decodeGem(t, rec.Body.Bytes())
			is.Equal(e.Error.Code, c.status)
			is.Equal(e.Error.Status, c.gstat)
			is.Equal(e.param(), c.param)
			is.True(e.reason() != "")
		})
	}
}

// A wait the gateway knows goes into the body too, as google.rpc.RetryInfo:
// gemini-cli reads the wait from there, not from retry-after.
func TestGeminiRateLimitCarriesItsWaitInTheBody(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, returning(nil, errs.New(errs.UpstreamRateLimited)))
	rec := serve(h, gemRequest("generateContent", "", gemHi))
	is.Equal(rec.Code, 429)
	var e struct {
		Error struct {
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &e))
	is.Equal(e.Error.Status, "RESOURCE_EXHAUSTED")
	is.Equal(len(e.Error.Details), 2)
	is.Equal(e.Error.Details[1]["@type"], "type.googleapis.com/google.rpc.RetryInfo")
	is.Equal(e.Error.Details[1]["retryDelay"], rec.Header().Get("retry-after")+"s")
}

func TestGeminiListsAndGetsModels(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodGet, "/v1beta/models", nil)
	r.Header.Set("x-goog-api-key", apiKey)
	rec := serve(h, r)
	is.Equal(rec.Code, 200)
	var list struct {
		Models []struct {
			Name                       string   `json:"name"`
			SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
		} `json:"models"`
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &list))
	is.Equal(len(list.Models), 2)
	is.Equal(list.Models[0].Name, "models/"+model)
	r = httptest.NewRequest(http.MethodGet, "/v1beta/models/"+model, nil)
	r.Header.Set("x-goog-api-key", apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 200)
	is.True(strings.Contains(rec.Body.String(), `"name":"models/`+model+`"`))
	r = httptest.NewRequest(http.MethodGet, "/v1beta/models/nope", nil)
	r.Header.Set("x-goog-api-key", apiKey)
	is.Equal(serve(h, r).Code, 404)
}

func TestGeminiCountTokensIsAnEstimateThatIsNeverZero(t *testing.T) {
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	for _, body := range []string{gemHi, `{"generateContentRequest":{"model":"models/` + model + `","contents":[{"role":"user","parts":[{"text":"hi"}]}]}}`} {
		rec := serve(h, gemRequest("countTokens", "", body))
		is.Equal(rec.Code, 200)
		var out struct {
			TotalTokens int64 `json:"totalTokens"`
		}
		is.NoErr(json.Unmarshal(rec.Body.Bytes(), &out))
		is.True(out.TotalTokens >= 1)
		is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")
	}
	is.Equal(svc.Calls(), 0) // nothing dispatched
}

// A function round trip: the model content's call (with the id the gateway
// issued) and the user content's response become one tool call and its
// result; a response without an id pairs by name only when one call has
// that name.
func TestGeminiFunctionResponsesPairByIDOrByAUniqueName(t *testing.T) {
	call := func(id, name string) string {
		return `{"functionCall":{"id":"` + id + `","name":"` + name + `","args":{"path":"a.go"}}}`
	}
	resp := func(id, name, out string) string {
		idm := ""
		if id != "" {
			idm = `"id":"` + id + `",`
		}
		return `{"functionResponse":{` + idm + `"name":"` + name + `","response":{"output":"` + out + `"}}}`
	}
	body := func(calls, resps string) string {
		return `{"contents":[{"role":"user","parts":[{"text":"read"}]},{"role":"model","parts":[` + calls + `]},` +
			`{"role":"user","parts":[` + resps + `]}]` + gemTools + `}`
	}
	t.Run("by id, any order", func(t *testing.T) {
		is := is.New(t)
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		rec := serve(h, gemRequest("generateContent", "", body(call("call_a", "read_file")+","+call("call_b", "read_file"),
			resp("call_b", "read_file", "B")+","+resp("call_a", "read_file", "A"))))
		is.Equal(rec.Code, 200)
		_, req := svc.Last()
		msgs := req.Messages
		is.Equal(len(msgs), 4)
		is.Equal(msgs[1].Role, chat.RoleAssistant)
		is.Equal(msgs[1].ToolCalls[0].ID, "call_a")
		is.Equal(msgs[1].ToolCalls[0].Arguments, `{"path":"a.go"}`)
		is.Equal(msgs[2].ToolCallID, "call_b")
		is.Equal(*msgs[2].Content, "B")
		is.Equal(msgs[3].ToolCallID, "call_a")
	})
	// gemini-cli 0.61 replays each functionResponse twice when it resumes a
	// session: the same response again is the same result, sent once.
	t.Run("the same response twice", func(t *testing.T) {
		is := is.New(t)
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		rec := serve(h, gemRequest("generateContent", "", body(call("call_a", "read_file"), resp("call_a", "read_file", "A")+","+resp("call_a", "read_file", "A"))))
		is.Equal(rec.Code, 200)
		_, req := svc.Last()
		is.Equal(len(req.Messages), 3)
		is.Equal(req.Messages[2].ToolCallID, "call_a")
	})
	t.Run("by a unique name", func(t *testing.T) {
		is := is.New(t)
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		rec := serve(h, gemRequest("generateContent", "", body(call("call_a", "read_file"), resp("", "read_file", "A"))))
		is.Equal(rec.Code, 200)
		_, req := svc.Last()
		is.Equal(req.Messages[2].ToolCallID, "call_a")
	})
	refusals := []struct{ name, body, param string }{
		{"two calls of the name, no id", body(call("call_a", "read_file")+","+call("call_b", "read_file"),
			resp("", "read_file", "A")+","+resp("", "read_file", "B")), "contents.2.parts.0.functionResponse.id"},
		{"an unknown id", body(call("call_a", "read_file"), resp("call_z", "read_file", "A")), "contents.2.parts.0.functionResponse.id"},
		{"a name that disagrees", body(call("call_a", "read_file"), resp("call_a", "write_file", "A")), "contents.2.parts.0.functionResponse.name"},
		{"unanswered", body(call("call_a", "read_file")+","+call("call_b", "read_file"), resp("call_a", "read_file", "A")), "contents.2"},
		{"answered twice, differently", body(call("call_a", "read_file"), resp("call_a", "read_file", "A")+","+resp("call_a", "read_file", "B")), "contents.2.parts.1.functionResponse"},
		{"answered twice by name", body(call("call_a", "read_file"), resp("", "read_file", "A")+","+resp("", "read_file", "A")), "contents.2.parts.1.functionResponse.name"},
		{"a call without id", body(`{"functionCall":{"name":"read_file","args":{}}}`, resp("", "read_file", "A")), "contents.1.parts.0.functionCall.id"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := serve(h, gemRequest("generateContent", "", c.body))
			is.Equal(rec.Code, 400)
			e := decodeGem(t, rec.Body.Bytes())
			is.Equal(e.param(), c.param)
			is.Equal(e.Error.Status, "INVALID_ARGUMENT")
			is.Equal(svc.Calls(), 0) // nothing reaches the service
		})
	}
}

// Each field decision of docs/GEMINI.md: refused fields name themselves;
// accepted ones reach the service as a request.
func TestGeminiFieldDecisions(t *testing.T) {
	base := `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	refused := []struct{ extra, param, code string }{
		{`"cachedContent":"cachedContents/a"`, "cachedContent", "unsupported_parameter"},
		{`"tools":[{"googleSearch":{}}]`, "tools.0.googleSearch", "unsupported_parameter"},
		{`"tools":[{"codeExecution":{}}]`, "tools.0.codeExecution", "unsupported_parameter"},
		{`"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`, "toolConfig.functionCallingConfig.mode", "unsupported_parameter"},
		{`"generationConfig":{"candidateCount":2}`, "generationConfig.candidateCount", "unsupported_parameter"},
		{`"generationConfig":{"responseModalities":["IMAGE"]}`, "generationConfig.responseModalities.0", "unsupported_parameter"},
		{`"generationConfig":{"responseMimeType":"text/x.enum"}`, "generationConfig.responseMimeType", "unsupported_parameter"},
		{`"generationConfig":{"temperature":"hot"}`, "generationConfig.temperature", "invalid_request"},
		{`"generationConfig":{"thinkingConfig":{"thinkingLevel":"ENORMOUS"}}`, "generationConfig.thinkingConfig.thinkingLevel", "unsupported_parameter"},
		{`"safetySettings":{}`, "safetySettings", "invalid_request"},
		{`"systemInstruction":{"parts":[{"fileData":{"fileUri":"gs://x"}}]}`, "systemInstruction.parts.0.fileData", "unsupported_parameter"},
		{`"tools":[{"functionDeclarations":[{"name":"a b"}]}]`, "tools.0.functionDeclarations.0.name", "invalid_request"},
	}
	for _, c := range refused {
		t.Run(c.param, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := serve(h, gemRequest("generateContent", "", `{`+base+`,`+c.extra+`}`))
			is.Equal(rec.Code, 400)
			e := decodeGem(t, rec.Body.Bytes())
			is.Equal(e.param(), c.param)
			is.Equal(e.reason(), c.code)
			is.Equal(svc.Calls(), 0)
		})
	}
	t.Run("accepted", func(t *testing.T) {
		is := is.New(t)
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		rec := serve(h, gemRequest("generateContent", "", `{`+base+`,"systemInstruction":{"role":"user","parts":[{"text":"be brief"}]},`+
			`"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}],`+
			`"generationConfig":{"temperature":0,"topP":1,"topK":64,"maxOutputTokens":100,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":20000}},`+
			`"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},`+
			`"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"a":{"type":"STRING","nullable":true}},"propertyOrdering":["a"]}}]}]}`))
		is.Equal(rec.Code, 200)
		_, req := svc.Last()
		is.Equal(req.Messages[0].Role, chat.RoleSystem)
		is.Equal(*req.Messages[0].Content, "be brief")
		is.Equal(req.ToolChoice.Mode, chat.ToolChoiceNone)
		is.Equal(req.Thinking, chat.BudgetLevel(20000))
		is.Equal(string(req.Tools[0].Parameters), `{"properties":{"a":{"type":["string","null"]}},"type":"object"}`) // the dialect converted
	})
	t.Run("structured output", func(t *testing.T) {
		is := is.New(t)
		svc := returning(script(app.Delta{Text: `{"a":1}`}, app.Delta{Finish: app.FinishStop}), nil)
		h, _ := newServer(t, svc)
		// gemini-cli's router sends its schema with the dialect's type names.
		rec := serve(h, gemRequest("generateContent", "", `{`+base+`,"generationConfig":{"responseMimeType":"application/json",`+
			`"responseJsonSchema":{"type":"OBJECT","properties":{"a":{"type":"INTEGER"}},"required":["a"]}}}`))
		is.Equal(rec.Code, 200)
		_, req := svc.Last()
		is.Equal(req.Output.Kind, chat.OutputJSONSchema)
		is.Equal(string(req.Output.Schema), `{"properties":{"a":{"type":"integer"}},"required":["a"],"type":"object"}`)
	})
}

func TestGeminiRepeatedMemberIsRefusedWithItsPath(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := serve(h, gemRequest("generateContent", "", `{"contents":[{"role":"user","parts":[{"text":"a","text":"b"}]}]}`))
	is.Equal(rec.Code, 400)
	is.Equal(decodeGem(t, rec.Body.Bytes()).param(), "contents.0.parts.0.text")
}

// recTracer records every attribute and failure of every span.
type recTracer struct {
	mu    sync.Mutex
	attrs []string
}

type recSpan struct{ t *recTracer }

func (t *recTracer) note(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.attrs = append(t.attrs, s)
}

func (t *recTracer) StartRequest(ctx context.Context, id string) (context.Context, ports.Span) {
	t.note("request_id=" + id)
	return ctx, recSpan{t}
}

func (t *recTracer) Start(ctx context.Context, name ports.SpanName) (context.Context, ports.Span) {
	return ctx, recSpan{t}
}

func (s recSpan) SetString(k ports.AttrKey, v string) { s.t.note(string(k) + "=" + v) }
func (s recSpan) SetInt(k ports.AttrKey, v int)       { s.t.note(string(k) + "=" + strconv.Itoa(v)) }
func (s recSpan) SetBool(k ports.AttrKey, v bool)     { s.t.note(string(k) + "=" + strconv.FormatBool(v)) }
func (s recSpan) Fail(code string)                    { s.t.note("fail=" + code) }
func (s recSpan) End()                                {}

// The spans of a request with its key in the URL name the route, never the
// URL or the key.
func TestGeminiKeyInTheURLReachesNoSpan(t *testing.T) {
	is := is.New(t)
	tr := &recTracer{}
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.Tracer = tr })
	for _, key := range []string{apiKey, apiKey + "x"} {
		r := httptest.NewRequest(http.MethodPost, "/v1beta/models/"+model+":streamGenerateContent?alt=sse&key="+key, strings.NewReader(gemHi))
		r.Header.Set("Content-Type", "application/json")
		serve(h, r)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	all := strings.Join(tr.attrs, "\n")
	is.True(strings.Contains(all, "/v1beta/models/{model}:streamGenerateContent"))
	is.True(!strings.Contains(all, apiKey))
	is.True(!strings.Contains(all, "key="))
}

// @google/genai 3.x asks for the v1 paths by default: the methods are served
// there, and GET /v1/models answers in the Gemini shape to a Gemini key form
// and in the OpenAI shape to every other request.
func TestGeminiIsServedOnTheV1PathsTheSDKUsesByDefault(t *testing.T) {
	is := is.New(t)
	h, logs := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodPost, "/v1/models/"+model+":streamGenerateContent?alt=sse", strings.NewReader(gemHi))
	r.Header.Set("x-goog-api-key", apiKey)
	r.Header.Set("Content-Type", "application/json")
	rec := serve(h, r)
	is.Equal(rec.Code, 200)
	is.Equal(checkGemStream(t, rec.Body.Bytes()).text, "ok")
	is.True(strings.Contains(logs.String(), `"path":"/v1/models/{model}:streamGenerateContent"`))

	r = httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	r.Header.Set("x-goog-api-key", apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 200)
	is.True(strings.Contains(rec.Body.String(), `"models":[{"name":"models/`+model+`"`))
	r = httptest.NewRequest(http.MethodGet, "/v1/models/"+model, nil)
	r.Header.Set("x-goog-api-key", apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 200)
	is.True(strings.Contains(rec.Body.String(), `"name":"models/`+model+`"`))
	r = httptest.NewRequest(http.MethodGet, "/v1/models/nope", nil)
	r.Header.Set("x-goog-api-key", apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 404)
	is.Equal(decodeGem(t, rec.Body.Bytes()).Error.Status, "NOT_FOUND")

	// The OpenAI answers stay the OpenAI ones.
	r = httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	r.Header.Set("Authorization", "Bearer "+apiKey)
	rec = serve(h, r)
	is.True(strings.Contains(rec.Body.String(), `"object":"list"`))
	r = httptest.NewRequest(http.MethodPost, "/v1/models/"+model, nil)
	r.Header.Set("Authorization", "Bearer "+apiKey)
	rec = serve(h, r)
	is.Equal(rec.Code, 405)
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_request")
}

// The ledger counts a Gemini request, its refusals included, under the API
// gemini (v1beta and v1 alike).
func TestTheLedgerCountsGeminiRequestsAsGemini(t *testing.T) {
	is := is.New(t)
	u := app.NewUsage(memstore.NewUsage(), porttest.NewClock(time.Now()), slog.New(slog.DiscardHandler), 90)
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) { c.Usage = u })
	serve(h, gemRequest("generateContent", "", gemHi))
	serve(h, gemRequest("streamGenerateContent", "", gemHi)) // refused: no alt=sse
	r := httptest.NewRequest(http.MethodPost, "/v1/models/"+model+":generateContent", strings.NewReader(gemHi))
	r.Header.Set("x-goog-api-key", apiKey)
	r.Header.Set("Content-Type", "application/json")
	serve(h, r)
	day := usage.Day(time.Now())
	rows, err := u.Report(t.Context(), day, day)
	is.NoErr(err)
	var requests, refused int64
	for _, row := range rows {
		is.Equal(row.API, usage.APIGemini)
		requests += row.Requests
		if row.Outcome != "ok" {
			refused += row.Requests
		}
	}
	is.Equal(requests, int64(3))
	is.Equal(refused, int64(1))
}
