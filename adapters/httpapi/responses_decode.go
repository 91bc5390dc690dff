package httpapi

import (
	"encoding/json"
	"strconv"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// The Responses API (POST /v1/responses) is served statelessly on the same
// core as chat completions: its request is translated into a chat.Request
// (input items → messages, Responses tools → chat tools), the same app turn
// runs, and its deltas are rendered as a response object or the Responses
// event stream. docs/RESPONSES.md lists every field and how it is treated.

// respRequest is a translated Responses request: the chat request for the
// core and what the response object must echo.
type respRequest struct {
	chat chat.Request
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

// decodeResponsesRequest validates a whole Responses request and translates
// it. Nothing reaches the service unless it returns no error.
func (s *server) decodeResponsesRequest(body []byte, allowed func(string) bool) (respRequest, error) {
	top, model, err := s.decodeTop(body, allowed)
	if err != nil {
		return respRequest{}, err
	}
	rr := respRequest{chat: chat.Request{API: "responses", Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}}
	req := &rr.chat
	if req.Stream, err = optBool(top["stream"], "stream", false); err != nil {
		return respRequest{}, err
	}
	if req.ParallelToolCalls, err = optBool(top["parallel_tool_calls"], "parallel_tool_calls", true); err != nil {
		return respRequest{}, err
	}
	if err := checkFields(top, responsesFieldPolicy); err != nil {
		return respRequest{}, err
	}
	if req.Thinking, err = decodeResponsesReasoning(top["reasoning"]); err != nil {
		return respRequest{}, err
	}
	if req.Output, err = decodeTextFormat(top["text"]); err != nil {
		return respRequest{}, err
	}
	if req.Output.Structured() {
		rr.text = top["text"]
	}
	rr.metadata, rr.temperature, rr.topP = top["metadata"], top["temperature"], top["top_p"]
	rr.maxOutput, rr.reasoning = top["max_output_tokens"], top["reasoning"]
	if rr.user, err = optString(top["user"], "user"); err != nil {
		return respRequest{}, err
	}
	if err := s.decodeResponsesTools(top["tools"], &rr); err != nil {
		return respRequest{}, err
	}
	if req.ToolChoice, err = decodeResponsesToolChoice(top["tool_choice"], &rr); err != nil {
		return respRequest{}, err
	}
	rr.toolChoice = top["tool_choice"]
	if ins := top["instructions"]; !absent(ins) {
		if kindOf(ins) != kindString {
			return respRequest{}, invalid("instructions", "must be a string.")
		}
		v := str(ins)
		rr.instructions = &v
		if v != "" {
			req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: &v})
		}
	}
	msgs, err := s.decodeInput(top["input"], &rr)
	if err != nil {
		return respRequest{}, err
	}
	req.Messages = append(req.Messages, msgs...)
	if len(req.Messages) == 0 {
		return respRequest{}, invalid("input", "must not be empty.")
	}
	return rr, nil
}

// responsesFieldPolicy lists the top-level Responses fields that are accepted
// and ignored, or refused. Honoured fields (model, input, instructions,
// stream, tools, tool_choice, parallel_tool_calls) are read by
// decodeResponsesRequest; metadata, user, temperature, top_p,
// max_output_tokens and reasoning are also echoed in the response object.
var responsesFieldPolicy = policy(
	// refused: the body is the Messages API's
	"system",
	// accepted, not forwarded: the upstream has no such setting
	"temperature", "top_p", "max_output_tokens", "max_tool_calls", "metadata", "user", "reasoning", "include",
	"prompt_cache_key", "prompt_cache_retention", "client_metadata", "safety_identifier", "service_tier",
	"stream_options", "truncation", "store", "text",
	// refused: server-side state and features the gateway cannot honour
	"previous_response_id", "conversation", "prompt", "background", "top_logprobs")

func checkTruncation(param string, raw json.RawMessage) error {
	switch kindOf(raw) {
	case kindNull:
		return nil
	case kindString:
		if v := str(raw); v == "disabled" || v == "auto" {
			return nil
		}
	}
	return invalid(param, `must be "disabled" or "auto".`)
}

// checkResponsesText checks text.format's type (and text.verbosity); the
// structured formats are read by decodeTextFormat.
func checkResponsesText(param string, raw json.RawMessage) error {
	f, ok, err := nullOrObject(param, raw)
	if !ok {
		return err
	}
	if v := f["verbosity"]; !absent(v) && kindOf(v) != kindString {
		return invalid(param+".verbosity", "must be a string.")
	}
	format := f["format"]
	switch kindOf(format) {
	case kindInvalid, kindNull:
		return nil
	case kindObject:
	default:
		return invalid(param+".format", "must be an object.")
	}
	return checkOutputFormatType(param+".format.type", fields(format)["type"], "text format")
}

