package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestAToolResultLongerThanTheServiceTakesIsRefusedBeforeSending: against a
// service that refuses tool results over 1,000 characters, a gateway that
// knows it (POSTMAN_MAX_TOOL_RESULT_CHARS=1000) refuses a 1,500-character
// result with upstream_tool_result_too_long naming the result's tool_call_id,
// its position and both sizes, sends nothing, and keeps the calls pending:
// the same continuation with a short result is then answered. Without the
// setting the service's own refusal is what the client gets.
func TestAToolResultLongerThanTheServiceTakesIsRefusedBeforeSending(t *testing.T) {
	is := is.New(t)
	long := func(string) string { return strings.Repeat("é", 1500) } // 1,500 UTF-16 code units, 3,000 bytes
	emu := newEmulator(t, func(c *emulator.Config) { c.MaxToolResultChars = 1000 })
	s := serveWith(t, emu, "access_token", map[string]string{"POSTMAN_MAX_TOOL_RESULT_CHARS": "1000"})
	history, _, c := pending(t, s, "weather please")
	calls := c.Choices[0].Message.ToolCalls
	id := calls[0].ID
	before := emu.Count(emulator.KindToolResponse) + emu.Count(emulator.KindRejected)
	status, _, e := turnResult(t, s, chatBody(t, testModel, append(history, assistantAndResults(c, long)...), toolsJSON, ""))
	is.Equal(status, 400)
	is.Equal(e.Error.Code, "upstream_tool_result_too_long")
	is.True(strings.Contains(e.Error.Message, fmt.Sprintf("The tool result answering %s (result 1 of %d)", id, len(calls)))) // which result
	is.True(strings.Contains(e.Error.Message, "is 1500 characters"))                                                         // its size
	is.True(strings.Contains(e.Error.Message, "at most 1000 (set by POSTMAN_MAX_TOOL_RESULT_CHARS)"))
	is.Equal(emu.Count(emulator.KindToolResponse)+emu.Count(emulator.KindRejected), before) // nothing was sent
	status, c2, e := turnResult(t, s, chatBody(t, testModel, append(history, assistantAndResults(c, sunny)...), toolsJSON, ""))
	is.Equal(e.Error.Code, "")
	is.Equal(status, 200) // the calls stayed pending for a shorter result
	is.Equal(c2.Choices[0].FinishReason, "stop")

	// Without the setting, the emulator's own refusal reaches the client.
	open := serveWith(t, emu, "access_token", nil)
	history, _, c = pending(t, open, "weather please")
	status, _, e = turnResult(t, open, chatBody(t, testModel, append(history, assistantAndResults(c, long)...), toolsJSON, ""))
	is.True(status != 200)                                   // the service refused it
	is.True(e.Error.Code != "upstream_tool_result_too_long") // not the gateway's refusal: it was sent
}

// TestTheToolResultRefusalHasTheMessagesShape: on /v1/messages the same
// refusal is an Anthropic error body naming the tool_use_id the client knows.
func TestTheToolResultRefusalHasTheMessagesShape(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	s := serveWith(t, emu, "access_token", map[string]string{"POSTMAN_MAX_TOOL_RESULT_CHARS": "1000"})
	first := `{"model":"` + testModel + `","max_tokens":64,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
		`"messages":[{"role":"user","content":"weather please"}]}`
	resp := s.do(t, "POST", "/v1/messages", strings.NewReader(first), "Content-Type", "application/json")
	is.Equal(resp.StatusCode, 200)
	var m struct {
		Content []struct {
			Type  string         `json:"type"`
			ID    string         `json:"id"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&m))
	var use struct{ ID, Name string }
	var input map[string]any
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			use.ID, use.Name, input = b.ID, b.Name, b.Input
		}
	}
	is.True(use.ID != "") // a tool call to answer
	in, err := json.Marshal(input)
	is.NoErr(err)
	cont := `{"model":"` + testModel + `","max_tokens":64,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],` +
		`"messages":[{"role":"user","content":"weather please"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"` + use.ID + `","name":"` + use.Name + `","input":` + string(in) + `}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + use.ID + `","content":"` + strings.Repeat("x", 1001) + `"}]}]}`
	resp = s.do(t, "POST", "/v1/messages", strings.NewReader(cont), "Content-Type", "application/json")
	is.Equal(resp.StatusCode, 400)
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&body))
	is.Equal(body.Type, "error") // the Anthropic shape
	is.Equal(body.Error.Type, "invalid_request_error")
	is.Equal(resp.Header.Get("x-pmgate-error-code"), "upstream_tool_result_too_long")
	is.True(strings.Contains(body.Error.Message, "The tool result answering "+use.ID+" (result 1 of 1) is 1001 characters"))
}
