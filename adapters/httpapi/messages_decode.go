package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// The Anthropic Messages API (POST /v1/messages) is served on the same core
// as chat completions and the Responses API: its request is translated into
// a chat.Request (system blocks → a system message, content blocks →
// messages, tool_use/tool_result blocks → tool calls and tool messages,
// custom tools → chat tools through the same schema lowering), the same app
// turn runs, and its deltas are rendered as a Message or the Messages event
// stream. docs/MESSAGES.md lists every field and how it is treated.

// apiMessages is the chat.Request API name of the Messages ingress: tool-call
// groups and conversation anchors it creates are continued only through it.
const apiMessages = "messages"

// billingHeaderPrefix starts Claude Code's attribution block in system: it
// changes on every request and means nothing to the model, so it is dropped
// before anything else sees the system prompt (api.anthropic.com strips it
// too).
const billingHeaderPrefix = "x-anthropic-billing-header:"

// toolErrorPrefix marks a tool_result with is_error: true in the text the
// upstream receives (the upstream tool response has no error status of its
// own that the gateway sends).
const toolErrorPrefix = "Tool error: "

// msgRequest is a translated Messages request: the chat request for the core
// and what the response needs.
type msgRequest struct {
	chat chat.Request
	// stops are the stop_sequences, enforced by the gateway on the text.
	stops []string
	// estimate is the input-token estimate of the request (message_start).
	estimate int64
}

// decodeMessagesRequest validates a whole Messages request and translates it.
// Nothing reaches the service unless it returns no error.
func (s *server) decodeMessagesRequest(body []byte, allowed func(string) bool) (msgRequest, error) {
	top, model, err := s.decodeTop(body, allowed)
	if err != nil {
		return msgRequest{}, err
	}
	mr := msgRequest{chat: chat.Request{API: apiMessages, Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto},
		ParallelToolCalls: true}}
	req := &mr.chat
	if req.Stream, err = optBool(top["stream"], "stream", false); err != nil {
		return msgRequest{}, err
	}
	if n, ok := integer(top["max_tokens"]); !ok || n < 1 {
		return msgRequest{}, invalid("max_tokens", "is required and must be a positive integer.")
	}
	if err := checkFields(top, messagesFieldPolicy); err != nil {
		return msgRequest{}, err
	}
	if req.Thinking, err = decodeMessagesThinking(top); err != nil {
		return msgRequest{}, err
	}
	if req.Output, err = decodeOutputConfigFormat(top["output_config"]); err != nil {
		return msgRequest{}, err
	}
	if mr.stops, err = decodeStopSequences(top["stop_sequences"]); err != nil {
		return msgRequest{}, err
	}
	if err := s.decodeMessagesTools(top["tools"], &mr); err != nil {
		return msgRequest{}, err
	}
	if err := decodeMessagesToolChoice(top["tool_choice"], &mr); err != nil {
		return msgRequest{}, err
	}
	sys, err := decodeSystem(top["system"])
	if err != nil {
		return msgRequest{}, err
	}
	if sys != "" {
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: &sys})
	}
	msgs, err := s.decodeMessagesList(top["messages"])
	if err != nil {
		return msgRequest{}, err
	}
	req.Messages = append(req.Messages, msgs...)
	mr.estimate = chat.EstimateInputTokens(*req)
	return mr, nil
}

// messagesFieldPolicy lists the top-level Messages fields that are accepted
// and ignored, or refused. Honoured fields (model, max_tokens (validated),
// messages, system, stream, stop_sequences, tools, tool_choice) are read by
// decodeMessagesRequest.
var messagesFieldPolicy = policy(
	// accepted, not forwarded: the upstream has no such setting
	"temperature", "top_p", "top_k", "metadata", "service_tier", "thinking", "context_management",
	"cache_control", "speed", "inference_geo", "output_config",
	// refused: server-side features the gateway cannot honour
	"mcp_servers", "container")

// checkOutputConfig accepts output_config.effort (ignored) and sends
// output_config.format through the same structured-output decision as chat's
// response_format and the Responses API's text.format.
func checkOutputConfig(param string, raw json.RawMessage) error {
	f, ok, err := nullOrObject(param, raw)
	if !ok {
		return err
	}
	if v := f["effort"]; !absent(v) && kindOf(v) != kindString {
		return invalid(param+".effort", "must be a string.")
	}
	format := f["format"]
	switch kindOf(format) {
	case kindInvalid, kindNull:
		return nil
	case kindObject:
	default:
		return invalid(param+".format", "must be an object.")
	}
	// The Messages API's only structured format is json_schema.
	if t := fields(format)["type"]; kindOf(t) == kindString && str(t) != "json_schema" {
		return invalid(param+".format.type", "must be \"json_schema\".")
	}
	return checkOutputFormatType(param+".format.type", fields(format)["type"], "output format")
}

