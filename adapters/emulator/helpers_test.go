package emulator_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/internal/testkit"
)

const (
	sub       = testkit.Subdomain
	cookie    = testkit.Cookie
	token     = testkit.Token
	workspace = testkit.Workspace
	model     = "GPT_56_SOL"
)

// start runs an emulator configured for both strategies, closed at cleanup.
var start = testkit.StartEmulator

// peer is a real TLS client of one strategy.
type peer struct {
	t        *testing.T
	s        *emulator.Server
	strategy string
	hc       *http.Client
}

// webPeer dials s.Addr() whatever the address, with SNI and Host <sub>.postman.co.
func webPeer(t *testing.T, s *emulator.Server) *peer {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", s.Addr())
		},
		TLSClientConfig: &tls.Config{RootCAs: s.CertPool(), ServerName: sub + ".postman.co"},
	}
	return newPeer(t, s, emulator.StrategyWebSession, tr)
}

func tokenPeer(t *testing.T, s *emulator.Server) *peer {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.CertPool()}}
	return newPeer(t, s, emulator.StrategyAccessToken, tr)
}

func newPeer(t *testing.T, s *emulator.Server, strategy string, tr *http.Transport) *peer {
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{
		Transport:     tr,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &peer{t: t, s: s, strategy: strategy, hc: hc}
}

func (p *peer) url() string {
	if p.strategy == emulator.StrategyWebSession {
		return "https://" + sub + ".postman.co/_gw/chat"
	}
	return p.s.Origin() + "/_gw/chat"
}

// request builds a POST with the strategy's correct headers; edits adjust it.
func (p *peer) request(ctx context.Context, body any, edits ...func(*http.Request)) *http.Request {
	p.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			p.t.Fatalf("marshal: %v", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url(), bytes.NewReader(raw))
	if err != nil {
		p.t.Fatalf("request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Pstmn-Req-Service", "agent-mode-service")
	req.Header.Set("User-Agent", "pmgate-test")
	if p.strategy == emulator.StrategyWebSession {
		req.Header.Set("Cookie", "postman.sid="+cookie)
		req.Header.Set("Origin", "https://"+sub+".postman.co")
		req.Header.Set("Referer", "https://"+sub+".postman.co/")
	} else {
		req.Header.Set("X-Access-Token", token)
	}
	for _, e := range edits {
		e(req)
	}
	return req
}

// post sends body and returns the response with its whole body read.
func (p *peer) post(body any, edits ...func(*http.Request)) (*http.Response, []byte) {
	p.t.Helper()
	resp, err := p.hc.Do(p.request(context.Background(), body, edits...))
	if err != nil {
		p.t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatalf("read body: %v", err)
	}
	assertNoSecrets(p.t, b)
	return resp, b
}

// exchange is a finished request, safe to produce on any goroutine.
type exchange struct {
	status int
	body   []byte
	err    error
}

// send performs req without touching testing.T, so it may run on any goroutine.
func (p *peer) send(req *http.Request) exchange {
	resp, err := p.hc.Do(req)
	if err != nil {
		return exchange{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return exchange{status: resp.StatusCode, body: b, err: err}
}

// turn posts body, expects a 200 event stream and parses it.
func (p *peer) turn(body any) stream {
	p.t.Helper()
	resp, b := p.post(body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		p.t.Fatalf("turn: status %d, type %q, body %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return parseStream(p.t, b)
}

func assertNoSecrets(t *testing.T, b []byte) {
	t.Helper()
	for _, secret := range []string{"SECRET", cookie, token} {
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("a response body contains a secret")
		}
	}
}

// stream is a parsed event stream.
type stream struct {
	kinds []string         // eventType of each frame, "[DONE]" for the marker
	data  []map[string]any // data of each frame (nil for [DONE])
	tail  string           // bytes after the last complete frame
}

func parseStream(t *testing.T, b []byte) stream {
	t.Helper()
	var s stream
	frames := strings.Split(string(b), "\n\n")
	s.tail = frames[len(frames)-1]
	for _, f := range frames[:len(frames)-1] {
		payload, ok := strings.CutPrefix(f, "data: ")
		if !ok || strings.Contains(payload, "\n") {
			t.Fatalf("bad frame %q", f)
		}
		if payload == "[DONE]" {
			s.kinds, s.data = append(s.kinds, "[DONE]"), append(s.data, nil)
			continue
		}
		var ev struct {
			EventType string         `json:"eventType"`
			Data      map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(payload), &ev); err != nil {
			t.Fatalf("bad event %q: %v", payload, err)
		}
		s.kinds, s.data = append(s.kinds, ev.EventType), append(s.data, ev.Data)
	}
	return s
}

// shape collapses runs of equal kinds: [a a b] -> [a b].
func (s stream) shape() []string {
	var out []string
	for _, k := range s.kinds {
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

func (s stream) all(kind string) []map[string]any {
	var out []map[string]any
	for i, k := range s.kinds {
		if k == kind {
			out = append(out, s.data[i])
		}
	}
	return out
}

func (s stream) first(kind string) map[string]any {
	if all := s.all(kind); len(all) > 0 {
		return all[0]
	}
	return nil
}

func (s stream) text() string {
	var b strings.Builder
	for _, d := range s.all("textChunk") {
		b.WriteString(d["textContent"].(string))
	}
	return b.String()
}

func (s stream) conversationID() string {
	if d := s.first("conversation"); d != nil {
		return d["id"].(string)
	}
	return ""
}

func label(d map[string]any) string {
	return d["metadata"].(map[string]any)["model"].(string)
}

// call is one tool call reassembled from toolCallChunk events.
type call struct {
	id, groupID, name string
	args              string
	chunks            int
	names             []string // function.name as seen on every chunk
	hasID             bool
}

// calls reassembles the tool calls of a stream by index and returns the group id
// from data.toolCallGroupId (which must be the same on every chunk).
func (s stream) calls(t *testing.T) ([]*call, string) {
	t.Helper()
	is := is.New(t)
	var out []*call
	group := ""
	for _, d := range s.all("toolCallChunk") {
		g := d["toolCallGroupId"].(string)
		if group == "" {
			group = g
		}
		is.Equal(g, group) // one group id on every chunk
		entries := d["toolCalls"].([]any)
		is.Equal(len(entries), 1) // one entry per chunk
		e := entries[0].(map[string]any)
		idx, ok := e["index"].(float64)
		is.True(ok) // index present on every chunk
		for len(out) <= int(idx) {
			out = append(out, &call{})
		}
		c := out[int(idx)]
		fn := e["function"].(map[string]any)
		c.names = append(c.names, fn["name"].(string))
		c.name = fn["name"].(string)
		c.args += fn["arguments"].(string)
		c.chunks++
		c.groupID = e["toolCallGroupId"].(string)
		is.Equal(c.groupID, group) // the entry carries the group id too
		if id, ok := e["id"].(string); ok {
			c.hasID = true
			if c.id != "" {
				is.Equal(id, c.id) // the same id on every chunk of a call
			}
			c.id = id
		}
	}
	return out, group
}

// Request bodies.

var (
	weatherTool = map[string]any{
		"name":        "get_weather",
		"description": "Current weather for a city",
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"city":   map[string]any{"type": "string"},
				"days":   map[string]any{"type": "integer"},
				"metric": map[string]any{"type": "boolean"},
				"note":   map[string]any{"type": "string"},
				"tags":   map[string]any{"type": "array"},
			},
			"required": []any{"metric", "city", "days", "tags"},
		},
	}
	weatherArgs = `{"city":"value-city","days":1,"metric":true,"tags":[]}`
	timeTool    = map[string]any{
		"name":        "get_time",
		"description": "Current time in a zone",
		"parameters": map[string]any{
			"type":       "object",
			"properties": map[string]any{"zone": map[string]any{"type": []any{"string", "null"}}},
			"required":   []any{"zone"},
		},
	}
	timeArgs = `{"zone":"value-zone"}`
)

type body map[string]any

func (b body) input() map[string]any { return b["input"].(map[string]any) }
func (b body) dev() map[string]any   { return b["devModeOptions"].(map[string]any) }

// userQuery is a GF-shaped fresh text query.
func userQuery(query string) body {
	return body{
		"input": map[string]any{
			"chatType": "USER_QUERY", "query": query, "toolResponse": "", "useCase": nil,
			"conversationId": nil, "agent": nil, "product": "workspace_v12", "startedFrom": "CHAT_INPUT",
		},
		"platform": "WEB",
		"clientTools": map[string]any{
			"nativeToolsHash": "clienttools-workspace_v12-browser-1-abc", "excludedTools": []any{"askUser"},
			"thirdParty": map[string]any{},
		},
		"clientKBTerms":     map[string]any{"nativeTermsHash": "kbterms-1", "excludedKBTerms": []any{"DATASETS"}},
		"mandatoryContext":  map[string]any{"workspaceId": workspace},
		"selectedContext":   []any{},
		"backgroundContext": []any{},
		"availableSkills":   []any{},
		"devModeOptions": map[string]any{
			"selectedModel": model, "isParallelToolCallingSupported": false, "autoRun": false,
			"supportsAskUser": false, "supportsActionRecommendations": true,
			"useThinkingModeIfAvailable": true, "thinkingLevel": "high",
		},
	}
}

// withTools offers tools in one third-party group.
func (b body) withTools(parallel, autoRun bool, tools ...map[string]any) body {
	list := make([]any, len(tools))
	for i, t := range tools {
		list[i] = t
	}
	b["clientTools"].(map[string]any)["thirdParty"] = map[string]any{"pmgate": map[string]any{"tools": list}}
	b.dev()["isParallelToolCallingSupported"] = parallel
	b.dev()["autoRun"] = autoRun
	return b
}

type result struct{ id, content string }

// toolResponse is a continuation with the catalog re-sent; the shape is set by
// one of grouped, flat or packed.
func toolResponse(convID string, parallel bool, tools ...map[string]any) body {
	b := userQuery("").withTools(parallel, true, tools...)
	in := b.input()
	in["chatType"] = "TOOL_RESPONSE"
	in["conversationId"] = convID
	delete(in, "toolResponse")
	return b
}

// grouped is the access_token grouped form.
func (b body) grouped(groupID string, results ...result) body {
	var list []any
	for _, r := range results {
		list = append(list, map[string]any{
			"toolCallId": r.id, "content": r.content,
			"toolResponseSummary": "Tool call completed", "toolResponseStatus": "SUCCESS",
		})
	}
	b.input()["toolCallGroupId"] = groupID
	b.input()["toolResponses"] = list
	return b
}

// flat is the singular flat form (groupID "" leaves it out).
func (b body) flat(groupID string, r result) body {
	in := b.input()
	in["toolCallId"] = r.id
	in["toolResponse"] = r.content
	in["toolResponseSummary"] = "Tool call completed"
	if groupID != "" {
		in["toolCallGroupId"] = groupID
	}
	return b
}

// packed is the web_session form: several results as a JSON string.
func (b body) packed(groupID string, results ...result) body {
	var list []map[string]string
	for _, r := range results {
		list = append(list, map[string]string{"toolCallId": r.id, "status": "SUCCESS", "content": r.content})
	}
	s, _ := json.Marshal(list)
	in := b.input()
	in["toolCallId"] = results[0].id
	in["toolResponse"] = string(s)
	in["toolResponseSummary"] = "2 tool calls completed"
	in["toolResponseStatus"] = "SUCCESS"
	in["toolCallGroupId"] = groupID
	return b
}

func errorMessage(t *testing.T, b []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return e.Error.Message
}
