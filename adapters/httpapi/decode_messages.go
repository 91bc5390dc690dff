package httpapi

// This file decodes and normalizes chat messages and their content.

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// decodeMessages validates and normalizes the conversation.
func (s *server) decodeMessages(raw json.RawMessage) ([]chat.Message, error) {
	if kindOf(raw) != kindArray {
		return nil, invalid("messages", "is required and must be an array.")
	}
	items := elems(raw)
	if len(items) == 0 {
		return nil, invalid("messages", "must not be empty.")
	}
	msgs := make([]chat.Message, len(items))
	for i, item := range items {
		m, err := s.decodeMessage("messages["+strconv.Itoa(i)+"]", item)
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func (s *server) decodeMessage(p string, raw json.RawMessage) (chat.Message, error) {
	if kindOf(raw) != kindObject {
		return chat.Message{}, invalid(p, "must be an object.")
	}
	f := fields(raw)
	if kindOf(f["role"]) != kindString {
		return chat.Message{}, invalid(p+".role", "is required and must be a string.")
	}
	var m chat.Message
	switch role := chat.Role(str(f["role"])); role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		m.Role = role
	case "function":
		return chat.Message{}, unsupported(p+".role", "the legacy function role is not supported; use tool messages.")
	default:
		return chat.Message{}, invalid(p+".role", "is not a known role.")
	}
	var err error
	if m.Content, err = decodeContent(p+".content", f["content"]); err != nil {
		return chat.Message{}, err
	}
	name, err := optString(f["name"], p+".name")
	if err != nil {
		return chat.Message{}, err
	}
	if m.Role != chat.RoleAssistant && !absent(f["tool_calls"]) {
		return chat.Message{}, invalid(p+".tool_calls", "only assistant messages carry tool calls.")
	}
	switch m.Role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser:
		if m.Content == nil {
			return chat.Message{}, invalid(p+".content", "is required.")
		}
		m.Name = name
	case chat.RoleAssistant:
		if err := decodeAssistant(p, f, &m); err != nil {
			return chat.Message{}, err
		}
	case chat.RoleTool:
		if m.ToolCallID, err = reqString(f["tool_call_id"], p+".tool_call_id"); err != nil {
			return chat.Message{}, err
		}
		if m.Content != nil && len(*m.Content) > s.cfg.MaxToolResultBytes {
			return chat.Message{}, refuse(errs.RequestTooLarge, p+".content", "The tool result exceeds the per-result size limit.")
		}
	}
	return m, nil
}

// decodeAssistant reads an assistant turn as clients echo it back: optional
// refusal, name, annotations and null audio are accepted and dropped.
func decodeAssistant(p string, f map[string]json.RawMessage, m *chat.Message) error {
	if _, err := optString(f["refusal"], p+".refusal"); err != nil {
		return err
	}
	if a := f["annotations"]; !absent(a) && kindOf(a) != kindArray {
		return invalid(p+".annotations", "must be an array.")
	}
	if !absent(f["audio"]) {
		return unsupported(p+".audio", "audio responses are not supported.")
	}
	if !absent(f["function_call"]) {
		return unsupported(p+".function_call", "legacy function calling is not supported; use tool_calls.")
	}
	if tc := f["tool_calls"]; !absent(tc) {
		if kindOf(tc) != kindArray {
			return invalid(p+".tool_calls", "must be an array.")
		}
		for j, item := range elems(tc) {
			call, err := decodeToolCall(p+".tool_calls["+strconv.Itoa(j)+"]", item)
			if err != nil {
				return err
			}
			m.ToolCalls = append(m.ToolCalls, call)
		}
	}
	if len(m.ToolCalls) > 0 && m.Content != nil && *m.Content == "" {
		m.Content = nil
	}
	if m.Content == nil && len(m.ToolCalls) == 0 {
		return invalid(p+".content", "an assistant message needs content or tool_calls.")
	}
	return nil
}

func decodeToolCall(p string, raw json.RawMessage) (chat.ToolCall, error) {
	if kindOf(raw) != kindObject {
		return chat.ToolCall{}, invalid(p, "must be an object.")
	}
	f := fields(raw)
	id, err := reqString(f["id"], p+".id")
	if err != nil {
		return chat.ToolCall{}, err
	}
	switch t := f["type"]; kindOf(t) {
	case kindInvalid, kindNull:
	case kindString:
		if str(t) != "function" {
			return chat.ToolCall{}, unsupported(p+".type", "only function tool calls are supported.")
		}
	default:
		return chat.ToolCall{}, invalid(p+".type", "must be a string.")
	}
	fn := f["function"]
	if kindOf(fn) != kindObject {
		return chat.ToolCall{}, invalid(p+".function", "is required and must be an object.")
	}
	ff := fields(fn)
	name, err := reqString(ff["name"], p+".function.name")
	if err != nil {
		return chat.ToolCall{}, err
	}
	if kindOf(ff["arguments"]) != kindString {
		return chat.ToolCall{}, invalid(p+".function.arguments", "is required and must be a string.")
	}
	return chat.ToolCall{ID: id, Name: name, Arguments: str(ff["arguments"])}, nil
}

// Content part types the gateway knows but cannot honour.
var unsupportedParts = map[string]bool{
	"image_url": true, "input_audio": true, "file": true, "refusal": true,
}

// decodeContent reads a string, null/absent (nil) or an array of text parts,
// joined with no separator.
func decodeContent(p string, raw json.RawMessage) (*string, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return nil, nil
	case kindString:
		s := str(raw)
		return &s, nil
	case kindArray:
	default:
		return nil, invalid(p, "must be a string, an array of text parts, or null.")
	}
	s, err := joinParts(p, raw, "content", func(t string) bool { return t == "text" }, unsupportedParts)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// joinParts joins the text of an array of text parts with no separator.
// text says which part types carry text; a type in known is one the API
// defines but the gateway cannot honour (unsupported), any other is invalid.
// noun names the parts in refusals ("content", "output").
func joinParts(p string, raw json.RawMessage, noun string, text func(string) bool, known map[string]bool) (string, error) {
	var b strings.Builder
	for j, part := range elems(raw) {
		pp := p + "[" + strconv.Itoa(j) + "]"
		if kindOf(part) != kindObject {
			return "", invalid(pp, "must be an object.")
		}
		f := fields(part)
		if kindOf(f["type"]) != kindString {
			return "", invalid(pp+".type", "is required and must be a string.")
		}
		switch t := str(f["type"]); {
		case text(t):
		case known[t]:
			return "", unsupported(pp+".type", "only text "+noun+" parts are supported.")
		default:
			return "", invalid(pp+".type", "is not a known "+noun+" part type.")
		}
		if kindOf(f["text"]) != kindString {
			return "", invalid(pp+".text", "is required and must be a string.")
		}
		b.WriteString(str(f["text"]))
	}
	return b.String(), nil
}