// decodeInput translates input (a string, or a list of items) into messages.
// Consecutive function_call items (and an assistant message right before
// them) become one assistant message with tool calls, as the gateway issued
// them; function_call_output items become tool messages.
func (s *server) decodeInput(raw json.RawMessage, rr *respRequest) ([]chat.Message, error) {
	switch kindOf(raw) {
	case kindString:
		v := str(raw)
		return []chat.Message{{Role: chat.RoleUser, Content: &v}}, nil
	case kindArray:
	default:
		return nil, invalid("input", "is required and must be a string or an array of items.")
	}
	var msgs []chat.Message
	// open is the index in msgs of the assistant message that function_call
	// items extend, or -1.
	open := -1
	for i, item := range elems(raw) {
		p := "input[" + strconv.Itoa(i) + "]"
		if kindOf(item) != kindObject {
			return nil, invalid(p, "must be an object.")
		}
		f := fields(item)
		typ := "message"
		if t := f["type"]; !absent(t) {
			if kindOf(t) != kindString {
				return nil, invalid(p+".type", "must be a string.")
			}
			typ = str(t)
		}
		switch typ {
		case "message":
			m, err := decodeInputMessage(p, f)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
			open = -1
			if m.Role == chat.RoleAssistant {
				open = len(msgs) - 1
			}
		case "function_call", "custom_tool_call":
			call, err := decodeInputCall(p, f, typ == "custom_tool_call", rr)
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
			m, err := s.decodeInputOutput(p, f)
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
			return nil, unsupported(p+".type", "item references need server-side state, which is not kept.")
		default:
			return nil, unsupported(p+".type", "this input item type is not supported.")
		}
	}
	for i, m := range msgs {
		if m.Role == chat.RoleAssistant && m.Content == nil && len(m.ToolCalls) == 0 {
			return nil, invalid("input", "an assistant message needs content or function calls (message "+strconv.Itoa(i)+").")
		}
	}
	return msgs, nil
}

// Input content part types the gateway knows but cannot honour.
var unsupportedInputParts = map[string]bool{
	"input_image": true, "input_file": true, "input_audio": true, "refusal": true,
}

func decodeInputMessage(p string, f map[string]json.RawMessage) (chat.Message, error) {
	if kindOf(f["role"]) != kindString {
		return chat.Message{}, invalid(p+".role", "is required and must be a string.")
	}
	var m chat.Message
	switch role := chat.Role(str(f["role"])); role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser, chat.RoleAssistant:
		m.Role = role
	default:
		return chat.Message{}, invalid(p+".role", "must be user, system, developer or assistant.")
	}
	raw := f["content"]
	switch kindOf(raw) {
	case kindString:
		v := str(raw)
		m.Content = &v
		return m, nil
	case kindArray:
	default:
		return chat.Message{}, invalid(p+".content", "is required and must be a string or an array of content parts.")
	}
	v, err := joinTextParts(p+".content", raw, "content", true)
	if err != nil {
		return chat.Message{}, err
	}
	m.Content = &v
	return m, nil
}

// decodeInputCall reads an echoed function_call (or custom_tool_call) item
// into the tool call the gateway issued: the same public id, the qualified
// chat name, and the argument string (for a custom tool, the JSON object
// {"input": …} it was issued as).
func decodeInputCall(p string, f map[string]json.RawMessage, custom bool, rr *respRequest) (chat.ToolCall, error) {
	id, err := reqString(f["call_id"], p+".call_id")
	if err != nil {
		return chat.ToolCall{}, err
	}
	name, err := reqString(f["name"], p+".name")
	if err != nil {
		return chat.ToolCall{}, err
	}
	ns, err := optString(f["namespace"], p+".namespace")
	if err != nil {
		return chat.ToolCall{}, err
	}
	if ns != "" {
		name = ns + namespaceSep + name
	}
	if custom {
		if kindOf(f["input"]) != kindString {
			return chat.ToolCall{}, invalid(p+".input", "is required and must be a string.")
		}
		args := mustJSON(map[string]json.RawMessage{"input": f["input"]})
		return chat.ToolCall{ID: id, Name: name, Arguments: string(args)}, nil
	}
	if kindOf(f["arguments"]) != kindString {
		return chat.ToolCall{}, invalid(p+".arguments", "is required and must be a string.")
	}
	return chat.ToolCall{ID: id, Name: name, Arguments: str(f["arguments"])}, nil
}

// decodeInputOutput reads a function_call_output item as a tool message. The
// output is a string or a list of text parts (joined).
func (s *server) decodeInputOutput(p string, f map[string]json.RawMessage) (chat.Message, error) {
	id, err := reqString(f["call_id"], p+".call_id")
	if err != nil {
		return chat.Message{}, err
	}
	m := chat.Message{Role: chat.RoleTool, ToolCallID: id}
	raw := f["output"]
	switch kindOf(raw) {
	case kindString:
		v := str(raw)
		m.Content = &v
	case kindArray:
		v, err := joinTextParts(p+".output", raw, "output", false)
		if err != nil {
			return chat.Message{}, err
		}
		m.Content = &v
	default:
		return chat.Message{}, invalid(p+".output", "is required and must be a string or an array of text parts.")
	}
	if len(*m.Content) > s.cfg.MaxToolResultBytes {
		return chat.Message{}, refuse(errs.RequestTooLarge, p+".output", "The tool result exceeds the per-result size limit.")
	}
	return m, nil
}

// joinTextParts joins the text of a list of input_text/output_text parts (and
// "text" where plainText); noun names the parts in refusals ("content",
// "output"). Non-text parts the API knows are unsupported; unknown ones invalid.
func joinTextParts(p string, raw json.RawMessage, noun string, plainText bool) (string, error) {
	text := func(t string) bool { return t == "input_text" || t == "output_text" || plainText && t == "text" }
	return joinParts(p, raw, noun, text, unsupportedInputParts)
}
