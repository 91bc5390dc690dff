package rules

// This file is the one tool-set rule every API's tool definitions share
// (ToolSet, NewTools, newTool) and the OpenAI APIs' tool_choice (ToolChoice).

import (
	"encoding/json"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// ToolSet is the one derivation of a request's tool set, for every API:
// tools is an array or absent; a set already derived from the same bytes
// with the same settings is remembered (decodedTools, keyed with api: whose
// shape the bytes are); else defs reads the entries into definitions under
// the API's own rules of shape, and newTools applies the rules every tool
// has. The kept tools hold no memory of the request they came from (defs
// copies the schemas), are never written after they are kept, and each
// request gets its own slice of them.
func (st *Settings) ToolSet(api string, raw wirejson.Raw, defs func() ([]ToolDef, error)) ([]chat.Tool, error) {
	if present, err := ToolsPresent(raw); !present {
		return nil, err
	}
	k := st.ToolsKey(api)
	if tools, ok := decodedTools.Get(raw, k); ok {
		return append([]chat.Tool(nil), tools...), nil
	}
	ds, err := defs()
	if err != nil {
		return nil, err
	}
	tools, err := st.NewTools(ds)
	if err != nil || len(tools) == 0 {
		return tools, err
	}
	decodedTools.Put(raw, k, tools, ToolsSize(tools))
	return append([]chat.Tool(nil), tools...), nil
}

// ToolsPresent says whether tools holds a tool set (absent or null: no),
// refusing any other kind than an array.
func ToolsPresent(raw wirejson.Raw) (bool, error) {
	switch raw.Kind() {
	case 0, 'n':
		return false, nil
	case '[':
		return true, nil
	}
	return false, Invalid("tools", "must be an array.")
}

// NewTools is the one loop over a tool set's definitions: at most MaxTools
// of them, each under newTool's rules, in order.
func (st *Settings) NewTools(defs []ToolDef) ([]chat.Tool, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	if len(defs) > st.MaxTools {
		return nil, Unsupported("tools", "more tools than this gateway accepts (MAX_TOOLS).")
	}
	tools := make([]chat.Tool, 0, len(defs))
	seen := make(map[string]bool, len(defs))
	for _, d := range defs {
		t, err := st.newTool(d, seen)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// ToolDef is one tool definition as an API sends it, read into the parts
// every API's tools have, with the refusals of their kinds, which newTool
// reports in the order of its rules.
type ToolDef struct {
	Err          error  // the definition's shape is wrong: its first refusal
	At, SchemaAt string // the paths of the definition's fields and of its schema
	Name         string
	NameOK       bool // name was a string
	Desc         string
	DescErr      error
	Schema       []byte // nil when absent
	SchemaErr    error
	Strict       *bool
	StrictErr    error
}

// newTool is the one rule set of a tool definition, in this order (after a
// wrong shape, d.err): a valid
// name, not an earlier tool's, a string description, a schema lowered under
// ToolSchemaPolicy (domain/toolschema; kept as sent, which is what the tools
// hash binds, and lowered for the upstream), a boolean strict.
func (st *Settings) newTool(d ToolDef, seen map[string]bool) (chat.Tool, error) {
	if d.Err != nil {
		return chat.Tool{}, d.Err
	}
	if !d.NameOK || !ValidToolName(d.Name) {
		return chat.Tool{}, Invalid(d.At+".name", "is required and must match ^[A-Za-z0-9_-]{1,64}$.")
	}
	if seen[d.Name] {
		return chat.Tool{}, Invalid(d.At+".name", "repeats the name of an earlier tool.")
	}
	seen[d.Name] = true
	if d.DescErr != nil {
		return chat.Tool{}, d.DescErr
	}
	if d.SchemaErr != nil {
		return chat.Tool{}, d.SchemaErr
	}
	t := chat.Tool{Name: d.Name, Description: d.Desc, Strict: d.Strict}
	if d.Schema != nil {
		lowered, err := LowerSchema(d.Schema, d.SchemaAt, st.ToolSchema)
		var pr *toolschema.Problem
		if errors.As(err, &pr) {
			return chat.Tool{}, Refuse(pr.Code, pr.Path, pr.Detail)
		}
		if err != nil {
			return chat.Tool{}, err
		}
		t.Parameters, t.UpstreamParameters = d.Schema, lowered
	}
	if d.StrictErr != nil {
		return chat.Tool{}, d.StrictErr
	}
	return t, nil
}

// ValidToolName matches ^[A-Za-z0-9_-]{1,64}$, the tool names the upstream
// accepts (docs/TOOL-CALLING.md).
func ValidToolName(s string) bool { return toolschema.Identifier(s) }

// ToolsKey keys a tool set derived under these settings from bytes in
// api's shape (its memo: the derivations of ToolSet and of an API that keeps
// more than the tools, like Responses).
func (st *Settings) ToolsKey(api string) ToolsKey {
	return ToolsKey{api: api, maxTools: st.MaxTools, opts: st.ToolSchema}
}

// DecodeToolChoice is ToolChoice of a tool_choice as sent.
func DecodeToolChoice(raw json.RawMessage, tools []chat.Tool) (chat.ToolChoice, error) {
	return ToolChoice(wchat.DecodeToolChoice(raw), tools)
}

// ToolChoice is the OpenAI APIs' tool_choice (chat completions, and
// Responses' strings): it reads "auto" | "none" | "required" | {"type":"function",
// "function":{"name":…}}; absent means auto.
func ToolChoice(tc wchat.ToolChoice, tools []chat.Tool) (chat.ToolChoice, error) {
	auto := chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	switch tc.Kind {
	case 0, 'n':
		return auto, nil
	case '"':
		switch mode := chat.ToolChoiceMode(tc.Mode); mode {
		case chat.ToolChoiceAuto, chat.ToolChoiceNone:
			return chat.ToolChoice{Mode: mode}, nil
		case chat.ToolChoiceRequired:
			if len(tools) == 0 {
				return auto, Invalid("tool_choice", "\"required\" needs at least one tool.")
			}
			return chat.ToolChoice{Mode: mode}, nil
		}
		return auto, Invalid("tool_choice", "must be \"auto\", \"none\", \"required\" or a function choice.")
	case '{':
	default:
		return auto, Invalid("tool_choice", "must be a string or an object.")
	}
	if !tc.V.Type.IsString() {
		return auto, Invalid("tool_choice.type", "is required and must be a string.")
	}
	if tc.V.Type.V != "function" {
		return auto, Unsupported("tool_choice.type", "only a function tool choice is supported.")
	}
	if !tc.V.Function.IsObject() {
		return auto, Invalid("tool_choice.function", "is required and must be an object.")
	}
	name, err := RequiredString(tc.V.Function.V.Name, "tool_choice.function.name")
	if err != nil {
		return auto, err
	}
	for _, t := range tools {
		if t.Name == name {
			return chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: name}, nil
		}
	}
	return auto, Invalid("tool_choice.function.name", "does not name a declared tool.")
}
