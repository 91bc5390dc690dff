package httpapi_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

// Every field of a Messages request has one of three treatments: honoured,
// accepted and ignored, or refused with 400 naming it.

func TestMessagesAcceptsAndIgnoresFieldsWithoutEffect(t *testing.T) {
	for name, extra := range map[string]string{
		"thinking adaptive":    `,"thinking":{"type":"adaptive"}`,
		"thinking enabled":     `,"thinking":{"type":"enabled","budget_tokens":2048}`,
		"effort":               `,"output_config":{"effort":"high"}`,
		"context_management":   `,"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]}`,
		"metadata":             `,"metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"s\"}"}`,
		"sampling":             `,"temperature":0.2,"top_p":0.9,"top_k":40`,
		"top-level cache":      `,"cache_control":{"type":"ephemeral"}`,
		"service tier":         `,"service_tier":"auto","speed":"fast","inference_geo":"us"`,
		"empty mcp_servers":    `,"mcp_servers":[]`,
		"unknown future field": `,"some_future_field":{"x":1}`,
		"tool_choice auto":     `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`,
		"tool_choice none":     `,"tool_choice":{"type":"none"}`,
		"tool extras":          `,"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral","ttl":"1h"},"defer_loading":false,"input_examples":[],"strict":true}]`,
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := serve(h, msgRequest(msgBody(userHi, extra)))
			is.Equal(rec.Code, 200)
			is.Equal(svc.Calls(), 1)
		})
	}
}

func TestMessagesRefusesWhatItCannotHonourNamingTheField(t *testing.T) {
	for name, c := range map[string]struct{ body, param, code string }{
		"no max_tokens":       {`{"model":"` + model + `","messages":` + userHi + `}`, "max_tokens", "invalid_request"},
		"zero max_tokens":     {msgBody(userHi, `,"max_tokens":0`), "max_tokens", "invalid_request"},
		"unknown model":       {`{"model":"claude-opus-4-5","max_tokens":1,"messages":` + userHi + `}`, "model", "model_not_found"},
		"no messages":         {`{"model":"` + model + `","max_tokens":1,"messages":[]}`, "messages", "invalid_request"},
		"bad role":            {msgBody(`[{"role":"tool","content":"x"}]`, ""), "messages.0.role", "invalid_request"},
		"image in system":     {msgBody(`[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"image","source":{}}]}]`, ""), "messages.1.content.0.type", "invalid_request"},
		"image":               {msgBody(`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]`, ""), "messages.0.content.0.type", "unsupported_parameter"},
		"document":            {msgBody(`[{"role":"user","content":[{"type":"document","source":{}}]}]`, ""), "messages.0.content.0.type", "unsupported_parameter"},
		"server tool":         {msgBody(userHi, `,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}]`), "tools.0.type", "unsupported_parameter"},
		"mcp_servers":         {msgBody(userHi, `,"mcp_servers":[{"type":"url","url":"https://x","name":"x"}]`), "mcp_servers", "unsupported_parameter"},
		"container":           {msgBody(userHi, `,"container":"c_1"`), "container", "unsupported_parameter"},
		"tool_choice any":     {msgBody(userHi, `,"tool_choice":{"type":"any"}`), "tool_choice.type", "unsupported_parameter"},
		"tool_choice tool":    {msgBody(userHi, `,"tool_choice":{"type":"tool","name":"f"}`), "tool_choice.type", "unsupported_parameter"},
		"structured output":   {msgBody(userHi, `,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}`), "output_config.format.type", "unsupported_parameter"},
		"bad stop_sequences":  {msgBody(userHi, `,"stop_sequences":"x"`), "stop_sequences", "invalid_request"},
		"blank stop sequence": {msgBody(userHi, `,"stop_sequences":[" "]`), "stop_sequences.0", "invalid_request"},
		"bad tool name":       {msgBody(userHi, `,"tools":[{"name":"a b","input_schema":{"type":"object"}}]`), "tools.0.name", "invalid_request"},
		"no input_schema":     {msgBody(userHi, `,"tools":[{"name":"f"}]`), "tools.0.input_schema", "invalid_request"},
		"prefill":             {msgBody(`[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure"}]`, ""), "messages.1", "unsupported_parameter"},
		"bad system block":    {msgBody(userHi, `,"system":[{"type":"image"}]`), "system.0.type", "invalid_request"},
		"thinking not object": {msgBody(userHi, `,"thinking":"on"`), "thinking", "invalid_request"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := serve(h, msgRequest(c.body))
			is.True(rec.Code == 400 || rec.Code == 404)
			is.Equal(rec.Header().Get("x-should-retry"), "false") // a deterministic refusal is never retried
			e := decodeAnth(t, rec.Body.Bytes())
			is.Equal(e.Error.Code, c.code)
			if c.param != "" {
				is.True(e.Error.Param != nil)
				is.Equal(*e.Error.Param, c.param)
				if name == "server tool" {
					is.True(strings.Contains(e.Error.Message, "web_search_20250305")) // refused by name
				}
				if c.code != "model_not_found" {
					is.True(strings.HasPrefix(e.Error.Message, c.param+": ")) // worded like the API: "<param>: <detail>"
				}
			}
			is.Equal(svc.Calls(), 0) // nothing reached the service
		})
	}
}

// toolTurn is an assistant turn with two tool_use blocks.
const toolTurn = `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Reading."},` +
	`{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a"}},{"type":"tool_use","id":"toolu_2","name":"Read","input":{"path":"b"}}]}`

