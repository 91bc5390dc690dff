package msgapi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// apiMessages is the chat.Request API name of the Messages ingress: tool-call
// groups and conversation anchors it creates are continued only through it.
const apiMessages = "messages"

// billingHeaderPrefix starts Claude Code's attribution block in system: it
// changes on every request and means nothing to the model, so it is dropped
// before anything else sees the system prompt (api.anthropic.com strips it
// too).
const billingHeaderPrefix = "x-anthropic-billing-header:"

// Request is a translated Messages request: the chat request for the core
// and what the answer needs.
type Request struct {
	Chat chat.Request
	// stops are the stop_sequences, enforced by the gateway on the text.
	stops []string
	// estimate is the input-token estimate of the request (message_start,
	// count_tokens).
	estimate int64
}

// Decode validates a whole Messages request and translates it under the
// gateway's settings in; allowed says which models the key may use. Nothing
// reaches the service unless it returns no error.
func Decode(in *rules.Settings, body []byte, allowed func(string) bool) (Request, error) {
	return decoder{in: in}.translate(body, allowed, true)
}

// DecodeCount reads a count_tokens body: a Messages request without
// max_tokens.
func DecodeCount(in *rules.Settings, body []byte, allowed func(string) bool) (Request, error) {
	return decoder{in: in}.translate(body, allowed, false)
}

// decoder is one translation under the gateway's settings: the models and
// the tool limits. A value: its method values (the turn readers handed to
// rules) copy one pointer and allocate no more than the server's did.
type decoder struct {
	in *rules.Settings
}

// translate is the one translation of a Messages request into the
// chat.Request the core takes, in the order of docs/API.md's refusals: the
// body, model, stream, max_tokens (needMax: count_tokens needs none), the
// field policy, thinking and output format, stop_sequences, tools,
// tool_choice, system, messages.
func (d decoder) translate(body []byte, allowed func(string) bool, needMax bool) (Request, error) {
	// A repeated member name is refused at its path with the steps joined
	// by dots (messages.0.content.1.text), as the Messages API writes paths.
	wr, err := rules.ReadWire(body, messages.Decode, rules.DottedPath)
	if err != nil {
		return Request{}, err
	}
	model, err := d.in.Model(wr.Model, allowed)
	if err != nil {
		return Request{}, err
	}
	mr := Request{Chat: chat.Request{API: apiMessages, Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto},
		ParallelToolCalls: true}}
	req := &mr.Chat
	if req.Stream, err = rules.OptionalBool(wr.Stream, "stream", false); err != nil {
		return Request{}, err
	}
	if needMax || wr.MaxTokens.Kind != 0 {
		if n, ok := wr.MaxTokens.Int(); !ok || n < 1 {
			return Request{}, rules.Invalid("max_tokens", "is required and must be a positive integer.")
		}
	}
	if err := checkMessagesFields(&wr); err != nil {
		return Request{}, err
	}
	if req.Thinking, err = rules.MessagesThinking(wr.Thinking, wr.OutputConfig); err != nil {
		return Request{}, err
	}
	if req.Output, err = rules.OutputConfigFormat(wr.OutputConfig); err != nil {
		return Request{}, err
	}
	if mr.stops, err = stopSequences(wr.StopSequences); err != nil {
		return Request{}, err
	}
	if req.Tools, err = d.messagesTools(wr.Tools); err != nil {
		return Request{}, err
	}
	if err := messagesToolChoice(wr.ToolChoice, &mr); err != nil {
		return Request{}, err
	}
	if mr.estimate, err = rules.Converse(req, wr.System, systemText, wr.Messages, d.messagesList); err != nil {
		return Request{}, err
	}
	return mr, nil
}

