package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// The whole-request benchmarks send real HTTP over loopback to a gateway
// started as `serve` starts it, in its default configuration (INFO logging
// through the process logger, to io.Discard; conversation continuity on;
// metrics on), wired to the built-in emulator over TLS. An op is one request
// (the tool round trip: the call and its continuation). allocs/op and B/op
// include the client's and the emulator's share, which no gateway change
// moves; ns/op is indicative on a shared machine.

// benchGateway is a gateway and the client that reaches it.
type benchGateway struct {
	base   string
	client *http.Client
	emu    *emulator.Server
}

func startBenchGateway(b *testing.B) *benchGateway {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	emu, err := emulator.Start(ctx, emulator.Config{WorkspaceID: testWorkspace, Subdomain: testSubdomain,
		SessionCookie: testCookie, AccessToken: testToken, Models: map[string]string{"GPT_55": "GPT_55"}})
	if err != nil {
		b.Fatal(err)
	}
	// The capacity limits are raised only so that b.N requests never meet
	// them: a full store would change what a request does.
	env, upstream := emulatorEnv(emu, "access_token", map[string]string{
		"CORRELATION_MAX_GROUPS": "1000000", "CORRELATION_MAX_CALLS": "4000000", "CONVERSATION_MAX_ANCHORS": "1000000"})
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	log := newLogger(cfg, io.Discard)
	if !log.Enabled(ctx, slog.LevelInfo) {
		b.Fatal("INFO logging is off")
	}
	gw, err := startGateway(ctx, cfg, log, upstream...)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- gw.wait(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
		emu.Close()
	})
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchGateway{base: "http://" + gw.addr(), client: &http.Client{Transport: tr}, emu: emu}
}

// post sends one chat completion and returns its whole body; a status other
// than 200 fails the benchmark.
func (g *benchGateway) post(b *testing.B, body []byte) []byte {
	return g.postTo(b, "/v1/chat/completions", body)
}

// postTo is post to another API's path (the Messages API with its own key
// header).
func (g *benchGateway) postTo(b *testing.B, path string, body []byte) []byte {
	req, _ := http.NewRequest("POST", g.base+path, bytes.NewReader(body))
	if path == "/v1/messages" {
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+testKey)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pmgate-bench/1")
	resp, err := g.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("status %d, %v: %s", resp.StatusCode, err, out)
	}
	return out
}

