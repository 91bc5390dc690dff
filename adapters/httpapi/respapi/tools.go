package respapi

// This file translates Responses tools (function, custom, namespace; hosted
// tools are left out) and tool_choice into the domain's chat tools.

import (
	"encoding/json"
	"strconv"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
	"github.com/pmgate/pmgate/domain/chat"
)

// respTool is how a tool the upstream sees maps back to the client: the
// qualified chat name of a namespace tool is "<namespace>__<name>"; a custom
// (freeform) tool is offered as a function with one string parameter "input".
type respTool struct {
	namespace string
	name      string
	custom    bool
}

// builtinTools are hosted tools of the Responses API that the upstream cannot
// run. They are not offered upstream (offering them would be a lie) and not
// refused (refusing them would make agents that always send them unusable).
var builtinTools = map[string]bool{
	"web_search": true, "web_search_preview": true, "web_search_2025_08_26": true, "web_search_preview_2025_03_11": true,
	"file_search": true, "computer_use": true, "computer_use_preview": true, "computer": true,
	"code_interpreter": true, "image_generation": true, "local_shell": true, "shell": true, "mcp": true,
	"apply_patch": true, "tool_search": true,
}

// namespaceSep joins a namespace and a tool name for the upstream.
const namespaceSep = "__"

// maxGrammarBytes bounds the grammar of a custom tool that is described to
// the upstream in text.
const maxGrammarBytes = 16 << 10

// customParameters is the schema a custom (freeform) tool is offered with:
// one string parameter "input", described (with the tool's grammar, if any).
func customParameters(description string) json.RawMessage {
	return rules.MustJSON(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"input": map[string]any{"type": "string", "description": description}},
		"required":             []string{"input"},
		"additionalProperties": false,
	})
}

// respTools is a translated Responses tool set: what Request keeps of it.
// It is never written after it is made, so a remembered one is shared.
type respTools struct {
	chat    []chat.Tool
	byName  map[string]respTool
	offered []json.RawMessage
	dropped []string
}

// decodedRespTools remembers translated Responses tool sets by their bytes
// as sent and every setting they depend on (Settings.ToolsKey, with this
// API's name).
var decodedRespTools rules.Memo[rules.ToolsKey, respTools]

// responsesTools translates the Responses tool list, once per tool set
// (decodedRespTools): function tools (and the function tools inside a
// namespace, under qualified names) and custom tools (a function with one
// string parameter) become chat tools under the rules every API's tools have
// (Settings.NewTools), at the Responses paths; built-in tools are not offered.
func responsesTools(in *rules.Settings, t responses.Tools, rr *Request) error {
	if present, err := rules.ToolsPresent(t.Raw); !present {
		return err
	}
	k := in.ToolsKey("responses")
	ts, ok := decodedRespTools.Get(t.Raw, k)
	if !ok {
		var err error
		if ts, err = translateRespTools(in, t); err != nil {
			return err
		}
		size := rules.ToolsSize(ts.chat)
		for _, o := range ts.offered {
			size += len(o) + 64
		}
		decodedRespTools.Put(t.Raw, k, ts, size)
	}
	rr.Chat.Tools = append([]chat.Tool(nil), ts.chat...)
	rr.tools, rr.offered, rr.dropped = ts.byName, ts.offered, ts.dropped
	return nil
}

