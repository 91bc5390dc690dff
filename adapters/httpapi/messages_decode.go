package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// The Anthropic Messages API (POST /v1/messages) is served on the same core
// as chat completions and the Responses API: its request is translated into
// a chat.Request (system blocks → a system message, content blocks →
// messages, tool_use/tool_result blocks → tool calls and tool messages,
// custom tools → chat tools under the same rules, newTool), the same app
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
	return s.translateMessages(body, allowed, true)
}

// decodeCountRequest reads a count_tokens body: a Messages request without
// max_tokens.
func (s *server) decodeCountRequest(body []byte, allowed func(string) bool) (msgRequest, error) {
	return s.translateMessages(body, allowed, false)
}

// readMessagesBody reads the body once, strictly (wire/messages); a
// repeated member name is refused at its path with the steps joined by dots
// (messages.0.content.1.text), as the Messages API writes paths.
func readMessagesBody(body []byte) (messages.Request, error) {
	wr, err := messages.Decode(body)
	if err != nil {
		return wr, wireRefusal(body, err, dottedPath)
	}
	return wr, nil
}

// translateMessages is the one translation of a Messages request into the
// chat.Request the core takes, in the order of docs/API.md's refusals: the
// body, model, stream, max_tokens (needMax: count_tokens needs none), the
// field policy, thinking and output format, stop_sequences, tools,
// tool_choice, system, messages.
func (s *server) translateMessages(body []byte, allowed func(string) bool, needMax bool) (msgRequest, error) {
	wr, err := readMessagesBody(body)
	if err != nil {
		return msgRequest{}, err
	}
	model, err := s.model(wr.Model, allowed)
	if err != nil {
		return msgRequest{}, err
	}
	mr := msgRequest{chat: chat.Request{API: apiMessages, Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto},
		ParallelToolCalls: true}}
	req := &mr.chat
	if req.Stream, err = wireBool(wr.Stream, "stream", false); err != nil {
		return msgRequest{}, err
	}
	if needMax || wr.MaxTokens.Kind != 0 {
		if n, ok := wr.MaxTokens.Int(); !ok || n < 1 {
			return msgRequest{}, invalid("max_tokens", "is required and must be a positive integer.")
		}
	}
	if err := checkMessagesFields(&wr); err != nil {
		return msgRequest{}, err
	}
	if req.Thinking, err = messagesThinking(wr.Thinking, wr.OutputConfig); err != nil {
		return msgRequest{}, err
	}
	if req.Output, err = outputConfigFormat(wr.OutputConfig); err != nil {
		return msgRequest{}, err
	}
	if mr.stops, err = stopSequences(wr.StopSequences); err != nil {
		return msgRequest{}, err
	}
	if req.Tools, err = s.messagesTools(wr.Tools); err != nil {
		return msgRequest{}, err
	}
	if err := messagesToolChoice(wr.ToolChoice, &mr); err != nil {
		return msgRequest{}, err
	}
	sys, err := systemText(wr.System)
	if err != nil {
		return msgRequest{}, err
	}
	if sys != "" {
		req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: &sys})
	}
	msgs, err := s.messagesList(wr.Messages)
	if err != nil {
		return msgRequest{}, err
	}
	req.Messages = append(req.Messages, msgs...)
	mr.estimate = chat.EstimateInputTokens(*req)
	return mr, nil
}

