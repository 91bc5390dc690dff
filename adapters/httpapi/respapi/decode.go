package respapi

import (
	"encoding/json"
	"strconv"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// Request is a translated Responses request: the chat request for the core
// (Chat) and what the response object must echo.
type Request struct {
	Chat chat.Request
	// tools, offered and dropped are the translated tool set's (respTools),
	// which the memory of tool sets shares between requests: never written.
	// tools maps the chat name of every offered tool back to the client's.
	tools map[string]respTool
	// offered is the client's definitions of the tools offered upstream, in
	// order, echoed as the response's "tools"; built-in tools the upstream
	// cannot run are absent from it.
	offered []json.RawMessage
	// dropped lists the types of built-in tools that were not offered.
	dropped      []string
	toolChoice   json.RawMessage
	instructions *string
	metadata     json.RawMessage
	temperature  json.RawMessage
	topP         json.RawMessage
	maxOutput    json.RawMessage
	user         string
	reasoning    json.RawMessage
	// text is the client's text object, echoed when it asks for a
	// structured output.
	text json.RawMessage
}

// Dropped lists the types of the built-in tools that were not offered
// upstream (the transport logs them).
func (rr *Request) Dropped() []string { return rr.dropped }

// Decode validates a whole Responses request and translates it under the
// owner's settings in, for a caller that may use the models allowed.
// Nothing reaches the service unless it returns no error.
func Decode(in *rules.Settings, body []byte, allowed func(string) bool) (Request, error) {
	wr, err := readResponsesBody(body)
	if err != nil {
		return Request{}, err
	}
	return translateResponses(in, &wr, allowed)
}

// readResponsesBody reads the body once, strictly (wire/responses); a body
// it would not read is refused as every API refuses it (rules.WireRefusal), a
// repeated member name at its path as the OpenAI APIs write paths
// (rules.IndexedPath).
func readResponsesBody(body []byte) (responses.Request, error) {
	wr, err := responses.Decode(body)
	if err != nil {
		return wr, rules.WireRefusal(body, err, rules.IndexedPath)
	}
	return wr, nil
}

// translateResponses is the one translation of a Responses request into the
// chat.Request the core takes, in the order of docs/API.md's refusals:
// model, stream, parallel_tool_calls, the field policy, reasoning.effort and
// text.format, tools, tool_choice, instructions, input.
func translateResponses(in *rules.Settings, wr *responses.Request, allowed func(string) bool) (Request, error) {
	model, err := in.Model(wr.Model, allowed)
	if err != nil {
		return Request{}, err
	}
	rr := Request{Chat: chat.Request{API: "responses", Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}}
	req := &rr.Chat
	if req.Stream, err = rules.OptionalBool(wr.Stream, "stream", false); err != nil {
		return Request{}, err
	}
	if req.ParallelToolCalls, err = rules.OptionalBool(wr.ParallelToolCalls, "parallel_tool_calls", true); err != nil {
		return Request{}, err
	}
	if err := checkResponsesFields(wr); err != nil {
		return Request{}, err
	}
	if req.Thinking, err = rules.ResponsesReasoning(wr.Reasoning); err != nil {
		return Request{}, err
	}
	if req.Output, err = rules.TextFormat(wr.Text); err != nil {
		return Request{}, err
	}
	if req.Output.Structured() {
		rr.text = json.RawMessage(wr.Text.Raw)
	}
	f := wr.Fields // the settings the response object echoes as sent
	rr.metadata, rr.temperature = json.RawMessage(f["metadata"].Raw), json.RawMessage(f["temperature"].Raw)
	rr.topP, rr.maxOutput = json.RawMessage(f["top_p"].Raw), json.RawMessage(f["max_output_tokens"].Raw)
	rr.reasoning = json.RawMessage(wr.Reasoning.Raw)
	rr.user = f["user"].Text() // the field rules.Policy refused any other rules.Kind but null
	if err := responsesTools(in, wr.Tools, &rr); err != nil {
		return Request{}, err
	}
	if req.ToolChoice, err = responsesToolChoice(wr.ToolChoice, rr.Chat.Tools); err != nil {
		return Request{}, err
	}
	rr.toolChoice = json.RawMessage(wr.ToolChoice.Raw)
	if ins := wr.Instructions; !responses.Absent(ins.Kind) {
		if !ins.IsString() {
			return Request{}, rules.Invalid("instructions", "must be a string.")
		}
		v := ins.V
		rr.instructions = &v
		if v != "" {
			req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: &v})
		}
	}
	msgs, err := responsesInput(in, wr.Input)
	if err != nil {
		return Request{}, err
	}
	req.Messages = append(req.Messages, msgs...)
	if len(req.Messages) == 0 {
		return Request{}, rules.Invalid("input", "must not be empty.")
	}
	return rr, nil
}