// translateRespTools is responsesTools without the memory. Every entry's
// shape is checked first (type, name, a custom tool's format, a namespace's
// tools), then the count, then each tool under Settings.NewTools' rules, as
// the Responses route has always refused them.
func translateRespTools(in *rules.Settings, t responses.Tools) (respTools, error) {
	ts := respTools{byName: map[string]respTool{}}
	var defs []rules.ToolDef
	add := func(path string, def *responses.Tool, rt respTool, original json.RawMessage, customDesc string) error {
		if !def.Name.IsString() || !rules.ValidToolName(def.Name.V) {
			return rules.Invalid(path+".name", "is required and must match ^[A-Za-z0-9_-]{1,64}$.")
		}
		rt.name = def.Name.V
		chatName := rt.name
		if rt.namespace != "" {
			chatName = rt.namespace + namespaceSep + rt.name
			if !rules.ValidToolName(chatName) {
				return rules.Invalid(path+".name", "with its namespace must match ^[A-Za-z0-9_-]{1,64}$.")
			}
		}
		d := rules.ToolDef{At: path, SchemaAt: path + ".parameters", Name: chatName, NameOK: true}
		switch desc := def.Description; {
		case desc.IsString():
			d.Desc = desc.V
		case !responses.Absent(desc.Kind):
			d.DescErr = rules.Invalid(path+".description", "must be a string.")
		}
		if rt.custom {
			d.Schema = customParameters(customDesc)
		} else {
			switch def.Parameters.Kind() {
			case 0, 'n':
			case '{':
				// The schema as the Responses route has always kept it
				// (compact, HTML-escaped: the bytes the tools hash binds).
				d.Schema = rules.MustJSON(json.RawMessage(def.Parameters))
			default:
				d.SchemaErr = rules.Invalid(d.SchemaAt, "must be a JSON schema object.")
			}
			if st := def.Strict; !responses.Absent(st.Kind) {
				b, err := rules.OptionalBool(st, path+".strict", false)
				d.Strict, d.StrictErr = &b, err
			}
		}
		defs = append(defs, d)
		ts.byName[chatName] = rt
		ts.offered = append(ts.offered, original)
		return nil
	}
	for i, item := range t.Entries() {
		p := "tools[" + strconv.Itoa(i) + "]"
		if !item.IsObject() {
			return respTools{}, rules.Invalid(p, "must be an object.")
		}
		f := &item.V
		if !f.Type.IsString() {
			return respTools{}, rules.Invalid(p+".type", "is required and must be a string.")
		}
		switch typ := f.Type.V; {
		case typ == "function":
			if err := add(p, f, respTool{}, json.RawMessage(item.Raw), ""); err != nil {
				return respTools{}, err
			}
		case typ == "custom":
			desc, err := customFormat(p+".format", f.Format)
			if err != nil {
				return respTools{}, err
			}
			if err := add(p, f, respTool{custom: true}, json.RawMessage(item.Raw), desc); err != nil {
				return respTools{}, err
			}
		case typ == "namespace":
			ns, err := rules.RequiredString(f.Name, p+".name")
			if err != nil {
				return respTools{}, err
			}
			if !rules.ValidToolName(ns) {
				return respTools{}, rules.Invalid(p+".name", "must match ^[A-Za-z0-9_-]{1,64}$.")
			}
			if !f.Tools.IsArray() {
				return respTools{}, rules.Invalid(p+".tools", "is required and must be an array.")
			}
			for j, sub := range f.Tools.Items {
				sp := p + ".tools[" + strconv.Itoa(j) + "]"
				if !sub.IsObject() {
					return respTools{}, rules.Invalid(sp, "must be an object.")
				}
				if st := sub.V.Type; !st.IsString() || st.V != "function" {
					return respTools{}, rules.Unsupported(sp+".type", "only function tools are supported inside a namespace.")
				}
				// The echo keeps the client's own shape: a namespaced tool is
				// listed as itself with its namespace.
				var echo map[string]json.RawMessage
				if err := json.Unmarshal(sub.Raw, &echo); err != nil {
					return respTools{}, err
				}
				echo["namespace"] = rules.MustJSON(ns)
				if err := add(sp, &sub.V, respTool{namespace: ns}, rules.MustJSON(echo), ""); err != nil {
					return respTools{}, err
				}
			}
		case builtinTools[typ]:
			ts.dropped = append(ts.dropped, typ)
		default:
			return respTools{}, rules.Unsupported(p+".type", "this tool type is not supported.")
		}
	}
	var err error
	if ts.chat, err = in.NewTools(defs); err != nil {
		return respTools{}, err
	}
	return ts, nil
}

// customFormat reads a custom tool's format and returns the description of
// its one "input" parameter: absent or {"type":"text"} is free text; a
// grammar ({"type":"grammar","syntax":"lark"|"regex","definition":…}) cannot
// be enforced by the upstream, so, like a JSON Schema pattern, it is
// described to the model in text and the client's own tool checks the input.
func customFormat(p string, f responses.Object[responses.CustomFormat]) (string, error) {
	const free = "The raw input of the tool, as free text."
	switch f.Kind {
	case 0, 'n':
		return free, nil
	case '{':
	default:
		return "", rules.Invalid(p, "must be an object.")
	}
	if !f.V.Type.IsString() {
		return "", rules.Invalid(p+".type", "is required and must be a string.")
	}
	switch f.V.Type.V {
	case "text":
		return free, nil
	case "grammar":
	default:
		return "", rules.Invalid(p+".type", "is not a known custom tool format.")
	}
	syntax, err := rules.RequiredString(f.V.Syntax, p+".syntax")
	if err != nil {
		return "", err
	}
	if syntax != "lark" && syntax != "regex" {
		return "", rules.Invalid(p+".syntax", `must be "lark" or "regex".`)
	}
	def, err := rules.RequiredString(f.V.Definition, p+".definition")
	if err != nil {
		return "", err
	}
	if len(def) > maxGrammarBytes {
		return "", rules.Unsupported(p+".definition", "the grammar is too long to be described to the upstream.")
	}
	return "The raw input of the tool, as free text that must match this " + syntax + " grammar:\n" + def, nil
}

// responsesToolChoice reads "auto" | "none" | "required" (chat's
// tool_choice strings, rules.DecodeToolChoice) or {"type":"function"|"custom",
// "name":…} (also inside a namespace: "namespace"), which must name an
// offered tool.
func responsesToolChoice(tc responses.ToolChoice, tools []chat.Tool) (chat.ToolChoice, error) {
	if tc.Kind() != '{' {
		return rules.DecodeToolChoice(json.RawMessage(tc.Raw), tools)
	}
	f := tc.V
	if !f.Type.IsString() {
		return chat.ToolChoice{}, rules.Invalid("tool_choice.type", "is required and must be a string.")
	}
	switch f.Type.V {
	case "function", "custom":
	default:
		return chat.ToolChoice{}, rules.Unsupported("tool_choice.type", "only a function tool choice is supported.")
	}
	name, err := rules.RequiredString(f.Name, "tool_choice.name")
	if err != nil {
		return chat.ToolChoice{}, err
	}
	if ns, err := wireOptString(f.Namespace, "tool_choice.namespace"); err != nil {
		return chat.ToolChoice{}, err
	} else if ns != "" {
		name = ns + namespaceSep + name
	}
	for _, t := range tools {
		if t.Name == name {
			return chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: name}, nil
		}
	}
	// The path chat's tool_choice names: the Responses route has always
	// refused an undeclared name there.
	return chat.ToolChoice{}, rules.Invalid("tool_choice.function.name", "does not name a declared tool.")
}
