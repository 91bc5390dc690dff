package httpapi

// This file translates and normalizes chat messages and their content.

import (
	"encoding/json"
	"strconv"
	"strings"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// chatMessages validates and normalizes the conversation.
func (s *server) chatMessages(a wirejson.Array[wirejson.Object[wchat.Message]]) ([]chat.Message, error) {
	if !a.IsArray() {
		return nil, invalid("messages", "is required and must be an array.")
	}
	if len(a.Items) == 0 {
		return nil, invalid("messages", "must not be empty.")
	}
	msgs := make([]chat.Message, len(a.Items))
	for i := range a.Items {
		m, err := s.chatMessage("messages["+strconv.Itoa(i)+"]", &a.Items[i])
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func (s *server) chatMessage(p string, item *wirejson.Object[wchat.Message]) (chat.Message, error) {
	if !item.IsObject() {
		return chat.Message{}, invalid(p, "must be an object.")
	}
	f := &item.V
	if !f.Role.IsString() {
		return chat.Message{}, invalid(p+".role", "is required and must be a string.")
	}
	var m chat.Message
	switch role := chat.Role(f.Role.V); role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		m.Role = role
	case "function":
		return chat.Message{}, unsupported(p+".role", "the legacy function role is not supported; use tool messages.")
	default:
		return chat.Message{}, invalid(p+".role", "is not a known role.")
	}
	var err error
	if m.Content, err = chatContent(p+".content", f.Content); err != nil {
		return chat.Message{}, err
	}
	if !wirejson.Absent(f.Name.Kind) && !f.Name.IsString() {
		return chat.Message{}, invalid(p+".name", "must be a string.")
	}
	if m.Role != chat.RoleAssistant && !wirejson.Absent(f.ToolCalls.Kind) {
		return chat.Message{}, invalid(p+".tool_calls", "only assistant messages carry tool calls.")
	}
	switch m.Role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser:
		if m.Content == nil {
			return chat.Message{}, invalid(p+".content", "is required.")
		}
		m.Name = f.Name.V
	case chat.RoleAssistant:
		if err := chatAssistant(p, f, &m); err != nil {
			return chat.Message{}, err
		}
	case chat.RoleTool:
		if m.ToolCallID, err = wireReqString(f.ToolCallID, p+".tool_call_id"); err != nil {
			return chat.Message{}, err
		}
		if m.Content != nil && len(*m.Content) > s.cfg.MaxToolResultBytes {
			return chat.Message{}, refuse(errs.RequestTooLarge, p+".content", "The tool result exceeds the per-result size limit.")
		}
	}
	return m, nil
}

// chatAssistant reads an assistant turn as clients echo it back: optional
// refusal, name, annotations and null audio are accepted and dropped.
func chatAssistant(p string, f *wchat.Message, m *chat.Message) error {
	if !wirejson.Absent(f.Refusal.Kind) && !f.Refusal.IsString() {
		return invalid(p+".refusal", "must be a string.")
	}
	if k := f.Annotations.Kind; !wirejson.Absent(k) && k != '[' {
		return invalid(p+".annotations", "must be an array.")
	}
	if !wirejson.Absent(f.Audio.Kind) {
		return unsupported(p+".audio", "audio responses are not supported.")
	}
	if !wirejson.Absent(f.FunctionCall.Kind) {
		return unsupported(p+".function_call", "legacy function calling is not supported; use tool_calls.")
	}
	if tc := &f.ToolCalls; !wirejson.Absent(tc.Kind) {
		if !tc.IsArray() {
			return invalid(p+".tool_calls", "must be an array.")
		}
		for j := range tc.Items {
			call, err := chatToolCall(p+".tool_calls["+strconv.Itoa(j)+"]", &tc.Items[j])
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

func chatToolCall(p string, item *wirejson.Object[wchat.ToolCall]) (chat.ToolCall, error) {
	if !item.IsObject() {
		return chat.ToolCall{}, invalid(p, "must be an object.")
	}
	f := &item.V
	id, err := wireReqString(f.ID, p+".id")
	if err != nil {
		return chat.ToolCall{}, err
	}
	switch t := f.Type; {
	case wirejson.Absent(t.Kind):
	case t.IsString():
		if t.V != "function" {
			return chat.ToolCall{}, unsupported(p+".type", "only function tool calls are supported.")
		}
	default:
		return chat.ToolCall{}, invalid(p+".type", "must be a string.")
	}
	if !f.Function.IsObject() {
		return chat.ToolCall{}, invalid(p+".function", "is required and must be an object.")
	}
	fn := &f.Function.V
	name, err := wireReqString(fn.Name, p+".function.name")
	if err != nil {
		return chat.ToolCall{}, err
	}
	if !fn.Arguments.IsString() {
		return chat.ToolCall{}, invalid(p+".function.arguments", "is required and must be a string.")
	}
	return chat.ToolCall{ID: id, Name: name, Arguments: fn.Arguments.V}, nil
}

// Content part types the gateway knows but cannot honour.
var unsupportedParts = map[string]bool{
	"image_url": true, "input_audio": true, "file": true, "refusal": true,
}

// chatContent reads a string, null/absent (nil) or an array of text parts,
// joined with no separator.
func chatContent(p string, c wchat.Content) (*string, error) {
	switch c.Kind {
	case 0, 'n':
		return nil, nil
	case '"':
		return &c.Text, nil
	case '[':
	default:
		return nil, invalid(p, "must be a string, an array of text parts, or null.")
	}
	s, err := joinTextOf(p, c.Items, "content", func(t string) bool { return t == "text" }, unsupportedParts)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// joinParts is joinTextOf an array of parts as sent.
func joinParts(p string, raw json.RawMessage, noun string, text func(string) bool, known map[string]bool) (string, error) {
	return joinTextOf(p, wchat.Parts(raw), noun, text, known)
}

// joinTextOf joins the text of an array of text parts with no separator.
// text says which part types carry text; a type in known is one the API
// defines but the gateway cannot honour (unsupported), any other is invalid.
// noun names the parts in refusals ("content", "output").
func joinTextOf(p string, parts []wirejson.Object[wchat.Part], noun string, text func(string) bool, known map[string]bool) (string, error) {
	var b strings.Builder
	for j := range parts {
		pp := p + "[" + strconv.Itoa(j) + "]"
		if !parts[j].IsObject() {
			return "", invalid(pp, "must be an object.")
		}
		f := &parts[j].V
		if !f.Type.IsString() {
			return "", invalid(pp+".type", "is required and must be a string.")
		}
		switch t := f.Type.V; {
		case text(t):
		case known[t]:
			return "", unsupported(pp+".type", "only text "+noun+" parts are supported.")
		default:
			return "", invalid(pp+".type", "is not a known "+noun+" part type.")
		}
		if !f.Text.IsString() {
			return "", invalid(pp+".text", "is required and must be a string.")
		}
		b.WriteString(f.Text.V)
	}
	return b.String(), nil
}