func TestMessagesToolResultsPairLikeTheAPI(t *testing.T) {
	read := `,"tools":[{"name":"Read","input_schema":{"type":"object"}}]`
	t.Run("any order, reminders after, is_error", func(t *testing.T) {
		is := is.New(t)
		svc := &fakeService{}
		h, _ := newServer(t, svc)
		msgs := `[{"role":"user","content":"go"},` + toolTurn + `,{"role":"user","content":[` +
			`{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"B"}],"cache_control":{"type":"ephemeral"}},` +
			`{"type":"tool_result","tool_use_id":"toolu_1","content":"denied","is_error":true},` +
			`{"type":"text","text":"<system-reminder>todo</system-reminder>"}]}]`
		rec := serve(h, msgRequest(msgBody(msgs, read)))
		is.Equal(rec.Code, 200)
		_, req := svc.Last()
		is.Equal(len(req.Messages), 4) // user, assistant with calls, two tool results
		a := req.Messages[1]
		is.Equal(a.Role, chat.RoleAssistant)
		is.Equal(*a.Content, "Reading.") // thinking dropped
		is.Equal(len(a.ToolCalls), 2)
		is.Equal(a.ToolCalls[0].Arguments, `{"path":"a"}`)
		is.Equal(req.Messages[2].ToolCallID, "toolu_2")
		is.Equal(*req.Messages[2].Content, "B")
		is.Equal(req.Messages[3].ToolCallID, "toolu_1")
		is.Equal(*req.Messages[3].Content, "Tool error: denied\n\n<system-reminder>todo</system-reminder>") // the reminder rides on the last result
	})
	for name, c := range map[string]struct{ user, want string }{
		"a result missing": {`[{"type":"tool_result","tool_use_id":"toolu_1","content":"A"}]`,
			"`tool_use` ids were found without `tool_result` blocks immediately after: toolu_2"},
		"no results": {`"just text"`, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1, toolu_2"},
		"unknown id": {`[{"type":"tool_result","tool_use_id":"toolu_9","content":"A"}]`, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"},
		"text first": {`[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"A"}]`, "`tool_result` blocks must come first"},
		"answered twice": {`[{"type":"tool_result","tool_use_id":"toolu_1","content":"A"},{"type":"tool_result","tool_use_id":"toolu_1","content":"A"},{"type":"tool_result","tool_use_id":"toolu_2","content":"B"}]`,
			"unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			msgs := `[{"role":"user","content":"go"},` + toolTurn + `,{"role":"user","content":` + c.user + `}]`
			rec := serve(h, msgRequest(msgBody(msgs, read)))
			is.Equal(rec.Code, 400)
			is.Equal(rec.Header().Get("x-should-retry"), "false")
			e := decodeAnth(t, rec.Body.Bytes())
			is.True(strings.Contains(e.Error.Message, c.want))
			is.Equal(svc.Calls(), 0)
		})
	}
	t.Run("duplicate tool_use ids", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, &fakeService{})
		dup := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{}},{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]}`
		rec := serve(h, msgRequest(msgBody(`[{"role":"user","content":"go"},`+dup+`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}]`, read)))
		is.Equal(rec.Code, 400)
		is.True(strings.Contains(decodeAnth(t, rec.Body.Bytes()).Error.Message, "`tool_use` ids must be unique"))
	})
}

func TestMessagesSystemAndCacheControlCarryNoMeaning(t *testing.T) {
	// Two requests that differ only where Claude Code's bytes change every
	// turn (cache_control moved, the attribution block) are the same request.
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	a := msgBody(`[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"Hello"},{"role":"user","content":"more"}]`,
		`,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.1.a1; cc_entrypoint=cli; cch=1;"},{"type":"text","text":"You are Claude Code."}]`)
	b := msgBody(`[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"Hello"}]},{"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}]`,
		`,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.2.b2; cc_entrypoint=cli; cch=2;"},{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral","ttl":"1h"}}]`)
	is.Equal(serve(h, msgRequest(a)).Code, 200)
	_, ra := svc.Last()
	is.Equal(serve(h, msgRequest(b)).Code, 200)
	_, rb := svc.Last()
	is.Equal(ra.Messages, rb.Messages)
}

func TestMessagesToolSchemaRefusalsNameTheMessagesPath(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{}, strictSchemas)
	rec := serve(h, msgRequest(msgBody(userHi, `,"tools":[{"name":"f","input_schema":{"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}}}]`)))
	is.Equal(rec.Code, 400)
	is.Equal(rec.Header().Get("x-should-retry"), "false")
	e := decodeAnth(t, rec.Body.Bytes())
	is.Equal(e.Error.Code, "unsupported_parameter")
	is.Equal(*e.Error.Param, "tools.0.input_schema.properties.x.pattern")
}

func TestMessagesAcceptsSystemMessagesInsideMessages(t *testing.T) {
	// Claude Code 2.1.332 sends its environment block as a system message
	// after the first user message (with text blocks and the attribution
	// block's prefix stripped like in top-level system).
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	body := msgBody(`[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"system","content":[{"type":"text","text":"# Environment\nPlatform: linux"}]}]`, "")
	is.Equal(serve(h, msgRequest(body)).Code, 200)
	_, req := svc.Last()
	last := req.Messages[len(req.Messages)-1]
	is.Equal(last.Role, chat.RoleSystem)
	is.Equal(*last.Content, "# Environment\nPlatform: linux")

	// A system message between a tool_use turn and its results keeps the pairing.
	pair := msgBody(`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},`+
		`{"role":"system","content":"reminder"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]`,
		`,"tools":[{"name":"f","input_schema":{"type":"object"}}]`)
	rec := serve(h, msgRequest(pair))
	is.True(rec.Code != 400 || !strings.Contains(rec.Body.String(), "tool_use")) // not refused as unpaired
}