// checkResponsesFields applies responsesFieldPolicy to the fields, in its
// order; the first refusal wins. reasoning is read typed but checked like
// any member (as sent); text is checked typed (checkResponsesText).
func checkResponsesFields(wr *responses.Request) error {
	value := func(name string) wirejson.Value {
		if name == "reasoning" {
			return wr.Reasoning.Value
		}
		return wr.Fields[name]
	}
	return rules.CheckFields(responsesFieldPolicy, value, func(name string) error {
		return checkResponsesText(name, wr.Text) // text: the one rule without a check here
	})
}

// responsesFieldPolicy lists the top-level Responses fields that are accepted
// and ignored, or refused. Honoured fields (model, input, instructions,
// stream, tools, tool_choice, parallel_tool_calls) are read by
// translateResponses; metadata, user, temperature, top_p,
// max_output_tokens and reasoning are also echoed in the response object.
// checkResponsesFields passes the fields in this order.
var responsesFieldPolicy = rules.Policy(
	// refused: the body is the Messages API's
	"system",
	// accepted, not forwarded: the upstream has no such setting
	"temperature", "top_p", "max_output_tokens", "max_tool_calls", "metadata", "user", "reasoning", "include",
	"prompt_cache_key", "prompt_cache_retention", "client_metadata", "safety_identifier", "service_tier",
	"stream_options", "truncation", "store", "text",
	// refused: server-side state and features the gateway cannot honour
	"previous_response_id", "conversation", "prompt", "background", "top_logprobs")

// checkResponsesText checks text.format's type (and text.verbosity); the
// structured formats are read by rules.TextFormat.
func checkResponsesText(param string, text wirejson.Echoed[responses.Text]) error {
	if ok, err := rules.NullOrObject(param, text.Kind()); !ok {
		return err
	}
	if v := text.V.Verbosity; !wirejson.Absent(v.Kind) && !v.IsString() {
		return rules.Invalid(param+".verbosity", "must be a string.")
	}
	switch f := text.V.Format; f.Kind {
	case 0, rules.KindNull:
		return nil
	case rules.KindObject:
		return rules.OutputFormatType(param+".format.type", f.V.Type, "text format")
	}
	return rules.Invalid(param+".format", "must be an object.")
}

// responsesInput translates input (a string, or a list of items) into
// messages. Consecutive function_call items (and an assistant message right
// before them) become one assistant message with tool calls, as the gateway
// issued them; function_call_output items become tool messages.
func responsesInput(st *rules.Settings, in responses.Input) ([]chat.Message, error) {
	switch in.Kind {
	case '"':
		v := in.Text
		return []chat.Message{{Role: chat.RoleUser, Content: &v}}, nil
	case '[':
	default:
		return nil, rules.Invalid("input", "is required and must be a string or an array of items.")
	}
	var msgs []chat.Message
	// open is the index in msgs of the assistant message that function_call
	// items extend, or -1.
	open := -1
	for i := range in.Items {
		p := "input[" + strconv.Itoa(i) + "]"
		if !in.Items[i].IsObject() {
			return nil, rules.Invalid(p, "must be an object.")
		}
		it := &in.Items[i].V
		typ := "message"
		if t := it.Type; !responses.Absent(t.Kind) {
			if !t.IsString() {
				return nil, rules.Invalid(p+".type", "must be a string.")
			}
			typ = t.V
		}
		switch typ {
		case "message":
			m, err := inputMessage(p, it)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
			open = -1
			if m.Role == chat.RoleAssistant {
				open = len(msgs) - 1
			}
		case "function_call", "custom_tool_call":
			call, err := inputCall(p, it, typ == "custom_tool_call")
			if err != nil {
				return nil, err
			}
			if open < 0 {
				msgs = append(msgs, chat.Message{Role: chat.RoleAssistant})
				open = len(msgs) - 1
			}
			msgs[open].ToolCalls = append(msgs[open].ToolCalls, call)
			if c := msgs[open].Content; c != nil && *c == "" {
				msgs[open].Content = nil
			}
		case "function_call_output", "custom_tool_call_output":
			m, err := inputOutput(st, p, it)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
			open = -1
		case "reasoning":
			// The gateway never returns reasoning items; one a client sends
			// (from another provider's answer) carries nothing the upstream
			// could use and is dropped.
			continue
		case "item_reference":
			return nil, rules.Unsupported(p+".type", "item references need server-side state, which is not kept.")
		default:
			return nil, rules.Unsupported(p+".type", "this input item type is not supported.")
		}
	}
	for i, m := range msgs {
		if m.Role == chat.RoleAssistant && m.Content == nil && len(m.ToolCalls) == 0 {
			return nil, rules.Invalid("input", "an assistant message needs content or function calls (message "+strconv.Itoa(i)+").")
		}
	}
	return msgs, nil
}

