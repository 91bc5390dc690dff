package chatapi

// This file translates and normalizes chat messages and their content.

import (
	"strconv"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// chatMessages validates and normalizes the conversation.
func chatMessages(in *rules.Settings, a wirejson.Array[wirejson.Object[wchat.Message]]) ([]chat.Message, error) {
	if !a.IsArray() {
		return nil, rules.Invalid("messages", "is required and must be an array.")
	}
	if len(a.Items) == 0 {
		return nil, rules.Invalid("messages", "must not be empty.")
	}
	msgs := make([]chat.Message, len(a.Items))
	for i := range a.Items {
		m, err := chatMessage(in, "messages["+strconv.Itoa(i)+"]", &a.Items[i])
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	return msgs, nil
}

func chatMessage(in *rules.Settings, p string, item *wirejson.Object[wchat.Message]) (chat.Message, error) {
	if !item.IsObject() {
		return chat.Message{}, rules.Invalid(p, "must be an object.")
	}
	f := &item.V
	if !f.Role.IsString() {
		return chat.Message{}, rules.Invalid(p+".role", "is required and must be a string.")
	}
	var m chat.Message
	switch role := chat.Role(f.Role.V); role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		m.Role = role
	case "function":
		return chat.Message{}, rules.Unsupported(p+".role", "the legacy function role is not supported; use tool messages.")
	default:
		return chat.Message{}, rules.Invalid(p+".role", "is not a known role.")
	}
	var err error
	if m.Content, err = chatContent(p+".content", f.Content); err != nil {
		return chat.Message{}, err
	}
	if !wirejson.Absent(f.Name.Kind) && !f.Name.IsString() {
		return chat.Message{}, rules.Invalid(p+".name", "must be a string.")
	}
	if m.Role != chat.RoleAssistant && !wirejson.Absent(f.ToolCalls.Kind) {
		return chat.Message{}, rules.Invalid(p+".tool_calls", "only assistant messages carry tool calls.")
	}
	switch m.Role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser:
		if m.Content == nil {
			return chat.Message{}, rules.Invalid(p+".content", "is required.")
		}
		m.Name = f.Name.V
	case chat.RoleAssistant:
		if err := chatAssistant(p, f, &m); err != nil {
			return chat.Message{}, err
		}
	case chat.RoleTool:
		if m.ToolCallID, err = rules.RequiredString(f.ToolCallID, p+".tool_call_id"); err != nil {
			return chat.Message{}, err
		}
		if m.Content != nil && len(*m.Content) > in.MaxToolResultBytes {
			return chat.Message{}, rules.Refuse(errs.RequestTooLarge, p+".content", "The tool result exceeds the per-result size limit.")
		}
	}
	return m, nil
}

// chatAssistant reads an assistant turn as clients echo it back: optional
// refusal, name, annotations and null audio are accepted and dropped.
func chatAssistant(p string, f *wchat.Message, m *chat.Message) error {
	if !wirejson.Absent(f.Refusal.Kind) && !f.Refusal.IsString() {
		return rules.Invalid(p+".refusal", "must be a string.")
	}
	if k := f.Annotations.Kind; !wirejson.Absent(k) && k != '[' {
		return rules.Invalid(p+".annotations", "must be an array.")
	}
	if !wirejson.Absent(f.Audio.Kind) {
		return rules.Unsupported(p+".audio", "audio responses are not supported.")
	}
	if !wirejson.Absent(f.FunctionCall.Kind) {
		return rules.Unsupported(p+".function_call", "legacy function calling is not supported; use tool_calls.")
	}
	if tc := &f.ToolCalls; !wirejson.Absent(tc.Kind) {
		if !tc.IsArray() {
			return rules.Invalid(p+".tool_calls", "must be an array.")
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
		return rules.Invalid(p+".content", "an assistant message needs content or tool_calls.")
	}
	return nil
}

func chatToolCall(p string, item *wirejson.Object[wchat.ToolCall]) (chat.ToolCall, error) {
	if !item.IsObject() {
		return chat.ToolCall{}, rules.Invalid(p, "must be an object.")
	}
	f := &item.V
	id, err := rules.RequiredString(f.ID, p+".id")
	if err != nil {
		return chat.ToolCall{}, err
	}
	switch t := f.Type; {
	case wirejson.Absent(t.Kind):
	case t.IsString():
		if t.V != "function" {
			return chat.ToolCall{}, rules.Unsupported(p+".type", "only function tool calls are supported.")
		}
	default:
		return chat.ToolCall{}, rules.Invalid(p+".type", "must be a string.")
	}
	if !f.Function.IsObject() {
		return chat.ToolCall{}, rules.Invalid(p+".function", "is required and must be an object.")
	}
	fn := &f.Function.V
	name, err := rules.RequiredString(fn.Name, p+".function.name")
	if err != nil {
		return chat.ToolCall{}, err
	}
	if !fn.Arguments.IsString() {
		return chat.ToolCall{}, rules.Invalid(p+".function.arguments", "is required and must be a string.")
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
		return nil, rules.Invalid(p, "must be a string, an array of text parts, or null.")
	}
	s, err := rules.JoinTextOf(p, c.Items, "content", func(t string) bool { return t == "text" }, unsupportedParts)
	if err != nil {
		return nil, err
	}
	return &s, nil
}