// checkMessagesFields is the Messages API's field policy: the top-level
// fields it accepts and ignores (the upstream has no such setting) or
// refuses (server-side features the gateway cannot honour), in the order of
// messagesFields; the first refusal wins. Honoured fields are read by
// translate.
func checkMessagesFields(wr *messages.Request) error {
	value := func(name string) wirejson.Value {
		switch name {
		case "temperature":
			return wr.Temperature
		case "top_p":
			return wr.TopP
		case "top_k":
			return wr.TopK
		case "metadata":
			return wr.Metadata
		case "service_tier":
			return wr.ServiceTier
		case "context_management":
			return wr.ContextManagement
		case "cache_control":
			return wr.CacheControl
		case "speed":
			return wr.Speed
		case "inference_geo":
			return wr.InferenceGeo
		}
		return wr.Container
	}
	return rules.CheckFields(messagesFields, value, func(name string) error {
		switch name {
		case "thinking": // read by rules.MessagesThinking; here only its rules.Kind
			if k := wr.Thinking.Kind; k != 0 && k != 'n' && k != '{' {
				return rules.Invalid("thinking", "must be an object.")
			}
		case "output_config":
			return checkOutputConfig(wr.OutputConfig)
		case "mcp_servers":
			if m := wr.MCPServers; !wirejson.Absent(m.Kind) && !(m.IsArray() && len(m.Items) == 0) {
				return rules.Unsupported("mcp_servers", "MCP connector servers run on Anthropic's side; this gateway cannot reach them.")
			}
		}
		return nil
	})
}

// messagesFields are the fields checkMessagesFields checks, in its order:
// the shared rules of those passed on as sent, and thinking, output_config
// and mcp_servers, which the Messages API reads typed.
var messagesFields = rules.Policy("temperature", "top_p", "top_k", "metadata", "service_tier",
	"thinking", "context_management", "cache_control", "speed", "inference_geo", "output_config", "mcp_servers", "container")

// checkOutputConfig accepts output_config.effort (a string, read by
// rules.MessagesThinking) and sends output_config.format through the same
// structured-output decision as chat's response_format and the Responses
// API's text.format.
func checkOutputConfig(oc wirejson.Object[messages.OutputConfig]) error {
	const param = "output_config"
	if ok, err := rules.NullOrObject(param, oc.Kind); !ok {
		return err
	}
	if e := oc.V.Effort; !wirejson.Absent(e.Kind) && !e.IsString() {
		return rules.Invalid(param+".effort", "must be a string.")
	}
	format := oc.V.Format
	if ok, err := rules.NullOrObject(param+".format", format.Kind); !ok {
		return err
	}
	// The Messages API's only structured format is json_schema.
	if t := format.V.Type; !t.IsString() {
		return rules.Invalid(param+".format.type", "is required and must be a string.")
	} else if t.V != "json_schema" {
		return rules.Invalid(param+".format.type", "must be \"json_schema\".")
	}
	return nil
}

