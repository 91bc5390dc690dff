package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The commonest client mistakes each get an answer in the API's shape, with
// the stable code and what is accepted (docs/ERRORS.md, "The first mistakes").

func TestAKeyRefusalSaysWhichFormIsAccepted(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		headers map[string]string
		want    string
	}{
		"no key":            {nil, "No key was sent: send Authorization: Bearer <key> (or x-api-key: <key>)."},
		"the key alone":     {map[string]string{"Authorization": apiKey}, "The Authorization header has no scheme: send Authorization: Bearer <key>"},
		"another scheme":    {map[string]string{"Authorization": "Basic " + apiKey}, "The Authorization header's scheme is not Bearer"},
		"Bearer and no key": {map[string]string{"Authorization": "Bearer "}, "The Authorization header holds no key after Bearer"},
		"api-key (Azure)":   {map[string]string{"api-key": apiKey}, "The key is in an api-key header, which this gateway does not read"},
		"both, wrong bearer": {map[string]string{"Authorization": "Bearer sk-placeholder-0000", "x-api-key": apiKey},
			"an x-api-key header is read only when there is no Authorization header"},
		"a wrong key": {map[string]string{"Authorization": "Bearer sk-wrong-key-0000000"}, "The key matches none of this gateway's keys."},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, &fakeService{})
			r := chatRequest(withFields(""))
			r.Header.Del("Authorization")
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			rec := serve(h, r)
			is.Equal(rec.Code, http.StatusUnauthorized)
			e := decodeError(t, rec.Body.Bytes())
			is.Equal(e.Code, "invalid_api_key")          // the stable code, unchanged
			is.True(strings.Contains(e.Message, c.want)) // and what to send instead
			is.True(!strings.Contains(e.Message, apiKey))
		})
	}
}

func TestAKeyRefusalOnTheMessagesRouteIsInTheAnthropicShape(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusUnauthorized)
	is.True(strings.Contains(rec.Body.String(), `"type":"error"`)) // the Anthropic shape
	is.True(strings.Contains(decodeError(t, rec.Body.Bytes()).Message, "No key was sent: send Authorization: Bearer <key> (or x-api-key: <key>)."))
}

func TestAPathWithoutV1IsToldTheRouteItMeant(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"/chat/completions":          "did you mean /v1/chat/completions? An OpenAI client's base URL ends in /v1",
		"/v1/v1/chat/completions":    "did you mean /v1/chat/completions?",
		"/api/v1/chat/completions":   "did you mean /v1/chat/completions?",
		"/v1/chat/completions/":      "did you mean /v1/chat/completions?",
		"/responses":                 "did you mean /v1/responses?",
		"/models":                    "did you mean /v1/models?",
		"/models/pm-model":           "did you mean /v1/models/{id}?",
		"/messages":                  "did you mean /v1/messages? An Anthropic client's base URL is the gateway's address without /v1",
		"/v1/v1/messages":            "did you mean /v1/messages?",
		"/v1/messages/count_tokens/": "did you mean /v1/messages/count_tokens?",
	} {
		t.Run(path, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, &fakeService{})
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(withFields("")))
			r.Header.Set("Authorization", "Bearer "+apiKey)
			rec := serve(h, r)
			is.Equal(rec.Code, http.StatusNotFound)
			is.True(strings.Contains(rec.Body.String(), `"code":"invalid_request"`)) // the stable code
			is.True(strings.Contains(rec.Body.String(), want))                       // and the route meant
		})
	}
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/nothing/here", nil))
	is.Equal(rec.Code, http.StatusNotFound)
	is.True(!strings.Contains(rec.Body.String(), "did you mean")) // nothing close: no guess
}

func TestBadJSONSaysWhereItBreaks(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"{\"model\": \"pm-model\",\n  \"messages\": [x]}": "an unexpected character at byte offset 37 (line 2, column 16).",
		`{"model": "pm-model", "messages": [`:             "the body ends before the JSON value does, at byte offset 35.",
		`{"model": "pm-model"} {"a": 1}`:                  "text after the JSON value at byte offset 22 (line 1, column 23).",
		`{'model': 'pm-model'}`:                           "an unexpected character at byte offset 1 (line 1, column 2).",
	} {
		is := is.New(t)
		h, _ := newServer(t, &fakeService{})
		rec := post(h, body)
		is.Equal(rec.Code, http.StatusBadRequest)
		e := decodeError(t, rec.Body.Bytes())
		is.Equal(e.Code, "invalid_request")
		is.True(strings.Contains(e.Message, "The body is not valid JSON: "+want)) // where, never what
	}
}

func TestAnAnthropicBodyOnAnOpenAIRouteIsRefusedNotAnsweredWithoutItsSystemPrompt(t *testing.T) {
	t.Parallel()
	body := `{"model":"` + model + `","max_tokens":1024,"system":"Answer in French.","messages":[{"role":"user","content":"hi"}]}`
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		is := is.New(t)
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		if path == "/v1/responses" {
			body = strings.Replace(body, `"messages"`, `"input"`, 1)
		}
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+apiKey)
		r.Header.Set("Content-Type", "application/json")
		rec := serve(h, r)
		is.Equal(rec.Code, http.StatusBadRequest) // not 200 with the system prompt dropped
		e := decodeError(t, rec.Body.Bytes())
		is.Equal(e.Code, "invalid_request")
		is.Equal(e.param(), "system") // the field path
		is.True(strings.Contains(e.Message, "send an Anthropic body to /v1/messages"))
		is.Equal(svc.Calls(), 0) // nothing reached the service
	}
}
