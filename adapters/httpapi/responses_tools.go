package httpapi

// This file translates Responses tools (function, custom, namespace; hosted
// tools are left out) and tool_choice into their chat form.

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

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
	return mustJSON(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"input": map[string]any{"type": "string", "description": description}},
		"required":             []string{"input"},
		"additionalProperties": false,
	})
}

// decodeResponsesTools translates the Responses tool list. Function tools
// (and the function tools inside a namespace, under qualified names) are
// validated exactly like chat tools: each is rewritten into the chat form and
// passed through decodeTools, and refusals are reported at the Responses
// path. Custom tools become a function with one string parameter; built-in
// tools are not offered.
func (s *server) decodeResponsesTools(raw json.RawMessage, rr *respRequest) error {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return nil
	case kindArray:
	default:
		return invalid("tools", "must be an array.")
	}
	var chatTools []json.RawMessage
	var paths []string // Responses path of each chat tool
	rr.tools = map[string]respTool{}
	add := func(path string, def map[string]json.RawMessage, rt respTool, original json.RawMessage, customDesc string) error {
		if kindOf(def["name"]) != kindString || !validToolName(str(def["name"])) {
			return invalid(path+".name", "is required and must match ^[A-Za-z0-9_-]{1,64}$.")
		}
		rt.name = str(def["name"])
		chatName := rt.name
		if rt.namespace != "" {
			chatName = rt.namespace + namespaceSep + rt.name
			if !validToolName(chatName) {
				return invalid(path+".name", "with its namespace must match ^[A-Za-z0-9_-]{1,64}$.")
			}
		}
		fn := map[string]json.RawMessage{"name": mustJSON(chatName)}
		if d := def["description"]; !absent(d) {
			fn["description"] = d
		}
		if rt.custom {
			fn["parameters"] = customParameters(customDesc)
		} else {
			for _, k := range []string{"parameters", "strict"} {
				if v, ok := def[k]; ok {
					fn[k] = v
				}
			}
		}
		chatTools = append(chatTools, mustJSON(map[string]any{"type": "function", "function": fn}))
		paths = append(paths, path)
		rr.tools[chatName] = rt
		rr.offered = append(rr.offered, original)
		return nil
	}
	for i, item := range elems(raw) {
		p := "tools[" + strconv.Itoa(i) + "]"
		if kindOf(item) != kindObject {
			return invalid(p, "must be an object.")
		}
		f := fields(item)
		if kindOf(f["type"]) != kindString {
			return invalid(p+".type", "is required and must be a string.")
		}
		switch t := str(f["type"]); {
		case t == "function":
			if err := add(p, f, respTool{}, item, ""); err != nil {
				return err
			}
		case t == "custom":
			desc, err := customFormat(p+".format", f["format"])
			if err != nil {
				return err
			}
			if err := add(p, f, respTool{custom: true}, item, desc); err != nil {
				return err
			}
		case t == "namespace":
			ns, err := reqString(f["name"], p+".name")
			if err != nil {
				return err
			}
			if !validToolName(ns) {
				return invalid(p+".name", "must match ^[A-Za-z0-9_-]{1,64}$.")
			}
			if kindOf(f["tools"]) != kindArray {
				return invalid(p+".tools", "is required and must be an array.")
			}
			for j, sub := range elems(f["tools"]) {
				sp := p + ".tools[" + strconv.Itoa(j) + "]"
				if kindOf(sub) != kindObject {
					return invalid(sp, "must be an object.")
				}
				sf := fields(sub)
				if kindOf(sf["type"]) != kindString || str(sf["type"]) != "function" {
					return unsupported(sp+".type", "only function tools are supported inside a namespace.")
				}
				// The echo keeps the client's own shape: a namespaced tool is
				// listed as itself with its namespace.
				echo := fields(sub)
				echo["namespace"] = mustJSON(ns)
				if err := add(sp, sf, respTool{namespace: ns}, mustJSON(echo), ""); err != nil {
					return err
				}
			}
		case builtinTools[t]:
			rr.dropped = append(rr.dropped, t)
		default:
			return unsupported(p+".type", "this tool type is not supported.")
		}
	}
	tools, err := s.decodeTools(mustJSON(chatTools))
	if err != nil {
		return rewriteToolPath(err, paths)
	}
	rr.chat.Tools = tools
	return nil
}

