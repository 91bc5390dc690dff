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

// decodeTools validates the tool definitions (raw is the tools member as
// sent, in chat's shape; the Responses API rewrites its tools into it). The parameters schema is kept
// byte-for-byte as sent (it is what the tools hash binds); its lowered form
// under ToolSchemaPolicy (domain/toolschema) is what the upstream receives.
// The result for the same bytes and settings is remembered (decodedTools):
// the kept tools hold no memory of the request they came from (their schemas
// are copies), are never written after they are kept, and each request gets
// its own slice of them.
func (s *server) decodeTools(raw json.RawMessage) ([]chat.Tool, error) {
	k := toolsKey{maxTools: s.cfg.MaxTools, opts: s.toolOptions()}
	if tools, ok := decodedTools.get(raw, k); ok {
		return append([]chat.Tool(nil), tools...), nil
	}
	tools, err := s.decodeToolsOnce(raw)
	if err != nil || len(tools) == 0 {
		return tools, err
	}
	kept := make([]chat.Tool, len(tools))
	for i, tl := range tools {
		tl.Parameters = append([]byte(nil), tl.Parameters...) // the request's memory otherwise
		kept[i] = tl
	}
	decodedTools.put(raw, k, kept, toolsSize(kept))
	return append([]chat.Tool(nil), kept...), nil
}

// toolOptions are the lowering options of this server's settings.
func (s *server) toolOptions() toolschema.Options {
	return toolschema.Options{Policy: s.cfg.ToolSchemaPolicy, WidenCombinators: s.cfg.WidenCombinators}
}

// decodeToolsOnce is decodeTools without the cache.
func (s *server) decodeToolsOnce(raw json.RawMessage) ([]chat.Tool, error) {
	t := wchat.Tools{Raw: wirejson.Raw(raw)}
	switch t.Kind() {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, invalid("tools", "must be an array.")
	}
	items := t.Entries()
	if len(items) == 0 {
		return nil, nil
	}
	if len(items) > s.cfg.MaxTools {
		return nil, unsupported("tools", "more tools than this gateway accepts (MAX_TOOLS).")
	}
	tools := make([]chat.Tool, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, item := range items {
		p := "tools[" + strconv.Itoa(i) + "]"
		if !item.IsObject() {
			return nil, invalid(p, "must be an object.")
		}
		if !item.V.Type.IsString() {
			return nil, invalid(p+".type", "is required and must be a string.")
		}
		if item.V.Type.V != "function" {
			return nil, unsupported(p+".type", "only function tools are supported.")
		}
		if !item.V.Function.IsObject() {
			return nil, invalid(p+".function", "is required and must be an object.")
		}
		fn := &item.V.Function.V
		d := toolDef{at: p + ".function", schemaAt: p + ".function.parameters", name: fn.Name.V, nameOK: fn.Name.IsString()}
		if desc := fn.Description; desc.IsString() {
			d.desc = desc.V
		} else if !wirejson.Absent(desc.Kind) {
			d.descErr = invalid(p+".function.description", "must be a string.")
		}
		switch params := fn.Parameters; params.Kind() {
		case 0, 'n':
		case '{':
			d.schema = params
		default:
			d.schemaErr = invalid(d.schemaAt, "must be a JSON schema object.")
		}
		if st := fn.Strict; !wirejson.Absent(st.Kind) {
			b, err := wireBool(st, p+".function.strict", false)
			d.strict, d.strictErr = &b, err
		}
		t, err := s.newTool(d, seen)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// toolDef is one tool definition as an API sends it, read into the parts
// every API's tools have, with the refusals of their kinds, which newTool
// reports in the order of its rules.
type toolDef struct {
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

// newTool is the one rule set of a tool definition, in this order: a valid
// name, not an earlier tool's, a string description, a schema lowered under
// ToolSchemaPolicy (domain/toolschema; kept as sent, which is what the tools
// hash binds, and lowered for the upstream), a boolean strict.
func (s *server) newTool(d toolDef, seen map[string]bool) (chat.Tool, error) {
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
