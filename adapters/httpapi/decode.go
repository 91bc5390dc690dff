package httpapi

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// The request is decoded object by object into maps of raw values and each
// known key is read exactly (encoding/json would match struct fields
// case-insensitively, so "Stream" would silently mean "stream"). Known fields
// are honoured, ignored or refused as listed in the package documentation;
// keys this gateway does not know are ignored, so that newer SDKs and
// proxies that add harmless fields keep working. Refusals name the param path.

// kind is the JSON kind of a raw value.
type kind uint8

const (
	kindInvalid kind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// kindOf reads the kind from the first byte. Values come out of
// encoding/json already validated and trimmed.
func kindOf(raw []byte) kind {
	if len(raw) == 0 {
		return kindInvalid
	}
	switch c := raw[0]; {
	case c == 'n':
		return kindNull
	case c == 't' || c == 'f':
		return kindBool
	case c == '"':
		return kindString
	case c == '[':
		return kindArray
	case c == '{':
		return kindObject
	case c == '-' || (c >= '0' && c <= '9'):
		return kindNumber
	}
	return kindInvalid
}

// absent says whether an optional value is missing or null (null is treated
// as absent everywhere).
func absent(raw json.RawMessage) bool { return len(raw) == 0 || kindOf(raw) == kindNull }

func fields(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m) // kind checked by the caller; the body was validated
	return m
}

func elems(raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	_ = json.Unmarshal(raw, &a)
	return a
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// optString reads an optional string: "" when absent or null.
func optString(raw json.RawMessage, param string) (string, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return "", nil
	case kindString:
		return str(raw), nil
	}
	return "", invalid(param, "must be a string.")
}

// reqString reads a required, non-empty string.
func reqString(raw json.RawMessage, param string) (string, error) {
	if kindOf(raw) != kindString {
		return "", invalid(param, "is required and must be a string.")
	}
	s := str(raw)
	if s == "" {
		return "", invalid(param, "must not be empty.")
	}
	return s, nil
}

// optBool reads an optional boolean: def when absent or null.
func optBool(raw json.RawMessage, param string, def bool) (bool, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return def, nil
	case kindBool:
		return raw[0] == 't', nil
	}
	return false, invalid(param, "must be a boolean.")
}

