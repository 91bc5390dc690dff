package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// claudeCodeTools are shaped like Claude Code's defaults: draft-07, closed
// objects, a format uri and patterns.
const claudeCodeTools = `[{"type":"function","function":{"name":"WebFetch","description":"Fetches content from a URL",` +
	`"parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,` +
	`"properties":{"url":{"type":"string","format":"uri","description":"The URL to fetch content from"},"prompt":{"type":"string"}},"required":["url","prompt"]}}},` +
	`{"type":"function","function":{"name":"Task","description":"Runs a sub-agent",` +
	`"parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,` +
	`"properties":{"prompt":{"type":"string"},"resumeFromRunId":{"type":"string","pattern":"^[a-zA-Z0-9_-]+$"},"model":{"type":"string","enum":["sonnet","opus"]}},"required":["prompt","model"]}}}]`

// upstreamTools returns the tool parameters of the last USER_QUERY the
// emulator received.
func upstreamTools(t *testing.T, emu *emulator.Server) []string {
	t.Helper()
	var out []string
	for _, r := range emu.Requests() {
		if r.ChatType != emulator.KindUserQuery {
			continue
		}
		var b struct {
			ClientTools struct {
				ThirdParty map[string]struct {
					Tools []struct {
						Parameters json.RawMessage `json:"parameters"`
					} `json:"tools"`
				} `json:"thirdParty"`
			} `json:"clientTools"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		out = out[:0]
		for _, g := range b.ClientTools.ThirdParty {
			for _, tl := range g.Tools {
				out = append(out, string(tl.Parameters))
			}
		}
	}
	return out
}

func TestClaudeCodeLikeToolsGetACallAndTheirContinuationIsAnswered(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "fetch the docs"}}
			extra := `,"parallel_tool_calls":false`
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, claudeCodeTools, extra))
			is.Equal(e.Error.Code, "")
			is.Equal(status, 200) // pattern and format no longer refuse the request
			calls := c.Choices[0].Message.ToolCalls
			is.Equal(len(calls), 1)
			is.Equal(calls[0].Function.Name, "WebFetch")
			is.Equal(calls[0].Function.Arguments, `{"prompt":"value-prompt","url":"https://example.com/"}`) // built from the schema the emulator saw (the format from its description note)

			sent := upstreamTools(t, s.emu)
			is.Equal(len(sent), 2)
			for _, p := range sent {
				is.True(!strings.Contains(p, `"format"`) && !strings.Contains(p, `"pattern"`)) // the upstream sees only the bounded vocabulary
			}
			is.True(strings.Contains(sent[0], `The URL to fetch content from\nSchema notes: format: uri`)) // the annotation is described instead
			is.True(strings.Contains(sent[1], `Schema notes: pattern: ^[a-zA-Z0-9_-]+$`))

			history = append(history, assistantAndResults(c, sunny)...)
			status, c, e = turnResult(t, s, chatBody(t, testModel, history, claudeCodeTools, extra))
			is.Equal(e.Error.Code, "")
			is.Equal(status, 200) // the continuation, echoing the caller's own tools, matches the tools hash
			is.Equal(c.Choices[0].FinishReason, "stop")
			is.True(strings.Contains(*c.Choices[0].Message.Content, "sunny for WebFetch")) // and is answered
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)                            // with one dispatch
		})
	}
}

func TestTheToolsHashBindsTheCallersOriginalSchema(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	// Two spellings of one schema that lower to the same bytes.
	withRef := `[{"type":"function","function":{"name":"lookup","parameters":{"$ref":"#/$defs/A","$defs":{"A":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}}}]`
	inlined := `[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}]`
	history := []msg{{"role": "user", "content": "look it up"}}
	status, c, _ := turnResult(t, s, chatBody(t, testModel, history, withRef, ""))
	is.Equal(status, 200)
	is.Equal(c.Choices[0].Message.ToolCalls[0].Function.Arguments, `{"q":"value-q"}`) // the emulator read the inlined definition
	history = append(history, assistantAndResults(c, sunny)...)
	status, _, e := turnResult(t, s, chatBody(t, testModel, history, inlined, ""))
	is.Equal(status, 409)
	is.Equal(e.Error.Code, "continuation_tools_mismatch") // other tools than the caller declared, though the upstream saw the same
	status, _, _ = turnResult(t, s, chatBody(t, testModel, history, withRef, ""))
	is.Equal(status, 200) // the caller's own definitions match
}

func TestStrictPolicyRefusesClaudeCodeLikeTools(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", map[string]string{"TOOL_SCHEMA_POLICY": "strict"})
	status, _, e := turnResult(t, s, chatBody(t, testModel, []msg{{"role": "user", "content": "fetch"}}, claudeCodeTools, ""))
	is.Equal(status, 400)
	is.Equal(e.Error.Code, "unsupported_parameter")
	is.Equal(*e.Error.Param, "tools[0].function.parameters.properties.url.format") // as before lowering existed
	is.Equal(len(s.emu.Requests()), 0)                                             // nothing reached the upstream
}

// streamedCalls posts a streamed request and assembles its SSE answer into a
// completion: the text, the tool calls and the final finish_reason.
func streamedCalls(t *testing.T, s *served, body string) completion {
	t.Helper()
	resp := s.post(t, body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	evs := sseEvents(t, resp.Body)
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("no [DONE]: %v", evs)
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var text *string
	var calls []call
	finish := ""
	for _, ev := range evs[:len(evs)-1] {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index int `json:"index"`
						call
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != nil {
				joined := *ch.Delta.Content
				if text != nil {
					joined = *text + joined
				}
				text = &joined
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, call{})
				}
				c := &calls[tc.Index]
				if tc.ID != "" {
					c.ID, c.Type, c.Function.Name = tc.ID, "function", tc.Function.Name
				}
				c.Function.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	whole, err := json.Marshal(map[string]any{"choices": []any{map[string]any{
		"message": map[string]any{"role": "assistant", "content": text, "tool_calls": calls}, "finish_reason": finish}}})
	if err != nil {
		t.Fatal(err)
	}
	var c completion
	if err := json.Unmarshal(whole, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClaudeCodeLikeToolsStreamACallAndItsAnswer(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "fetch the docs"}}
			extra := `,"stream":true,"parallel_tool_calls":false`
			c := streamedCalls(t, s, chatBody(t, testModel, history, claudeCodeTools, extra))
			is.Equal(c.Choices[0].FinishReason, "tool_calls") // the streamed turn asks for a tool
			is.Equal(len(c.Choices[0].Message.ToolCalls), 1)
			is.Equal(c.Choices[0].Message.ToolCalls[0].Function.Arguments, `{"prompt":"value-prompt","url":"https://example.com/"}`)
			history = append(history, assistantAndResults(c, sunny)...)
			c = streamedCalls(t, s, chatBody(t, testModel, history, claudeCodeTools, extra))
			is.Equal(c.Choices[0].FinishReason, "stop")                                    // the continuation is answered
			is.True(strings.Contains(*c.Choices[0].Message.Content, "sunny for WebFetch")) // with the result
		})
	}
}

// The emulator cannot satisfy a schema no value satisfies; the arguments it
// sends are then refused as an upstream fault, naming the call and the path.
func TestArgumentsBreakingTheLoweredSchemaAreRefusedAsAnUpstreamFault(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	tools := `[{"type":"function","function":{"name":"pick","parameters":{"type":"object","properties":{"code":{"type":"string","minLength":3,"maxLength":1,"pattern":"^[a-z]$"}},"required":["code"]}}}]`
	status, _, e := turnResult(t, s, chatBody(t, testModel, []msg{{"role": "user", "content": "pick one"}}, tools, ""))
	is.Equal(status, 502)
	is.Equal(e.Error.Code, "upstream_malformed_event")
	is.True(strings.HasSuffix(e.Error.Message, "tool_calls[0].function.arguments.code: does not match the tool's schema (maxLength).")) // the call and path, never the value
	is.True(!strings.Contains(e.Error.Message, "value-"))
	is.Equal(s.emu.Count(emulator.KindUserQuery), 1) // the upstream was asked once; nothing was retried
}

func TestWidenedCombinatorsPassAnUpstreamThatForbidsThem(t *testing.T) {
	const tools = `[{"type":"function","function":{"name":"set_mode","description":"Set a mode","parameters":{"type":"object",` +
		`"properties":{"mode":{"anyOf":[{"type":"string","enum":["fast","slow"]},{"type":"integer"}]}},"required":["mode"]}}}]`
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			emu := newEmulator(t, func(c *emulator.Config) { c.ForbidSchemaKeywords = true })
			forward := serveWith(t, emu, st, nil)
			status, _, e := turnResult(t, forward, chatBody(t, testModel, []msg{{"role": "user", "content": "fast please"}}, tools, ""))
			is.True(status >= 400) // forwarded unchanged, the upstream refuses anyOf
			is.True(e.Error.Code != "")

			widen := serveWith(t, emu, st, map[string]string{"POSTMAN_SCHEMA_COMBINATORS": "widen"})
			history := []msg{{"role": "user", "content": "fast please"}}
			status, c, e := turnResult(t, widen, chatBody(t, testModel, history, tools, ""))
			is.Equal(status, 200) // widened away, the same tool is offered and called
			is.Equal(e.Error.Code, "")
			for _, body := range upstreamTools(t, emu) {
				is.True(!strings.Contains(body, `"anyOf"`)) // nothing forbidden reached the upstream
			}
			history = append(history, assistantAndResults(c, sunny)...)
			status, _, _ = turnResult(t, widen, chatBody(t, testModel, history, tools, ""))
			is.Equal(status, 200) // and the continuation is answered
		})
	}
}
