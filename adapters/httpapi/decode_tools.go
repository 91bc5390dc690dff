package httpapi

// This file translates chat tool definitions and tool_choice, and holds the
// rules every API's tool definitions share (newTool).

import (
	"encoding/json"
	"strconv"

	"github.com/cockroachdb/errors"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// toolSet is the one derivation of a request's tool set, for every API:
// tools is an array or absent; a set already derived from the same bytes
// with the same settings is remembered (decodedTools, keyed with api: whose
// shape the bytes are); else defs reads the entries into definitions under
// the API's own rules of shape, and newTools applies the rules every tool
// has. The kept tools hold no memory of the request they came from (defs
// copies the schemas), are never written after they are kept, and each
// request gets its own slice of them.
func (s *server) toolSet(api string, raw wirejson.Raw, defs func() ([]toolDef, error)) ([]chat.Tool, error) {
	if present, err := toolsPresent(raw); !present {
		return nil, err
	}
	k := toolsKey{api: api, maxTools: s.cfg.MaxTools, opts: s.toolOptions()}
	if tools, ok := decodedTools.get(raw, k); ok {
		return append([]chat.Tool(nil), tools...), nil
	}
	ds, err := defs()
	if err != nil {
		return nil, err
	}
	tools, err := s.newTools(ds)
	if err != nil || len(tools) == 0 {
		return tools, err
	}
	decodedTools.put(raw, k, tools, toolsSize(tools))
	return append([]chat.Tool(nil), tools...), nil
}

// toolsPresent says whether tools holds a tool set (absent or null: no),
// refusing any other kind than an array.
func toolsPresent(raw wirejson.Raw) (bool, error) {
	switch raw.Kind() {
	case 0, 'n':
		return false, nil
	case '[':
		return true, nil
	}
	return false, invalid("tools", "must be an array.")
}

// newTools is the one loop over a tool set's definitions: at most MaxTools
// of them, each under newTool's rules, in order.
func (s *server) newTools(defs []toolDef) ([]chat.Tool, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	if len(defs) > s.cfg.MaxTools {
		return nil, unsupported("tools", "more tools than this gateway accepts (MAX_TOOLS).")
	}
	tools := make([]chat.Tool, 0, len(defs))
	seen := make(map[string]bool, len(defs))
	for _, d := range defs {
		t, err := s.newTool(d, seen)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// decodeTools is the chat tool set (raw: the tools member as sent), derived
// once per bytes and settings (toolSet). The parameters schema is kept
// byte-for-byte as sent (it is what the tools hash binds); its lowered form
// under ToolSchemaPolicy (domain/toolschema) is what the upstream receives.
func (s *server) decodeTools(raw json.RawMessage) ([]chat.Tool, error) {
	return s.toolSet("", wirejson.Raw(raw), func() ([]toolDef, error) { return chatToolDefs(wirejson.Raw(raw)), nil })
}

// toolOptions are the lowering options of this server's settings.
func (s *server) toolOptions() toolschema.Options {
	return toolschema.Options{Policy: s.cfg.ToolSchemaPolicy, WidenCombinators: s.cfg.WidenCombinators}
}

// decodeToolsOnce is decodeTools without the memory.
func (s *server) decodeToolsOnce(raw json.RawMessage) ([]chat.Tool, error) {
	if present, err := toolsPresent(wirejson.Raw(raw)); !present {
		return nil, err
	}
	return s.newTools(chatToolDefs(wirejson.Raw(raw)))
}

// chatToolDefs reads chat's tool entries. The count comes before any
// entry's shape, and an entry's shape (type, function) before its rules and
// after the earlier entries' (docs/API.md): a wrong shape is the
// definition's first refusal (toolDef.err).
func chatToolDefs(raw wirejson.Raw) []toolDef {
	items := wchat.Tools{Raw: raw}.Entries()
	defs := make([]toolDef, len(items))
	for i, item := range items {
		p := "tools[" + strconv.Itoa(i) + "]"
		d := &defs[i]
		switch {
		case !item.IsObject():
			d.err = invalid(p, "must be an object.")
			continue
		case !item.V.Type.IsString():
			d.err = invalid(p+".type", "is required and must be a string.")
			continue
		case item.V.Type.V != "function":
			d.err = unsupported(p+".type", "only function tools are supported.")
			continue
		case !item.V.Function.IsObject():
			d.err = invalid(p+".function", "is required and must be an object.")
			continue
		}
		fn := &item.V.Function.V
		*d = toolDef{at: p + ".function", schemaAt: p + ".function.parameters", name: fn.Name.V, nameOK: fn.Name.IsString()}
		if desc := fn.Description; desc.IsString() {
			d.desc = desc.V
		} else if !wirejson.Absent(desc.Kind) {
			d.descErr = invalid(p+".function.description", "must be a string.")
		}
		switch params := fn.Parameters; params.Kind() {
		case 0, 'n':
		case '{':
			d.schema = append([]byte(nil), params...) // the request's memory otherwise
		default:
			d.schemaErr = invalid(d.schemaAt, "must be a JSON schema object.")
		}
		if st := fn.Strict; !wirejson.Absent(st.Kind) {
			b, err := wireBool(st, p+".function.strict", false)
			d.strict, d.strictErr = &b, err
		}
	}
	return defs
}

// toolDef is one tool definition as an API sends it, read into the parts
// every API's tools have, with the refusals of their kinds, which newTool
// reports in the order of its rules.
type toolDef struct {
	err          error  // the definition's shape is wrong: its first refusal
	at, schemaAt string // the paths of the definition's fields and of its schema
	name         string
	nameOK       bool // name was a string
	desc         string
	descErr      error
	schema       []byte // nil when absent
	schemaErr    error
	strict       *bool
	strictErr    error
}

// newTool is the one rule set of a tool definition, in this order (after a
// wrong shape, d.err): a valid
// name, not an earlier tool's, a string description, a schema lowered under
// ToolSchemaPolicy (domain/toolschema; kept as sent, which is what the tools
// hash binds, and lowered for the upstream), a boolean strict.
func (s *server) newTool(d toolDef, seen map[string]bool) (chat.Tool, error) {
	if d.err != nil {
		return chat.Tool{}, d.err
	}
	if !d.nameOK || !validToolName(d.name) {
		return chat.Tool{}, invalid(d.at+".name", "is required and must match ^[A-Za-z0-9_-]{1,64}$.")
	}
	if seen[d.name] {
		return chat.Tool{}, invalid(d.at+".name", "repeats the name of an earlier tool.")
	}
	seen[d.name] = true
	if d.descErr != nil {
		return chat.Tool{}, d.descErr
	}
	if d.schemaErr != nil {
		return chat.Tool{}, d.schemaErr
	}
	t := chat.Tool{Name: d.name, Description: d.desc, Strict: d.strict}
	if d.schema != nil {
		lowered, err := lowerSchema(d.schema, d.schemaAt, s.toolOptions())
		var pr *toolschema.Problem
		if errors.As(err, &pr) {
			return chat.Tool{}, refuse(pr.Code, pr.Path, pr.Detail)
		}
		if err != nil {
			return chat.Tool{}, err
		}
		t.Parameters, t.UpstreamParameters = d.schema, lowered
	}
	if d.strictErr != nil {
		return chat.Tool{}, d.strictErr
	}
	return t, nil
}

// validToolName matches ^[A-Za-z0-9_-]{1,64}$, the tool names the upstream
// accepts (docs/TOOL-CALLING.md).
func validToolName(s string) bool { return toolschema.Identifier(s) }

// decodeToolChoice is toolChoice of a tool_choice as sent.
func decodeToolChoice(raw json.RawMessage, tools []chat.Tool) (chat.ToolChoice, error) {
	return toolChoice(wchat.DecodeToolChoice(raw), tools)
}

// toolChoice reads "auto" | "none" | "required" | {"type":"function",
// "function":{"name":…}}; absent means auto.
func toolChoice(tc wchat.ToolChoice, tools []chat.Tool) (chat.ToolChoice, error) {
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
				return auto, invalid("tool_choice", "\"required\" needs at least one tool.")
			}
			return chat.ToolChoice{Mode: mode}, nil
		}
		return auto, invalid("tool_choice", "must be \"auto\", \"none\", \"required\" or a function choice.")
	case '{':
	default:
		return auto, invalid("tool_choice", "must be a string or an object.")
	}
	if !tc.V.Type.IsString() {
		return auto, invalid("tool_choice.type", "is required and must be a string.")
	}
	if tc.V.Type.V != "function" {
		return auto, unsupported("tool_choice.type", "only a function tool choice is supported.")
	}
	if !tc.V.Function.IsObject() {
		return auto, invalid("tool_choice.function", "is required and must be an object.")
	}
	name, err := wireReqString(tc.V.Function.V.Name, "tool_choice.function.name")
	if err != nil {
		return auto, err
	}
	for _, t := range tools {
		if t.Name == name {
			return chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: name}, nil
		}
	}
	return auto, invalid("tool_choice.function.name", "does not name a declared tool.")
}