// integer reads a JSON number with an integral value.
func integer(raw json.RawMessage) (int64, bool) {
	if kindOf(raw) != kindNumber {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// decodeTop is what both APIs check first: the body is one JSON object of
// valid Unicode text, and its model is a configured one the caller's slot may
// use (allowed), refused exactly like an unknown one otherwise.
func (s *server) decodeTop(body []byte, allowed func(string) bool) (map[string]json.RawMessage, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(body) {
			return nil, "", invalid("", "The body is not valid JSON.")
		}
		return nil, "", invalid("", "The body must be a JSON object.")
	}
	if err := checkText(body); err != nil {
		return nil, "", err
	}
	if kindOf(top["model"]) != kindString || str(top["model"]) == "" {
		return nil, "", invalid("model", "is required and must be a string.")
	}
	model := str(top["model"])
	if !s.models[model] || !allowed(model) {
		return nil, "", refuse(errs.ModelNotFound, "model", "")
	}
	return top, model, nil
}

// decodeRequest validates a whole chat request and normalizes it. Nothing
// reaches the service unless this returns no error.
//
// allowed is the caller's model allowlist; a configured model outside it is
// refused exactly like an unknown model, so a slot cannot tell the two apart.
func (s *server) decodeRequest(body []byte, allowed func(string) bool) (chat.Request, error) {
	top, model, err := s.decodeTop(body, allowed)
	if err != nil {
		return chat.Request{}, err
	}
	req := chat.Request{Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}
	if req.Stream, err = optBool(top["stream"], "stream", false); err != nil {
		return chat.Request{}, err
	}
	if so := top["stream_options"]; !absent(so) {
		if kindOf(so) != kindObject {
			return chat.Request{}, invalid("stream_options", "must be an object.")
		}
		if req.IncludeUsage, err = optBool(fields(so)["include_usage"], "stream_options.include_usage", false); err != nil {
			return chat.Request{}, err
		}
	}
	if req.ParallelToolCalls, err = optBool(top["parallel_tool_calls"], "parallel_tool_calls", true); err != nil {
		return chat.Request{}, err
	}
	if err := checkFields(top, fieldPolicy); err != nil {
		return chat.Request{}, err
	}
	if req.Tools, err = s.decodeTools(top["tools"]); err != nil {
		return chat.Request{}, err
	}
	if req.ToolChoice, err = decodeToolChoice(top["tool_choice"], req.Tools); err != nil {
		return chat.Request{}, err
	}
	if req.Messages, err = s.decodeMessages(top["messages"]); err != nil {
		return chat.Request{}, err
	}
	return req, nil
}

// fieldRule is the policy of one top-level OpenAI field that the gateway
// accepts but ignores, or refuses unless it has its default value.
type fieldRule struct {
	name  string
	check func(param string, raw json.RawMessage) error
}

// checkFields applies each rule to its field of top, when present, in the
// rules' order; the first refusal wins.
func checkFields(top map[string]json.RawMessage, rules []fieldRule) error {
	for _, rule := range rules {
		if raw, ok := top[rule.name]; ok {
			if err := rule.check(rule.name, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldPolicy lists the ignored and refused top-level fields, in the order of
// the package documentation's table. Honoured fields (model, messages, stream,
// stream_options, tools, tool_choice, parallel_tool_calls) are read above.
var fieldPolicy = []fieldRule{
	// Accepted and ignored: the upstream has no such setting; the answer is
	// still a true answer to the conversation.
	{"temperature", ignored(kindNumber)},
	{"top_p", ignored(kindNumber)},
	{"max_tokens", ignoredInteger},
	{"max_completion_tokens", ignoredInteger},
	{"presence_penalty", ignored(kindNumber)},
	{"frequency_penalty", ignored(kindNumber)},
	{"stop", ignored(kindString, kindArray)},
	{"seed", ignoredInteger},
	{"user", ignored(kindString)},
	{"metadata", ignored(kindObject)},
	{"store", ignored(kindBool)},
	{"service_tier", ignored(kindString)},
	{"reasoning_effort", ignored(kindString)},
	{"verbosity", ignored(kindString)},
	{"prompt_cache_key", ignored(kindString)},
	{"safety_identifier", ignored(kindString)},
	// Refused unless default: honouring them is impossible and ignoring them
	// would return something other than what was asked for.
	{"n", defaultInteger(1, "must be a positive integer.", "only one choice (n=1) is supported.")},
	{"logprobs", refusedWhenTrue("log probabilities are not available.")},
	{"top_logprobs", checkTopLogprobs},
	{"logit_bias", checkLogitBias},
	{"response_format", checkResponseFormat},
	{"modalities", checkModalities},
	{"audio", refusedUnlessNull("audio output is not supported.")},
	{"prediction", refusedUnlessNull("predicted outputs are not supported.")},
	{"functions", refusedUnlessNull("legacy function calling is not supported; use tools.")},
	{"function_call", refusedUnlessNull("legacy function calling is not supported; use tool_choice.")},
	{"web_search_options", refusedUnlessNull("web search is not supported.")},
}

var kindNames = map[kind]string{
	kindBool: "a boolean", kindNumber: "a number", kindString: "a string", kindArray: "an array", kindObject: "an object",
}

// ignored accepts null or one of the given kinds, and nothing else.
func ignored(kinds ...kind) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		k := kindOf(raw)
		if k == kindNull {
			return nil
		}
		names := make([]string, 0, len(kinds))
		for _, want := range kinds {
			if k == want {
				return nil
			}
			names = append(names, kindNames[want])
		}
		return invalid(param, "must be "+strings.Join(names, " or ")+".")
	}
}

func ignoredInteger(param string, raw json.RawMessage) error {
	if absent(raw) {
		return nil
	}
	if _, ok := integer(raw); !ok {
		return invalid(param, "must be an integer.")
	}
	return nil
}

func refusedUnlessNull(detail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		if absent(raw) {
			return nil
		}
		return unsupported(param, detail)
	}
}

// defaultInteger accepts only an integer that is at least def, and refuses
// anything above def: the gateway can only honour the default.
func defaultInteger(def int64, invalidDetail, unsupportedDetail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		if absent(raw) {
			return nil
		}
		n, ok := integer(raw)
		switch {
		case !ok || n < def:
			return invalid(param, invalidDetail)
		case n > def:
			return unsupported(param, unsupportedDetail)
		}
		return nil
	}
}

// refusedWhenTrue accepts an optional boolean and refuses true.
func refusedWhenTrue(detail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		on, err := optBool(raw, param, false)
		if err != nil {
			return err
		}
		if on {
			return unsupported(param, detail)
		}
		return nil
	}
}

// checkTopLogprobs: log probabilities are not available (both APIs).
var checkTopLogprobs = defaultInteger(0, "must be a non-negative integer.", "log probabilities are not available.")

func checkLogitBias(param string, raw json.RawMessage) error {
	switch kindOf(raw) {
	case kindNull:
		return nil
	case kindObject:
		if len(fields(raw)) == 0 {
			return nil
		}
		return unsupported(param, "token biases cannot be applied.")
	}
	return invalid(param, "must be an object.")
}

func checkResponseFormat(param string, raw json.RawMessage) error {
	switch kindOf(raw) {
	case kindNull:
		return nil
	case kindObject:
	default:
		return invalid(param, "must be an object.")
	}
	return checkFormatType(param+".type", fields(raw)["type"], "response format")
}

