package canon

import (
	"github.com/pmgate/pmgate/domain/chat"
)

// MessageValue returns the canonical form of a normalized message (package
// documentation, "Chat-level canonical forms"). It does not validate: invalid
// UTF-8 is refused later, by Marshal or Hash.
func MessageValue(m chat.Message) Value {
	v := map[string]Value{"role": string(m.Role)}
	withCalls := m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0
	switch {
	case m.Content == nil:
		v["content"] = nil
	case withCalls && *m.Content == "":
		v["content"] = nil
	default:
		v["content"] = *m.Content
	}
	if m.Role != chat.RoleAssistant && m.Name != "" {
		v["name"] = m.Name
	}
	if withCalls {
		calls := make([]Value, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = map[string]Value{"id": c.ID, "name": c.Name, "arguments": c.Arguments}
		}
		v["tool_calls"] = calls
	}
	if m.Role == chat.RoleTool {
		v["tool_call_id"] = m.ToolCallID
	}
	return v
}

// TranscriptHash is the Hash of {"kind":"transcript","messages":[MessageValue…]}:
// the exact transcript form, argument strings byte for byte. The gateway now
// stores [TranscriptHashV2]; this form remains for records stored by earlier
// builds (package documentation, "Transcript forms").
func TranscriptHash(msgs []chat.Message) (string, error) {
	ms := make([]Value, len(msgs))
	for i, m := range msgs {
		ms[i] = MessageValue(m)
	}
	return Hash(map[string]Value{"kind": "transcript", "messages": ms})
}

// schemaValue parses raw JSON schema text; nil or empty text is null.
func schemaValue(parameters []byte) (Value, error) {
	if len(parameters) == 0 {
		return nil, nil
	}
	return ParseJSON(parameters)
}

// SchemaHash is the Hash of {"kind":"schema","schema":…} where the schema is the
// parsed parameters (null when nil or empty). Invalid JSON is refused with
// errs.InvalidRequest.
func SchemaHash(parameters []byte) (string, error) {
	s, err := schemaValue(parameters)
	if err != nil {
		return "", err
	}
	return Hash(map[string]Value{"kind": "schema", "schema": s})
}

// ToolsHash is the Hash of the tool definitions in the given order and the
// effective tool choice: the tools hash of a correlation group (docs/CORRELATION.md). Each tool is
// {"name","description","parameters":<parsed schema or null>,"strict":<bool or
// null>}; tool_choice is {"mode","function"} where function is the name when the
// mode is "function" and null otherwise.
func ToolsHash(tools []chat.Tool, choice chat.ToolChoice) (string, error) {
	ts, err := toolValues(tools)
	if err != nil {
		return "", err
	}
	var fn Value
	if choice.Mode == chat.ToolChoiceFunction {
		fn = choice.Function
	}
	return Hash(map[string]Value{
		"kind":        "tools",
		"tools":       ts,
		"tool_choice": map[string]Value{"mode": string(choice.Mode), "function": fn},
	})
}

// toolValues is the canonical form of tool definitions, in order:
// {"name","description","parameters":<parsed schema or null>,"strict":<bool or null>}.
func toolValues(tools []chat.Tool) ([]Value, error) {
	ts := make([]Value, len(tools))
	for i, t := range tools {
		params, err := schemaValue(t.Parameters)
		if err != nil {
			return nil, err
		}
		var strict Value
		if t.Strict != nil {
			strict = *t.Strict
		}
		ts[i] = map[string]Value{
			"name":        t.Name,
			"description": t.Description,
			"parameters":  params,
			"strict":      strict,
		}
	}
	return ts, nil
}

// ArgumentsHash is the Hash of {"kind":"arguments","name":…,"arguments":…,
// "schema_hash":…}: the arguments hash of an issued call (docs/CORRELATION.md). The argument
// string is hashed exactly as given (as a JSON string), never parsed.
func ArgumentsHash(name, arguments, schemaHash string) (string, error) {
	return Hash(map[string]Value{
		"kind":        "arguments",
		"name":        name,
		"arguments":   arguments,
		"schema_hash": schemaHash,
	})
}

// Result is one accepted tool result: the public tool call id and the exact
// content the client sent for it.
type Result struct {
	PublicID string
	Content  string
}

// ResultsHash is the Hash of {"kind":"results","results":[[id,content]…]} in the
// given order: the accepted-results hash of a group (docs/CORRELATION.md).
func ResultsHash(rs []Result) (string, error) {
	vs := make([]Value, len(rs))
	for i, r := range rs {
		vs[i] = []Value{r.PublicID, r.Content}
	}
	return Hash(map[string]Value{"kind": "results", "results": vs})
}