// refusedUnlessEmpty refuses a present, non-empty array (or any other
// non-null value).
func refusedUnlessEmpty(detail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		if absent(raw) || (kindOf(raw) == kindArray && len(elems(raw)) == 0) {
			return nil
		}
		return unsupported(param, detail)
	}
}

// maxStopSequences bounds stop_sequences (the gateway scans the text for
// each).
const maxStopSequences = 16

func decodeStopSequences(raw json.RawMessage) ([]string, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return nil, nil
	case kindArray:
	default:
		return nil, invalid("stop_sequences", "must be an array of strings.")
	}
	items := elems(raw)
	if len(items) > maxStopSequences {
		return nil, invalid("stop_sequences", "at most "+strconv.Itoa(maxStopSequences)+" stop sequences are accepted.")
	}
	var out []string
	for i, it := range items {
		p := "stop_sequences." + strconv.Itoa(i)
		if kindOf(it) != kindString {
			return nil, invalid(p, "must be a string.")
		}
		v := str(it)
		if strings.TrimSpace(v) == "" {
			return nil, invalid(p, "must contain non-whitespace.")
		}
		out = append(out, v)
	}
	return out, nil
}

// decodeSystem reads system as a string or an array of text blocks, joined
// with blank lines; Claude Code's attribution block is dropped, and
// cache_control (anywhere) carries no meaning for the upstream.
func decodeSystem(raw json.RawMessage) (string, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return "", nil
	case kindString:
		return str(raw), nil
	case kindArray:
	default:
		return "", invalid("system", "must be a string or an array of text blocks.")
	}
	var parts []string
	for i, b := range elems(raw) {
		p := "system." + strconv.Itoa(i)
		if kindOf(b) != kindObject {
			return "", invalid(p, "must be an object.")
		}
		f := fields(b)
		if kindOf(f["type"]) != kindString || str(f["type"]) != "text" {
			return "", invalid(p+".type", `must be "text".`)
		}
		if kindOf(f["text"]) != kindString {
			return "", invalid(p+".text", "is required and must be a string.")
		}
		t := str(f["text"])
		if strings.HasPrefix(t, billingHeaderPrefix) {
			continue
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n\n"), nil
}

// decodeMessagesList translates the messages. It checks tool-result pairing
// the way the Anthropic API does (all results of an assistant turn's
// tool_use blocks in the next user message, before any other content; every
// id answered, once; ids unique), with its wording, and accepts the results
// in any order.
func (s *server) decodeMessagesList(raw json.RawMessage) ([]chat.Message, error) {
	if kindOf(raw) != kindArray {
		return nil, invalid("messages", "is required and must be an array.")
	}
	items := elems(raw)
	if len(items) == 0 {
		return nil, invalid("messages", "must not be empty.")
	}
	var out []chat.Message
	seenUse := map[string]bool{}
	var pending []string // tool_use ids of the previous assistant message
	pendingAt := -1
	for i, item := range items {
		p := "messages." + strconv.Itoa(i)
		if kindOf(item) != kindObject {
			return nil, invalid(p, "must be an object.")
		}
		f := fields(item)
		role, err := reqString(f["role"], p+".role")
		if err != nil {
			return nil, err
		}
		blocks, err := contentBlocks(p+".content", f["content"])
		if err != nil {
			return nil, err
		}
		switch role {
		case "assistant":
			if len(pending) > 0 {
				return nil, unanswered(pendingAt, pending)
			}
			m, ids, err := decodeAssistantBlocks(p, blocks, seenUse)
			if err != nil {
				return nil, err
			}
			if m.Content == nil && len(m.ToolCalls) == 0 {
				// An assistant turn of thinking blocks only carries nothing
				// the upstream can use.
				continue
			}
			out = append(out, m)
			pending, pendingAt = ids, i
		case "user":
			msgs, err := s.decodeUserBlocks(p, blocks, pending, pendingAt)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
			pending, pendingAt = nil, -1
		case "system":
			// Claude Code (2.1.3xx) sends its environment block as a system
			// message inside messages; it is system text at that place, and
			// leaves a pending tool-result pairing as it is.
			text, err := systemBlocksText(p+".content", blocks)
			if err != nil {
				return nil, err
			}
			if text != "" {
				out = append(out, chat.Message{Role: chat.RoleSystem, Content: &text})
			}
		default:
			return nil, invalid(p+".role", `must be "user", "assistant" or "system".`)
		}
	}
	if len(out) == 0 {
		return nil, invalid("messages", "must hold a user message.")
	}
	if len(pending) > 0 && out[len(out)-1].Role == chat.RoleAssistant {
		// A last assistant message (a prefill) with tool calls and no results.
		return nil, unanswered(pendingAt, pending)
	}
	if out[len(out)-1].Role == chat.RoleAssistant {
		return nil, unsupported("messages."+strconv.Itoa(len(items)-1), "a final assistant message (prefill) cannot be continued by the upstream.")
	}
	return out, nil
}

// systemBlocksText joins the text blocks of a system message in messages;
// any other block type is refused.
func systemBlocksText(p string, blocks []block) (string, error) {
	var parts []string
	for j, b := range blocks {
		bp := p + "." + strconv.Itoa(j)
		if b.typ != "text" {
			return "", invalid(bp+".type", `must be "text" in a system message.`)
		}
		t, err := blockText(bp, b)
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(t, billingHeaderPrefix) {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// unanswered is the Anthropic API's refusal of tool_use blocks without
// results in the next message.
func unanswered(at int, ids []string) error {
	return invalid("messages."+strconv.Itoa(at+1), "`tool_use` ids were found without `tool_result` blocks immediately after: "+
		strings.Join(ids, ", ")+". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
}

// block is one content block: its type and fields.
type block struct {
	typ string
	f   map[string]json.RawMessage
}

// contentBlocks reads content as a string (one text block) or an array of
// typed blocks.
func contentBlocks(p string, raw json.RawMessage) ([]block, error) {
	switch kindOf(raw) {
	case kindString:
		return []block{{typ: "text", f: map[string]json.RawMessage{"text": raw}}}, nil
	case kindArray:
	default:
		return nil, invalid(p, "is required and must be a string or an array of content blocks.")
	}
	items := elems(raw)
	out := make([]block, len(items))
	for j, it := range items {
		bp := p + "." + strconv.Itoa(j)
		if kindOf(it) != kindObject {
			return nil, invalid(bp, "must be an object.")
		}
		f := fields(it)
		if kindOf(f["type"]) != kindString {
			return nil, invalid(bp+".type", "is required and must be a string.")
		}
		out[j] = block{typ: str(f["type"]), f: f}
	}
	return out, nil
}

// Block types the API defines that the gateway cannot send upstream.
var unsupportedBlocks = map[string]string{
	"image":                      "images cannot be sent to the upstream.",
	"document":                   "documents cannot be sent to the upstream.",
	"search_result":              "search results cannot be sent to the upstream.",
	"server_tool_use":            "server tools are not available.",
	"web_search_tool_result":     "server tools are not available.",
	"web_fetch_tool_result":      "server tools are not available.",
	"code_execution_tool_result": "server tools are not available.",
	"mcp_tool_use":               "MCP connector tools are not available.",
	"mcp_tool_result":            "MCP connector tools are not available.",
	"container_upload":           "code execution containers are not available.",
}

func blockText(bp string, b block) (string, error) {
	if kindOf(b.f["text"]) != kindString {
		return "", invalid(bp+".text", "is required and must be a string.")
	}
	return str(b.f["text"]), nil
}

func refuseBlock(bp string, b block) error {
	if d, ok := unsupportedBlocks[b.typ]; ok {
		return unsupported(bp+".type", d)
	}
	return invalid(bp+".type", "is not a known content block type here.")
}

// decodeAssistantBlocks reads an assistant turn: text blocks joined, tool_use
// blocks as tool calls (input re-serialized: echoed arguments compare as JSON
// values), thinking and redacted_thinking from earlier turns dropped (the
// gateway never emits them; another backend's carry nothing the upstream can
// use).
func decodeAssistantBlocks(p string, blocks []block, seen map[string]bool) (chat.Message, []string, error) {
	m := chat.Message{Role: chat.RoleAssistant}
	var text strings.Builder
	hasText := false
	var ids []string
	for j, b := range blocks {
		bp := p + ".content." + strconv.Itoa(j)
		switch b.typ {
		case "text":
			t, err := blockText(bp, b)
			if err != nil {
				return m, nil, err
			}
			text.WriteString(t)
			hasText = hasText || t != ""
		case "tool_use":
			id, err := reqString(b.f["id"], bp+".id")
			if err != nil {
				return m, nil, err
			}
			if !validToolID(id) {
				return m, nil, invalid(bp+".id", "String should match pattern '^[a-zA-Z0-9_-]+$'")
			}
			if seen[id] {
				return m, nil, invalid(bp, "`tool_use` ids must be unique: "+id+".")
			}
			seen[id] = true
			name, err := reqString(b.f["name"], bp+".name")
			if err != nil {
				return m, nil, err
			}
			in := b.f["input"]
			if kindOf(in) != kindObject {
				return m, nil, invalid(bp+".input", "is required and must be an object.")
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Name: name, Arguments: string(in)})
			ids = append(ids, id)
		case "thinking", "redacted_thinking":
		default:
			return m, nil, refuseBlock(bp, b)
		}
	}
	if hasText {
		t := text.String()
		m.Content = &t
	}
	return m, ids, nil
}

// validToolID matches ^[a-zA-Z0-9_-]+$ (the API's tool id pattern), at most
// 256 characters.
func validToolID(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decodeUserBlocks reads a user turn. After an assistant turn with tool_use
// blocks (pending), its tool_result blocks come first and answer every id
// once, in any order; they become tool messages, and text after them (Claude
// Code appends system reminders there, and the user's next prompt after a
// failed round) is added to the last result, so the upstream sees it and the
// message still ends the conversation in results; it is also kept as that
// result's Trailing, so that when the results are history (their group was
// dispatched before) it goes up alone as the next user turn.
// Otherwise its text blocks are one user message.
func (s *server) decodeUserBlocks(p string, blocks []block, pending []string, pendingAt int) ([]chat.Message, error) {
	want := make(map[string]bool, len(pending))
	for _, id := range pending {
		want[id] = true
	}
	var results []chat.Message
	var text strings.Builder
	hasText := false
	for j, b := range blocks {
		bp := p + ".content." + strconv.Itoa(j)
		switch b.typ {
		case "text":
			t, err := blockText(bp, b)
			if err != nil {
				return nil, err
			}
			if text.Len() > 0 && t != "" {
				text.WriteString("\n\n")
			}
			text.WriteString(t)
			hasText = true
		case "tool_result":
			if hasText {
				return nil, invalid(bp, "`tool_result` blocks must come first in the user message, before any other content.")
			}
			id, err := reqString(b.f["tool_use_id"], bp+".tool_use_id")
			if err != nil {
				return nil, err
			}
			if !want[id] {
				if !validToolID(id) {
					return nil, invalid(bp+".tool_use_id", "String should match pattern '^[a-zA-Z0-9_-]+$'")
				}
				return nil, invalid(bp, "unexpected `tool_use_id` found in `tool_result` blocks: "+id+
					". Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
			}
			delete(want, id)
			content, err := s.toolResultContent(bp, b)
			if err != nil {
				return nil, err
			}
			results = append(results, chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: &content})
		default:
			return nil, refuseBlock(bp, b)
		}
	}
	if len(want) > 0 {
		var missing []string
		for _, id := range pending {
			if want[id] {
				missing = append(missing, id)
			}
		}
		return nil, unanswered(pendingAt, missing)
	}
	if len(results) == 0 {
		t := text.String()
		if !hasText {
			return nil, invalid(p+".content", "must not be empty.")
		}
		return []chat.Message{{Role: chat.RoleUser, Content: &t}}, nil
	}
	if hasText && text.Len() > 0 {
		last := results[len(results)-1].Content
		joined := *last + "\n\n" + text.String()
		results[len(results)-1].Content = &joined
		results[len(results)-1].Trailing = text.String()
	}
	return results, nil
}

// toolResultContent reads a tool_result's content (a string or text blocks,
// joined) and is_error.
func (s *server) toolResultContent(bp string, b block) (string, error) {
	var content string
	switch raw := b.f["content"]; kindOf(raw) {
	case kindInvalid, kindNull:
	case kindString:
		content = str(raw)
	case kindArray:
		inner, err := contentBlocks(bp+".content", raw)
		if err != nil {
			return "", err
		}
		var parts []string
		for k, ib := range inner {
			ip := bp + ".content." + strconv.Itoa(k)
			switch ib.typ {
			case "text":
				t, err := blockText(ip, ib)
				if err != nil {
					return "", err
				}
				parts = append(parts, t)
			case "tool_reference":
				// Tool search (off behind a custom base URL) names a tool
				// to load; every tool is offered up front here.
			default:
				return "", refuseBlock(ip, ib)
			}
		}
		content = strings.Join(parts, "\n\n")
	default:
		return "", invalid(bp+".content", "must be a string or an array of content blocks.")
	}
	isErr, err := optBool(b.f["is_error"], bp+".is_error", false)
	if err != nil {
		return "", err
	}
	if isErr {
		content = toolErrorPrefix + content
	}
	if len(content) > s.cfg.MaxToolResultBytes {
		return "", refuse(errs.RequestTooLarge, bp+".content", "The tool result exceeds the per-result size limit.")
	}
	return content, nil
}

// Server tools the API runs on Anthropic's side, by the prefix of their type.
var serverToolPrefixes = []string{
	"web_search_", "web_fetch_", "code_execution_", "bash_", "text_editor_", "computer_", "memory_",
	"tool_search_tool_", "mcp_toolset",
}

// decodeMessagesTools translates custom tools ({name, description,
// input_schema}) into chat tools through decodeTools, so they are validated
// and lowered exactly like chat tools; refusals are reported at the Messages
// path. Server tools are refused by name: the gateway cannot run them, and
// dropping them would make a side call "succeed" with nothing.
func (s *server) decodeMessagesTools(raw json.RawMessage, mr *msgRequest) error {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return nil
	case kindArray:
	default:
		return invalid("tools", "must be an array.")
	}
	var chatTools []json.RawMessage
	var paths []string
	for i, item := range elems(raw) {
		p := "tools." + strconv.Itoa(i)
		if kindOf(item) != kindObject {
			return invalid(p, "must be an object.")
		}
		f := fields(item)
		typ, err := optString(f["type"], p+".type")
		if err != nil {
			return err
		}
		if typ != "" && typ != "custom" {
			for _, pre := range serverToolPrefixes {
				if strings.HasPrefix(typ, pre) {
					name := "this server tool"
					if validToolName(typ) {
						name = "the server tool " + typ
					}
					return unsupported(p+".type", name+" runs on Anthropic's side and is not available through this gateway; offer a custom tool instead.")
				}
			}
			return invalid(p+".type", "is not a known tool type.")
		}
		fn := map[string]json.RawMessage{}
		if v, ok := f["name"]; ok {
			fn["name"] = v
		}
		if d := f["description"]; !absent(d) {
			fn["description"] = d
		}
		schema := f["input_schema"]
		if kindOf(schema) != kindObject {
			return invalid(p+".input_schema", "is required and must be a JSON schema object.")
		}
		fn["parameters"] = schema
		if st, ok := f["strict"]; ok {
			fn["strict"] = st
		}
		chatTools = append(chatTools, mustJSON(map[string]any{"type": "function", "function": fn}))
		paths = append(paths, p)
	}
	tools, err := s.decodeTools(mustJSON(chatTools))
	if err != nil {
		return dottedParam(rewriteToolPath(err, paths))
	}
	mr.chat.Tools = tools
	return nil
}

// dottedParam rewrites the JSON-schema part of a refusal's path
// ("…input_schema.properties.x") from the chat form ".parameters".
func dottedParam(err error) error {
	var re *requestError
	if !errors.As(err, &re) {
		return err
	}
	out := *re
	out.param = strings.Replace(out.param, ".parameters", ".input_schema", 1)
	return &out
}

// decodeMessagesToolChoice reads {"type":"auto"|"none"} (and
// disable_parallel_tool_use). "any" and "tool" would need the answer to be a
// tool call, which the upstream cannot be made to produce: refused.
func decodeMessagesToolChoice(raw json.RawMessage, mr *msgRequest) error {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return nil
	case kindObject:
	default:
		return invalid("tool_choice", "must be an object.")
	}
	f := fields(raw)
	typ, err := reqString(f["type"], "tool_choice.type")
	if err != nil {
		return err
	}
	dp, err := optBool(f["disable_parallel_tool_use"], "tool_choice.disable_parallel_tool_use", false)
	if err != nil {
		return err
	}
	mr.chat.ParallelToolCalls = !dp
	switch typ {
	case "auto":
		mr.chat.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	case "none":
		mr.chat.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceNone}
	case "any", "tool":
		return unsupported("tool_choice.type", "the upstream cannot be made to call a tool; only \"auto\" and \"none\" are supported.")
	default:
		return invalid("tool_choice.type", `must be "auto", "none", "any" or "tool".`)
	}
	return nil
}

// decodeCountRequest reads a count_tokens body: a Messages request without
// max_tokens.
func (s *server) decodeCountRequest(body []byte, allowed func(string) bool) (msgRequest, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil && top != nil {
		if _, ok := top["max_tokens"]; !ok {
			top["max_tokens"] = json.RawMessage("1")
			body = mustJSON(top)
		}
	}
	return s.decodeMessagesRequest(body, allowed)
}