// customFormat reads a custom tool's format and returns the description of
// its one "input" parameter: absent or {"type":"text"} is free text; a
// grammar ({"type":"grammar","syntax":"lark"|"regex","definition":…}) cannot
// be enforced by the upstream, so, like a JSON Schema pattern, it is
// described to the model in text and the client's own tool checks the input.
func customFormat(p string, raw json.RawMessage) (string, error) {
	const free = "The raw input of the tool, as free text."
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return free, nil
	case kindObject:
	default:
		return "", invalid(p, "must be an object.")
	}
	f := fields(raw)
	if kindOf(f["type"]) != kindString {
		return "", invalid(p+".type", "is required and must be a string.")
	}
	switch str(f["type"]) {
	case "text":
		return free, nil
	case "grammar":
	default:
		return "", invalid(p+".type", "is not a known custom tool format.")
	}
	syntax, err := reqString(f["syntax"], p+".syntax")
	if err != nil {
		return "", err
	}
	if syntax != "lark" && syntax != "regex" {
		return "", invalid(p+".syntax", `must be "lark" or "regex".`)
	}
	def, err := reqString(f["definition"], p+".definition")
	if err != nil {
		return "", err
	}
	if len(def) > maxGrammarBytes {
		return "", unsupported(p+".definition", "the grammar is too long to be described to the upstream.")
	}
	return "The raw input of the tool, as free text that must match this " + syntax + " grammar:\n" + def, nil
}

// rewriteToolPath turns a decodeTools refusal at "tools[k].function.X" or
// "tools[k]" into the same refusal at the Responses path of tool k.
func rewriteToolPath(err error, paths []string) error {
	var re *requestError
	if !errors.As(err, &re) || !strings.HasPrefix(re.param, "tools[") {
		return err
	}
	end := strings.IndexByte(re.param, ']')
	k, convErr := strconv.Atoi(re.param[len("tools["):max(end, len("tools["))])
	if end < 0 || convErr != nil || k < 0 || k >= len(paths) {
		return err
	}
	rest := strings.TrimPrefix(re.param[end+1:], ".function")
	out := *re
	out.param = paths[k] + rest
	return &out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("httpapi: marshal: " + err.Error()) // raw messages and strings only
	}
	return b
}

// decodeResponsesToolChoice reads "auto" | "none" | "required" |
// {"type":"function","name":…} (also inside a namespace: "namespace").
func decodeResponsesToolChoice(raw json.RawMessage, rr *respRequest) (chat.ToolChoice, error) {
	if kindOf(raw) != kindObject {
		return decodeToolChoice(raw, rr.chat.Tools)
	}
	f := fields(raw)
	if kindOf(f["type"]) != kindString {
		return chat.ToolChoice{}, invalid("tool_choice.type", "is required and must be a string.")
	}
	switch str(f["type"]) {
	case "function", "custom":
	default:
		return chat.ToolChoice{}, unsupported("tool_choice.type", "only a function tool choice is supported.")
	}
	name, err := reqString(f["name"], "tool_choice.name")
	if err != nil {
		return chat.ToolChoice{}, err
	}
	if ns, err := optString(f["namespace"], "tool_choice.namespace"); err != nil {
		return chat.ToolChoice{}, err
	} else if ns != "" {
		name = ns + namespaceSep + name
	}
	return decodeToolChoice(mustJSON(map[string]any{"type": "function", "function": map[string]string{"name": name}}), rr.chat.Tools)
}