// benchTools are n tool definitions shaped like a coding agent's: nested
// object parameters with descriptions, enums, arrays and optional fields.
func benchTools(n int) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"type":"function","function":{"name":"tool_%02d","description":"Tool number %d: reads, edits or runs something in the workspace and reports what it did, in detail.",`+
			`"parameters":{"type":"object","properties":{`+
			`"path":{"type":"string","description":"Absolute path of the file or directory to work on."},`+
			`"mode":{"type":"string","enum":["read","write","append","list"],"description":"What to do with the path."},`+
			`"content":{"type":"string","description":"The text to write; only with mode write or append."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"At most this many lines."},`+
			`"options":{"type":"object","properties":{"recursive":{"type":"boolean"},"glob":{"type":"string"},"ignore":{"type":"array","items":{"type":"string"}}},"additionalProperties":false},`+
			`"tags":{"type":"array","items":{"type":"string","maxLength":64},"maxItems":16}},`+
			`"required":["path","mode"],"additionalProperties":false}}}`, i, i)
	}
	sb.WriteByte(']')
	return sb.String()
}

func benchBody(b *testing.B, messages []msg, stream bool, tools string) []byte {
	m, err := json.Marshal(messages)
	if err != nil {
		b.Fatal(err)
	}
	extra := ""
	if tools != "" {
		extra = `,"tools":` + tools
	}
	return fmt.Appendf(nil, `{"model":%q,"stream":%v,"messages":%s%s}`, testModel, stream, m, extra)
}

// answerText is the assistant's text of a JSON completion.
func answerText(b *testing.B, body []byte) string {
	var c completion
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		b.Fatalf("not a text completion: %s", body)
	}
	return *c.Choices[0].Message.Content
}

const benchSystem = "You are a careful assistant working in a software repository. Answer briefly and precisely."

func BenchmarkRequest(b *testing.B) {
	g := startBenchGateway(b)
	tools := benchTools(16)
	b.Run("text", func(b *testing.B) {
		body := benchBody(b, []msg{{"role": "system", "content": benchSystem}, {"role": "user", "content": "What does the gateway do?"}}, false, "")
		g.post(b, body)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			g.post(b, body)
		}
	})
	b.Run("stream", func(b *testing.B) {
		body := benchBody(b, []msg{{"role": "system", "content": benchSystem}, {"role": "user", "content": "What does the gateway do? Say it as a stream."}}, true, "")
		out := g.post(b, body)
		if !bytes.HasSuffix(bytes.TrimSpace(out), []byte("data: [DONE]")) {
			b.Fatalf("not a finished stream: %s", out)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			g.post(b, body)
		}
	})
	// The same streamed turn through the Responses and Messages APIs.
	for _, api := range []struct{ name, path, body, end string }{
		{"responses_stream", "/v1/responses", `{"model":%q,"stream":true,"instructions":%q,"input":"What does the gateway do? Say it as a stream."}`, "response.completed"},
		{"messages_stream", "/v1/messages", `{"model":%q,"stream":true,"max_tokens":1024,"system":%q,"messages":[{"role":"user","content":"What does the gateway do? Say it as a stream."}]}`, "message_stop"},
	} {
		b.Run(api.name, func(b *testing.B) {
			body := fmt.Appendf(nil, api.body, testModel, benchSystem)
			if out := g.postTo(b, api.path, body); !bytes.Contains(out, []byte("event: "+api.end)) {
				b.Fatalf("not a finished stream: %s", out)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				g.postTo(b, api.path, body)
			}
		})
	}
	b.Run("tools", func(b *testing.B) {
		// 16 tool definitions and a text answer: the fresh turn of an agent.
		body := benchBody(b, []msg{{"role": "system", "content": benchSystem}, {"role": "user", "content": "Explain the layout of this repository. #loop=0"}}, false, tools)
		answerText(b, g.post(b, body))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			g.post(b, body)
		}
	})
	b.Run("messages_tools", func(b *testing.B) {
		// The tools case through the Messages API: the same 16 definitions
		// in its shape ({name, description, input_schema}), a text answer.
		var defs []map[string]any
		if err := json.Unmarshal([]byte(tools), &defs); err != nil {
			b.Fatal(err)
		}
		var mtools []map[string]any
		for _, d := range defs {
			fn := d["function"].(map[string]any)
			mtools = append(mtools, map[string]any{"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]})
		}
		mt, _ := json.Marshal(mtools)
		body := fmt.Appendf(nil, `{"model":%q,"max_tokens":1024,"system":%q,"messages":[{"role":"user","content":"Explain the layout of this repository. #loop=0"}],"tools":%s}`,
			testModel, benchSystem, mt)
		if out := g.postTo(b, "/v1/messages", body); !bytes.Contains(out, []byte(`"type":"text"`)) {
			b.Fatalf("not a text message: %s", out)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			g.postTo(b, "/v1/messages", body)
		}
	})
	b.Run("tool_round_trip", func(b *testing.B) {
		// One op: the turn that asks for a tool, and the continuation that
		// answers it and gets the final text.
		history := []msg{{"role": "system", "content": benchSystem}, {"role": "user", "content": "Read the README please #loop=1"}}
		first := benchBody(b, history, false, tools)
		roundTrip := func() {
			var c completion
			if err := json.Unmarshal(g.post(b, first), &c); err != nil || len(c.Choices) == 0 || c.Choices[0].FinishReason != "tool_calls" {
				b.Fatalf("no tool call: %+v", c)
			}
			next := append(append([]msg(nil), history...), assistantAndResults(c, sunny)...)
			answerText(b, g.post(b, benchBody(b, next, false, tools)))
		}
		roundTrip()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			roundTrip()
		}
	})
	b.Run("continued", func(b *testing.B) {
		// One op: a turn that extends a transcript the gateway answered, so
		// that it continues the anchored upstream conversation. The first
		// turns are sent with the timer stopped.
		history := []msg{{"role": "system", "content": benchSystem}, {"role": "user", "content": "What does the gateway do?"}}
		setup := func(n int) [][]byte {
			bodies := make([][]byte, n)
			for i := range bodies {
				h := append([]msg(nil), history...)
				h[1] = msg{"role": "user", "content": fmt.Sprintf("What does the gateway do? (conversation %d-%d)", n, i)}
				reply := answerText(b, g.post(b, benchBody(b, h, false, "")))
				h = append(h, msg{"role": "assistant", "content": reply}, msg{"role": "user", "content": "And how does it keep a conversation going?"})
				bodies[i] = benchBody(b, h, false, "")
			}
			return bodies
		}
		b.ReportAllocs()
		b.StopTimer()
		bodies := setup(b.N)
		if b.N == 1 { // the first run proves the turn is a continuation
			g.post(b, bodies[0])
			if rs := g.emu.Requests(); rs[len(rs)-1].Turn != 2 {
				b.Fatal("the turn did not continue its upstream conversation")
			}
			bodies = setup(1)
		}
		b.StartTimer()
		for i := range b.N {
			g.post(b, bodies[i])
		}
	})
}