// checkMessagesFields is the Messages API's field policy: the top-level
// fields it accepts and ignores (the upstream has no such setting) or
// refuses (server-side features the gateway cannot honour), in the order of
// messagesFields; the first refusal wins. Honoured fields are read by
// translateMessages.
func checkMessagesFields(wr *messages.Request) error {
	raws := [...]wirejson.Value{wr.Temperature, wr.TopP, wr.TopK, wr.Metadata, wr.ServiceTier,
		wr.ContextManagement, wr.CacheControl, wr.Speed, wr.InferenceGeo, wr.Container}
	for i, rule := range messagesFields {
		switch rule.name {
		case "context_management":
			if k := wr.Thinking.Kind; k != 0 && k != 'n' && k != '{' {
				return invalid("thinking", "must be an object.")
			}
		case "container":
			if err := checkOutputConfig(wr.OutputConfig); err != nil {
				return err
			}
			if m := wr.MCPServers; !wirejson.Absent(m.Kind) && !(m.IsArray() && len(m.Items) == 0) {
				return unsupported("mcp_servers", "MCP connector servers run on Anthropic's side; this gateway cannot reach them.")
			}
		}
		if len(raws[i].Raw) > 0 {
			if err := rule.check(rule.name, raws[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// messagesFields are the shared rules of the fields checkMessagesFields
// passes on as sent (thinking comes before context_management, output_config
// and mcp_servers before container).
var messagesFields = policy("temperature", "top_p", "top_k", "metadata", "service_tier",
	"context_management", "cache_control", "speed", "inference_geo", "container")

// checkOutputConfig accepts output_config.effort (a string, read by
// messagesThinking) and sends output_config.format through the same
// structured-output decision as chat's response_format and the Responses
// API's text.format.
func checkOutputConfig(oc wirejson.Object[messages.OutputConfig]) error {
	const param = "output_config"
	switch oc.Kind {
	case 0, 'n':
		return nil
	case '{':
	default:
		return invalid(param, "must be an object.")
	}
	if e := oc.V.Effort; !wirejson.Absent(e.Kind) && !e.IsString() {
		return invalid(param+".effort", "must be a string.")
	}
	format := oc.V.Format
	switch format.Kind {
	case 0, 'n':
		return nil
	case '{':
	default:
		return invalid(param+".format", "must be an object.")
	}
	// The Messages API's only structured format is json_schema.
	if t := format.V.Type; !t.IsString() {
		return invalid(param+".format.type", "is required and must be a string.")
	} else if t.V != "json_schema" {
		return invalid(param+".format.type", "must be \"json_schema\".")
	}
	return nil
}

// maxStopSequences bounds stop_sequences (the gateway scans the text for
// each).
const maxStopSequences = 16

func stopSequences(a wirejson.Array[wirejson.String]) ([]string, error) {
	switch a.Kind {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, invalid("stop_sequences", "must be an array of strings.")
	}
	items := a.Items
	if len(items) > maxStopSequences {
		return nil, invalid("stop_sequences", "at most "+strconv.Itoa(maxStopSequences)+" stop sequences are accepted.")
	}
	var out []string
	for i, it := range items {
		p := "stop_sequences." + strconv.Itoa(i)
		if !it.IsString() {
			return nil, invalid(p, "must be a string.")
		}
		if strings.TrimSpace(it.V) == "" {
			return nil, invalid(p, "must contain non-whitespace.")
		}
		out = append(out, it.V)
	}
	return out, nil
}

// systemText reads system as a string or an array of text blocks, joined
// with blank lines; Claude Code's attribution block is dropped, and
// cache_control (anywhere) carries no meaning for the upstream.
func systemText(c messages.Content) (string, error) {
	switch c.Kind {
	case 0, 'n':
		return "", nil
	case '"':
		return c.Text, nil
	case '[':
	default:
		return "", invalid("system", "must be a string or an array of text blocks.")
	}
	var parts []string
	for i, b := range c.Items {
		p := "system." + strconv.Itoa(i)
		if !b.IsObject() {
			return "", invalid(p, "must be an object.")
		}
		if t := b.V.Type; !t.IsString() || t.V != "text" {
			return "", invalid(p+".type", `must be "text".`)
		}
		if !b.V.Text.IsString() {
			return "", invalid(p+".text", "is required and must be a string.")
		}
		t := b.V.Text.V
		if strings.HasPrefix(t, billingHeaderPrefix) {
			continue
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n\n"), nil
}

// messagesList translates the messages. It checks tool-result pairing the
// way the Anthropic API does (all results of an assistant turn's tool_use
// blocks in the next user message, before any other content; every id
// answered, once; ids unique), with its wording, and accepts the results in
// any order.
func (s *server) messagesList(a wirejson.Array[wirejson.Object[messages.Message]]) ([]chat.Message, error) {
	if !a.IsArray() {
		return nil, invalid("messages", "is required and must be an array.")
	}
	if len(a.Items) == 0 {
		return nil, invalid("messages", "must not be empty.")
	}
	var out []chat.Message
	seenUse := map[string]bool{}
	var pending []string // tool_use ids of the previous assistant message
	pendingAt := -1
	for i, item := range a.Items {
		p := "messages." + strconv.Itoa(i)
		if !item.IsObject() {
			return nil, invalid(p, "must be an object.")
		}
		role, err := wireReqString(item.V.Role, p+".role")
		if err != nil {
			return nil, err
		}
		blocks, err := contentBlocks(p+".content", item.V.Content)
		if err != nil {
			return nil, err
		}
		switch role {
		case "assistant":
			if len(pending) > 0 {
				return nil, unanswered(pendingAt, pending)
			}
			m, ids, err := assistantBlocks(p, blocks, seenUse)
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
			msgs, err := s.userBlocks(p, blocks, pending, pendingAt)
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
		return nil, unsupported("messages."+strconv.Itoa(len(a.Items)-1), "a final assistant message (prefill) cannot be continued by the upstream.")
	}
	return out, nil
}

// systemBlocksText joins the text blocks of a system message in messages;
// any other block type is refused.
func systemBlocksText(p string, blocks []*messages.Block) (string, error) {
	var parts []string
	for j, b := range blocks {
		bp := p + "." + strconv.Itoa(j)
		if b.Type.V != "text" {
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

// contentBlocks reads content as a string (one text block) or an array of
// blocks, each an object with a string type.
func contentBlocks(p string, c messages.Content) ([]*messages.Block, error) {
	switch c.Kind {
	case '"':
		return []*messages.Block{{Type: wirejson.String{Kind: '"', V: "text"}, Text: wirejson.String{Kind: '"', V: c.Text}}}, nil
	case '[':
	default:
		return nil, invalid(p, "is required and must be a string or an array of content blocks.")
	}
	out := make([]*messages.Block, len(c.Items))
	for j := range c.Items {
		it := &c.Items[j]
		bp := p + "." + strconv.Itoa(j)
		if !it.IsObject() {
			return nil, invalid(bp, "must be an object.")
		}
		if !it.V.Type.IsString() {
			return nil, invalid(bp+".type", "is required and must be a string.")
		}
		out[j] = &it.V
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

func blockText(bp string, b *messages.Block) (string, error) {
	if !b.Text.IsString() {
		return "", invalid(bp+".text", "is required and must be a string.")
	}
	return b.Text.V, nil
}

func refuseBlock(bp string, b *messages.Block) error {
	if d, ok := unsupportedBlocks[b.Type.V]; ok {
		return unsupported(bp+".type", d)
	}
	return invalid(bp+".type", "is not a known content block type here.")
}

// assistantBlocks reads an assistant turn: text blocks joined, tool_use
// blocks as tool calls (input as sent: echoed arguments compare as JSON
// values), thinking and redacted_thinking from earlier turns dropped (the
// gateway never emits them; another backend's carry nothing the upstream can
// use).
func assistantBlocks(p string, blocks []*messages.Block, seen map[string]bool) (chat.Message, []string, error) {
	m := chat.Message{Role: chat.RoleAssistant}
	var text strings.Builder
	hasText := false
	var ids []string
	for j, b := range blocks {
		bp := p + ".content." + strconv.Itoa(j)
		switch b.Type.V {
		case "text":
			t, err := blockText(bp, b)
			if err != nil {
				return m, nil, err
			}
			text.WriteString(t)
			hasText = hasText || t != ""
		case "tool_use":
			id, err := wireReqString(b.ID, bp+".id")
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
			name, err := wireReqString(b.Name, bp+".name")
			if err != nil {
				return m, nil, err
			}
			if b.Input.Kind() != '{' {
				return m, nil, invalid(bp+".input", "is required and must be an object.")
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Name: name, Arguments: string(b.Input)})
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

// userBlocks reads a user turn. After an assistant turn with tool_use blocks
// (pending), its tool_result blocks come first and answer every id once, in
// any order; they become tool messages, and text after them (Claude Code
// appends system reminders there, and the user's next prompt after a failed
// round) is added to the last result, so the upstream sees it and the
// message still ends the conversation in results; it is also kept as that
// result's Trailing, so that when the results are history (their group was
// dispatched before) it goes up alone as the next user turn.
// Otherwise its text blocks are one user message.
func (s *server) userBlocks(p string, blocks []*messages.Block, pending []string, pendingAt int) ([]chat.Message, error) {
	want := make(map[string]bool, len(pending))
	for _, id := range pending {
		want[id] = true
	}
	var results []chat.Message
	var text strings.Builder
	hasText := false
	for j, b := range blocks {
		bp := p + ".content." + strconv.Itoa(j)
		switch b.Type.V {
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
			id, err := wireReqString(b.ToolUseID, bp+".tool_use_id")
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
func (s *server) toolResultContent(bp string, b *messages.Block) (string, error) {
	var content string
	switch c := b.Content; c.Kind {
	case 0, 'n':
	case '"':
		content = c.Text
	case '[':
		inner, err := contentBlocks(bp+".content", c)
		if err != nil {
			return "", err
		}
		var parts []string
		for k, ib := range inner {
			ip := bp + ".content." + strconv.Itoa(k)
			switch ib.Type.V {
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
	isErr, err := wireBool(b.IsError, bp+".is_error", false)
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

// messagesTools translates custom tools ({name, description, input_schema,
// strict}) into chat tools under the rules every API's tools have (newTool),
// at the Messages paths. Server tools are
// refused by name: the gateway cannot run them, and dropping them would make
// a side call "succeed" with nothing. A tool set is translated once and
// remembered by its bytes as sent (decodedTools, keyed with the API).
func (s *server) messagesTools(t messages.Tools) ([]chat.Tool, error) {
	switch t.Kind() {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, invalid("tools", "must be an array.")
	}
	k := toolsKey{api: apiMessages, maxTools: s.cfg.MaxTools, opts: s.toolOptions()}
	if tools, ok := decodedTools.get(t.Raw, k); ok {
		return append([]chat.Tool(nil), tools...), nil
	}
	items := t.Entries()
	for i, item := range items {
		p := "tools." + strconv.Itoa(i)
		if !item.IsObject() {
			return nil, invalid(p, "must be an object.")
		}
		typ := item.V.Type
		if !wirejson.Absent(typ.Kind) && !typ.IsString() {
			return nil, invalid(p+".type", "must be a string.")
		}
		if typ.V != "" && typ.V != "custom" {
			for _, pre := range serverToolPrefixes {
				if strings.HasPrefix(typ.V, pre) {
					name := "this server tool"
					if validToolName(typ.V) {
						name = "the server tool " + typ.V
					}
					return nil, unsupported(p+".type", name+" runs on Anthropic's side and is not available through this gateway; offer a custom tool instead.")
				}
			}
			return nil, invalid(p+".type", "is not a known tool type.")
		}
		if item.V.InputSchema.Kind() != '{' {
			return nil, invalid(p+".input_schema", "is required and must be a JSON schema object.")
		}
	}
	if len(items) == 0 {
		return nil, nil
	}
	if len(items) > s.cfg.MaxTools {
		return nil, unsupported("tools", "more tools than this gateway accepts (MAX_TOOLS).")
	}
	tools := make([]chat.Tool, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, item := range items {
		p := "tools." + strconv.Itoa(i)
		in := &item.V
		// The schema as the Messages route has always kept it (compact,
		// HTML-escaped: the bytes the tools hash binds).
		params, err := json.Marshal(json.RawMessage(in.InputSchema))
		if err != nil {
			return nil, err
		}
		d := toolDef{at: p, schemaAt: p + ".input_schema", name: in.Name.V, nameOK: in.Name.IsString(), schema: params}
		switch desc := in.Description; {
		case desc.IsString():
			d.desc = desc.V
		case !wirejson.Absent(desc.Kind):
			d.descErr = invalid(p+".description", "must be a string.")
		}
		if st := in.Strict; !wirejson.Absent(st.Kind) {
			b, err := wireBool(st, p+".strict", false)
			d.strict, d.strictErr = &b, err
		}
		tl, err := s.newTool(d, seen)
		if err != nil {
			return nil, err
		}
		tools = append(tools, tl)
	}
	decodedTools.put(t.Raw, k, tools, toolsSize(tools))
	return append([]chat.Tool(nil), tools...), nil
}

// messagesToolChoice reads {"type":"auto"|"none"} (and
// disable_parallel_tool_use). "any" and "tool" would need the answer to be a
// tool call, which the upstream cannot be made to produce: refused.
func messagesToolChoice(tc wirejson.Object[messages.ToolChoice], mr *msgRequest) error {
	switch tc.Kind {
	case 0, 'n':
		return nil
	case '{':
	default:
		return invalid("tool_choice", "must be an object.")
	}
	typ, err := wireReqString(tc.V.Type, "tool_choice.type")
	if err != nil {
		return err
	}
	dp, err := wireBool(tc.V.DisableParallelToolUse, "tool_choice.disable_parallel_tool_use", false)
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