// checkFormatType reads the type of an output format (chat response_format,
// Responses text.format): only "text" can be honoured; noun names the format
// in the refusal of an unknown type.
func checkFormatType(p string, t json.RawMessage, noun string) error {
	if kindOf(t) != kindString {
		return invalid(p, "is required and must be a string.")
	}
	switch str(t) {
	case "text":
		return nil
	case "json_object", "json_schema":
		return unsupported(p, "structured output cannot be guaranteed; only \"text\" is supported.")
	}
	return invalid(p, "is not a known "+noun+".")
}

func checkModalities(param string, raw json.RawMessage) error {
	switch kindOf(raw) {
	case kindNull:
		return nil
	case kindArray:
	default:
		return invalid(param, "must be an array.")
	}
	for i, m := range elems(raw) {
		p := param + "[" + strconv.Itoa(i) + "]"
		if kindOf(m) != kindString {
			return invalid(p, "must be a string.")
		}
		if str(m) != "text" {
			return unsupported(p, "only the text modality is supported.")
		}
	}
	return nil
}

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

// decodeTools validates the tool definitions. The parameters schema is kept
// byte-for-byte as sent (it is what the tools hash binds); its lowered form
// under ToolSchemaPolicy (domain/toolschema) is what the upstream receives.
func (s *server) decodeTools(raw json.RawMessage) ([]chat.Tool, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return nil, nil
	case kindArray:
	default:
		return nil, invalid("tools", "must be an array.")
	}
	items := elems(raw)
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
		if kindOf(item) != kindObject {
			return nil, invalid(p, "must be an object.")
		}
		f := fields(item)
		if kindOf(f["type"]) != kindString {
			return nil, invalid(p+".type", "is required and must be a string.")
		}
		if str(f["type"]) != "function" {
			return nil, unsupported(p+".type", "only function tools are supported.")
		}
		fn := f["function"]
		if kindOf(fn) != kindObject {
			return nil, invalid(p+".function", "is required and must be an object.")
		}
		ff := fields(fn)
		var t chat.Tool
		if kindOf(ff["name"]) != kindString || !validToolName(str(ff["name"])) {
			return nil, invalid(p+".function.name", "is required and must match ^[A-Za-z0-9_-]{1,64}$.")
		}
		t.Name = str(ff["name"])
		if seen[t.Name] {
			return nil, invalid(p+".function.name", "repeats the name of an earlier tool.")
		}
		seen[t.Name] = true
		var err error
		if t.Description, err = optString(ff["description"], p+".function.description"); err != nil {
			return nil, err
		}
		switch params := ff["parameters"]; kindOf(params) {
		case kindInvalid, kindNull:
		case kindObject:
			lowered, err := toolschema.Lower(params, p+".function.parameters", toolschema.Options{Policy: s.cfg.ToolSchemaPolicy, WidenCombinators: s.cfg.WidenCombinators})
			var pr *toolschema.Problem
			if errors.As(err, &pr) {
				return nil, refuse(pr.Code, pr.Path, pr.Detail)
			}
			if err != nil {
				return nil, err
			}
			t.Parameters, t.UpstreamParameters = params, lowered
		default:
			return nil, invalid(p+".function.parameters", "must be a JSON schema object.")
		}
		if st := ff["strict"]; !absent(st) {
			b, err := optBool(st, p+".function.strict", false)
			if err != nil {
				return nil, err
			}
			t.Strict = &b
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// validToolName matches ^[A-Za-z0-9_-]{1,64}$, the tool names the upstream
// accepts (docs/TOOL-CALLING.md).
func validToolName(s string) bool { return toolschema.Identifier(s) }

// decodeToolChoice reads "auto" | "none" | "required" | {"type":"function",
// "function":{"name":…}}; absent means auto.
func decodeToolChoice(raw json.RawMessage, tools []chat.Tool) (chat.ToolChoice, error) {
	auto := chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return auto, nil
	case kindString:
		switch mode := chat.ToolChoiceMode(str(raw)); mode {
		case chat.ToolChoiceAuto, chat.ToolChoiceNone:
			return chat.ToolChoice{Mode: mode}, nil
		case chat.ToolChoiceRequired:
			if len(tools) == 0 {
				return auto, invalid("tool_choice", "\"required\" needs at least one tool.")
			}
			return chat.ToolChoice{Mode: mode}, nil
		}
		return auto, invalid("tool_choice", "must be \"auto\", \"none\", \"required\" or a function choice.")
	case kindObject:
	default:
		return auto, invalid("tool_choice", "must be a string or an object.")
	}
	f := fields(raw)
	if kindOf(f["type"]) != kindString {
		return auto, invalid("tool_choice.type", "is required and must be a string.")
	}
	if str(f["type"]) != "function" {
		return auto, unsupported("tool_choice.type", "only a function tool choice is supported.")
	}
	if kindOf(f["function"]) != kindObject {
		return auto, invalid("tool_choice.function", "is required and must be an object.")
	}
	name, err := reqString(fields(f["function"])["name"], "tool_choice.function.name")
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