// Input content part types the gateway knows but cannot honour.
var unsupportedInputParts = map[string]bool{
	"input_image": true, "input_file": true, "input_audio": true, "refusal": true,
}

func inputMessage(p string, it *responses.Item) (chat.Message, error) {
	if !it.Role.IsString() {
		return chat.Message{}, rules.Invalid(p+".role", "is required and must be a string.")
	}
	var m chat.Message
	switch role := chat.Role(it.Role.V); role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser, chat.RoleAssistant:
		m.Role = role
	default:
		return chat.Message{}, rules.Invalid(p+".role", "must be user, system, developer or assistant.")
	}
	switch it.Content.Kind {
	case '"':
		v := it.Content.Text
		m.Content = &v
		return m, nil
	case '[':
	default:
		return chat.Message{}, rules.Invalid(p+".content", "is required and must be a string or an array of content parts.")
	}
	v, err := joinTextParts(p+".content", it.Content.Items, "content", true)
	if err != nil {
		return chat.Message{}, err
	}
	m.Content = &v
	return m, nil
}

// inputCall reads an echoed function_call (or custom_tool_call) item into
// the tool call the gateway issued: the same public id, the qualified chat
// name, and the argument string (for a custom tool, the JSON object
// {"input": …} it was issued as).
func inputCall(p string, it *responses.Item, custom bool) (chat.ToolCall, error) {
	id, err := rules.RequiredString(it.CallID, p+".call_id")
	if err != nil {
		return chat.ToolCall{}, err
	}
	name, err := rules.RequiredString(it.Name, p+".name")
	if err != nil {
		return chat.ToolCall{}, err
	}
	ns, err := wireOptString(it.Namespace, p+".namespace")
	if err != nil {
		return chat.ToolCall{}, err
	}
	if ns != "" {
		name = ns + namespaceSep + name
	}
	if custom {
		if it.Input.Kind() != '"' {
			return chat.ToolCall{}, rules.Invalid(p+".input", "is required and must be a string.")
		}
		args := rules.MustJSON(map[string]json.RawMessage{"input": json.RawMessage(it.Input)})
		return chat.ToolCall{ID: id, Name: name, Arguments: string(args)}, nil
	}
	if !it.Arguments.IsString() {
		return chat.ToolCall{}, rules.Invalid(p+".arguments", "is required and must be a string.")
	}
	return chat.ToolCall{ID: id, Name: name, Arguments: it.Arguments.V}, nil
}

// inputOutput reads a function_call_output item as a tool message. The
// output is a string or a list of text parts (joined).
func inputOutput(in *rules.Settings, p string, it *responses.Item) (chat.Message, error) {
	id, err := rules.RequiredString(it.CallID, p+".call_id")
	if err != nil {
		return chat.Message{}, err
	}
	m := chat.Message{Role: chat.RoleTool, ToolCallID: id}
	switch out := it.Output; out.Kind {
	case '"':
		v := out.Text
		m.Content = &v
	case '[':
		v, err := joinTextParts(p+".output", out.Items, "output", false)
		if err != nil {
			return chat.Message{}, err
		}
		m.Content = &v
	default:
		return chat.Message{}, rules.Invalid(p+".output", "is required and must be a string or an array of text parts.")
	}
	if len(*m.Content) > in.MaxToolResultBytes {
		return chat.Message{}, rules.Refuse(errs.RequestTooLarge, p+".output", "The tool result exceeds the per-result size limit.")
	}
	return m, nil
}

// joinTextParts joins the text of a list of input_text/output_text parts (and
// "text" where plainText) with no separator, as chat's joinParts does; noun
// names the parts in refusals ("content", "output"). Non-text parts the API
// knows are unsupported; unknown ones invalid.
func joinTextParts(p string, parts []responses.Object[responses.Part], noun string, plainText bool) (string, error) {
	return rules.JoinTextOf(p, parts, noun, func(t string) bool {
		return t == "input_text" || t == "output_text" || plainText && t == "text"
	}, unsupportedInputParts)
}

// wireOptString reads an optional string: "" when absent or null.
func wireOptString(v responses.String, param string) (string, error) {
	switch {
	case responses.Absent(v.Kind):
		return "", nil
	case v.IsString():
		return v.V, nil
	}
	return "", rules.Invalid(param, "must be a string.")
}