func stopSequences(a wirejson.Array[wirejson.String]) ([]string, error) {
	switch a.Kind {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, rules.Invalid("stop_sequences", "must be an array of strings.")
	}
	items := a.Items
	if len(items) > rules.MaxStopSequences {
		return nil, rules.Invalid("stop_sequences", "at most "+strconv.Itoa(rules.MaxStopSequences)+" stop sequences are accepted.")
	}
	var out []string
	for i, it := range items {
		p := "stop_sequences." + strconv.Itoa(i)
		if !it.IsString() {
			return nil, rules.Invalid(p, "must be a string.")
		}
		if strings.TrimSpace(it.V) == "" {
			return nil, rules.Invalid(p, "must contain non-whitespace.")
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
		return "", rules.Invalid("system", "must be a string or an array of text blocks.")
	}
	var parts []string
	for i, b := range c.Items {
		p := "system." + strconv.Itoa(i)
		if !b.IsObject() {
			return "", rules.Invalid(p, "must be an object.")
		}
		if t := b.V.Type; !t.IsString() || t.V != "text" {
			return "", rules.Invalid(p+".type", `must be "text".`)
		}
		if !b.V.Text.IsString() {
			return "", rules.Invalid(p+".text", "is required and must be a string.")
		}
		t := b.V.Text.V
		if strings.HasPrefix(t, billingHeaderPrefix) {
			continue
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n\n"), nil
}

// messagesWords are the Anthropic API's words for the pairing rule.
var messagesWords = rules.PairWords{
	List: "messages",
	Unanswered: func(at int, ids []string) error {
		return rules.Invalid("messages."+strconv.Itoa(at+1), "`tool_use` ids were found without `tool_result` blocks immediately after: "+
			strings.Join(ids, ", ")+". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
	},
	BadID: func(at string) error {
		return rules.Invalid(at+".id", "String should match pattern '^[a-zA-Z0-9_-]+$'")
	},
	RepeatedID: func(at, id string) error {
		return rules.Invalid(at, "`tool_use` ids must be unique: "+id+".")
	},
	Late: func(at string) error {
		return rules.Invalid(at, "`tool_result` blocks must come first in the user message, before any other content.")
	},
	Empty:  func(at string) error { return rules.Invalid(at+".content", "must not be empty.") },
	NoUser: func() error { return rules.Invalid("messages", "must hold a user message.") },
	Final: func(last int) error {
		return rules.Unsupported("messages."+strconv.Itoa(last), "a final assistant message (prefill) cannot be continued by the upstream.")
	},
}

// messagesList translates the messages. Tool results pair with the tool_use
// blocks of the assistant turn before them under the pairing rule
// (rules.PairTurns), in the Anthropic API's words.
func (d decoder) messagesList(a wirejson.Array[wirejson.Object[messages.Message]]) ([]chat.Message, error) {
	return rules.PairTurns(&messagesWords, a, d.messagesTurn)
}

// messagesTurn reads one message: a user or assistant turn into pr, or a
// system message.
func (d decoder) messagesTurn(pr *rules.Pairing, p string, m *messages.Message) (*chat.Message, error) {
	role, err := rules.RequiredString(m.Role, p+".role")
	if err != nil {
		return nil, err
	}
	blocks, err := contentBlocks(p+".content", m.Content)
	if err != nil {
		return nil, err
	}
	switch role {
	case "assistant":
		if err := pr.Assistant(p); err != nil {
			return nil, err
		}
		return nil, d.turnBlocks(pr, p, blocks)
	case "user":
		pr.User(p)
		return nil, d.turnBlocks(pr, p, blocks)
	case "system":
		// Claude Code (2.1.3xx) sends its environment block as a system
		// message inside messages; it is system text at that place, and
		// leaves a pending tool-result pairing as it is.
		text, err := systemBlocksText(p+".content", blocks)
		if err != nil || text == "" {
			return nil, err
		}
		return &chat.Message{Role: chat.RoleSystem, Content: &text}, nil
	}
	return nil, rules.Invalid(p+".role", `must be "user", "assistant" or "system".`)
}

// systemBlocksText joins the text blocks of a system message in messages;
// any other block type is refused.
func systemBlocksText(p string, blocks []*messages.Block) (string, error) {
	var parts []string
	for j, b := range blocks {
		bp := p + "." + strconv.Itoa(j)
		if b.Type.V != "text" {
			return "", rules.Invalid(bp+".type", `must be "text" in a system message.`)
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

// contentBlocks reads content as a string (one text block) or an array of
// blocks, each an object with a string type.
func contentBlocks(p string, c messages.Content) ([]*messages.Block, error) {
	switch c.Kind {
	case '"':
		return []*messages.Block{{Type: wirejson.String{Kind: '"', V: "text"}, Text: wirejson.String{Kind: '"', V: c.Text}}}, nil
	case '[':
	default:
		return nil, rules.Invalid(p, "is required and must be a string or an array of content blocks.")
	}
	out := make([]*messages.Block, len(c.Items))
	for j := range c.Items {
		it := &c.Items[j]
		bp := p + "." + strconv.Itoa(j)
		if !it.IsObject() {
			return nil, rules.Invalid(bp, "must be an object.")
		}
		if !it.V.Type.IsString() {
			return nil, rules.Invalid(bp+".type", "is required and must be a string.")
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
		return "", rules.Invalid(bp+".text", "is required and must be a string.")
	}
	return b.Text.V, nil
}

func refuseBlock(bp string, b *messages.Block) error {
	if d, ok := unsupportedBlocks[b.Type.V]; ok {
		return rules.Unsupported(bp+".type", d)
	}
	return rules.Invalid(bp+".type", "is not a known content block type here.")
}

// turnBlocks reads the blocks of the turn pr started: text blocks are its
// text; an assistant turn's tool_use blocks are its tool calls, and its
// thinking and redacted_thinking blocks from earlier turns are dropped (the
// gateway never emits them; another backend's carry nothing the upstream
// can use); a user turn's tool_result blocks answer the pending calls
// (Claude Code appends system reminders after them, and the user's next
// prompt after a failed round). Any other block is refused.
func (d decoder) turnBlocks(pr *rules.Pairing, p string, blocks []*messages.Block) error {
	assistant := pr.Turn() == rules.TurnAssistant
	for j, b := range blocks {
		bp := p + ".content." + strconv.Itoa(j)
		var err error
		switch typ := b.Type.V; {
		case typ == "text":
			var t string
			if t, err = blockText(bp, b); err == nil {
				pr.AddText(t)
			}
		case typ == "tool_use" && assistant:
			err = toolUse(pr, bp, b)
		case typ == "tool_result" && !assistant:
			err = d.toolResult(pr, bp, b)
		case (typ == "thinking" || typ == "redacted_thinking") && assistant:
		default:
			err = refuseBlock(bp, b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// toolUse reads a tool_use block (at bp) as a call of the assistant turn,
// its input as sent (echoed arguments compare as JSON values).
func toolUse(pr *rules.Pairing, bp string, b *messages.Block) error {
	id, err := rules.RequiredString(b.ID, bp+".id")
	if err != nil {
		return err
	}
	if err := pr.CallID(bp, id); err != nil {
		return err
	}
	name, err := rules.RequiredString(b.Name, bp+".name")
	if err != nil {
		return err
	}
	if b.Input.Kind() != '{' {
		return rules.Invalid(bp+".input", "is required and must be an object.")
	}
	pr.Call(id, name, string(b.Input))
	return nil
}

// toolResult reads a tool_result block (at bp) as the answer to a pending
// call of the user turn.
func (d decoder) toolResult(pr *rules.Pairing, bp string, b *messages.Block) error {
	if err := pr.AnswerAt(bp); err != nil {
		return err
	}
	id, err := rules.RequiredString(b.ToolUseID, bp+".tool_use_id")
	if err != nil {
		return err
	}
	call := pr.Find(id)
	if call == nil || call.Answered {
		if !rules.ValidToolID(id) {
			return rules.Invalid(bp+".tool_use_id", "String should match pattern '^[a-zA-Z0-9_-]+$'")
		}
		return rules.Invalid(bp, "unexpected `tool_use_id` found in `tool_result` blocks: "+id+
			". Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
	}
	content, err := d.toolResultContent(bp, b)
	if err != nil {
		return err
	}
	pr.Answer(call, content)
	return nil
}

// toolResultContent reads a tool_result's content (a string or text blocks,
// joined) and is_error.
func (d decoder) toolResultContent(bp string, b *messages.Block) (string, error) {
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
		return "", rules.Invalid(bp+".content", "must be a string or an array of content blocks.")
	}
	isErr, err := rules.OptionalBool(b.IsError, bp+".is_error", false)
	if err != nil {
		return "", err
	}
	if isErr {
		content = rules.ToolErrorPrefix + content
	}
	if len(content) > d.in.MaxToolResultBytes {
		return "", rules.Refuse(errs.RequestTooLarge, bp+".content", "The tool result exceeds the per-result size limit.")
	}
	return content, nil
}

// Server tools the API runs on Anthropic's side, by the prefix of their type.
var serverToolPrefixes = []string{
	"web_search_", "web_fetch_", "code_execution_", "bash_", "text_editor_", "computer_", "memory_",
	"tool_search_tool_", "mcp_toolset",
}

// messagesTools translates custom tools ({name, description, input_schema,
// strict}) into chat tools under the rules every API's tools have
// (rules.Settings.ToolSet), at the Messages paths: every entry's shape first
// (messagesToolDefs).
func (d decoder) messagesTools(t messages.Tools) ([]chat.Tool, error) {
	return d.in.ToolSet(apiMessages, t.Raw, func() ([]rules.ToolDef, error) { return messagesToolDefs(t.Entries()) })
}

// messagesToolDefs reads the tool entries. Server tools are refused by
// name: the gateway cannot run them, and dropping them would make a side
// call "succeed" with nothing.
func messagesToolDefs(items []wirejson.Object[messages.Tool]) ([]rules.ToolDef, error) {
	defs := make([]rules.ToolDef, 0, len(items))
	for i, item := range items {
		p := "tools." + strconv.Itoa(i)
		if !item.IsObject() {
			return nil, rules.Invalid(p, "must be an object.")
		}
		in := &item.V
		if typ := in.Type; !wirejson.Absent(typ.Kind) && !typ.IsString() {
			return nil, rules.Invalid(p+".type", "must be a string.")
		} else if typ.V != "" && typ.V != "custom" {
			for _, pre := range serverToolPrefixes {
				if strings.HasPrefix(typ.V, pre) {
					name := "this server tool"
					if rules.ValidToolName(typ.V) {
						name = "the server tool " + typ.V
					}
					return nil, rules.Unsupported(p+".type", name+" runs on Anthropic's side and is not available through this gateway; offer a custom tool instead.")
				}
			}
			return nil, rules.Invalid(p+".type", "is not a known tool type.")
		}
		if in.InputSchema.Kind() != '{' {
			return nil, rules.Invalid(p+".input_schema", "is required and must be a JSON schema object.")
		}
		// The schema as the Messages route has always kept it (compact,
		// HTML-escaped: the bytes the tools hash binds).
		params, err := json.Marshal(json.RawMessage(in.InputSchema))
		if err != nil {
			return nil, err
		}
		d := rules.ToolDef{At: p, SchemaAt: p + ".input_schema", Name: in.Name.V, NameOK: in.Name.IsString(), Schema: params}
		switch desc := in.Description; {
		case desc.IsString():
			d.Desc = desc.V
		case !wirejson.Absent(desc.Kind):
			d.DescErr = rules.Invalid(p+".description", "must be a string.")
		}
		if st := in.Strict; !wirejson.Absent(st.Kind) {
			b, err := rules.OptionalBool(st, p+".strict", false)
			d.Strict, d.StrictErr = &b, err
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// messagesToolChoice reads {"type":"auto"|"none"} (and
// disable_parallel_tool_use). "any" and "tool" would need the answer to be a
// tool call, which the upstream cannot be made to produce: refused.
func messagesToolChoice(tc wirejson.Object[messages.ToolChoice], mr *Request) error {
	if ok, err := rules.NullOrObject("tool_choice", tc.Kind); !ok {
		return err
	}
	typ, err := rules.RequiredString(tc.V.Type, "tool_choice.type")
	if err != nil {
		return err
	}
	dp, err := rules.OptionalBool(tc.V.DisableParallelToolUse, "tool_choice.disable_parallel_tool_use", false)
	if err != nil {
		return err
	}
	mr.Chat.ParallelToolCalls = !dp
	switch typ {
	case "auto":
		mr.Chat.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	case "none":
		mr.Chat.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceNone}
	case "any", "tool":
		return rules.Unsupported("tool_choice.type", "the upstream cannot be made to call a tool; only \"auto\" and \"none\" are supported.")
	default:
		return rules.Invalid("tool_choice.type", `must be "auto", "none", "any" or "tool".`)
	}
	return nil
}
