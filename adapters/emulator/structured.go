package emulator

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/pmgate/pmgate/domain/chat"
)

// The emulator's stand-in for a model that follows the gateway's
// structured-output instruction (domain/structured): the answer is a value
// built from the schema the instruction names, the way tool arguments are
// (valueFor), or one of the structured_* scenarios' wrong answers.

var structuredScenarios = map[string]bool{
	ScenarioStructuredInvalidJSON: true, ScenarioStructuredViolation: true, ScenarioStructuredProse: true,
	ScenarioStructuredRefusal: true, ScenarioStructuredCodeFence: true, ScenarioStructuredLoneSurrogate: true,
}

// structuredRefusalText is the refusal of structured_refusal.
const structuredRefusalText = "I'm sorry, but I can't help with that request."

// structuredReply is the final answer of a structured request.
func structuredReply(kind chat.OutputKind, schema []byte, scenario string) string {
	valid := `{"answer":"Hello from the pmgate emulator."}`
	if kind == chat.OutputJSONSchema && len(schema) > 0 {
		valid = valueFor(schema, "answer", 0)
	}
	switch scenario {
	case ScenarioStructuredInvalidJSON:
		return valid[:len(valid)-1]
	case ScenarioStructuredViolation:
		return violation(kind, schema, valid)
	case ScenarioStructuredProse:
		return "Here is the JSON you asked for:\n" + valid + "\nLet me know if you need anything else."
	case ScenarioStructuredRefusal:
		return structuredRefusalText
	case ScenarioStructuredCodeFence:
		return "```json\n" + valid + "\n```"
	case ScenarioStructuredLoneSurrogate:
		// U+FFFD as written or escaped (the schema's enum or const as the
		// instruction spells it) becomes the lone surrogate escape.
		if lone := strings.NewReplacer("\uFFFD", `\ud800`, `\ufffd`, `\ud800`, `\uFFFD`, `\ud800`).Replace(valid); lone != valid {
			return lone
		}
		if i := strings.IndexByte(valid, '"'); i >= 0 {
			return valid[:i+1] + `\ud800` + valid[i+1:]
		}
		return `"\ud800"`
	}
	return valid
}

// violation breaks the valid value: the first required property (sorted)
// gets a value of another type; without one, the root gets another type.
func violation(kind chat.OutputKind, schema []byte, valid string) string {
	var obj map[string]json.RawMessage
	if kind == chat.OutputJSONObject || json.Unmarshal([]byte(valid), &obj) != nil || len(obj) == 0 {
		if len(valid) > 0 && valid[0] == '[' {
			return `{"violation":true}`
		}
		return `["violation"]`
	}
	var s argSchema
	_ = json.Unmarshal(schema, &s)
	required := append([]string(nil), s.Required...)
	sort.Strings(required)
	if len(required) == 0 {
		return `["violation"]`
	}
	name := required[0]
	wrong := json.RawMessage(`12345`)
	if t := schemaType(s.Properties[name]); t != "string" && t != "" {
		wrong = json.RawMessage(`"not-a-` + t + `"`)
	}
	obj[name] = wrong
	b, err := json.Marshal(obj)
	if err != nil {
		return `["violation"]`
	}
	return string(b)
}
