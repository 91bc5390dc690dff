package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/gemini"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
)

// The Gemini API (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent) is served on the same core as the other APIs: its
// request is read once (wire/gemini) and translated here into a
// chat.Request (systemInstruction → a system message, contents → messages,
// functionCall/functionResponse parts → tool calls and tool messages,
// functionDeclarations → chat tools under the shared rule, newTool). The
// model comes from the path. docs/GEMINI.md lists every field and how it
// is treated.

// apiGemini is the chat.Request API name of the Gemini ingress: tool-call
// groups and conversation anchors it creates are continued only through it.
const apiGemini = "gemini"

// gemRequest is a translated Gemini request: the chat request for the core
// and what the response needs.
type gemRequest struct {
	chat     chat.Request
	stops    []string // generationConfig.stopSequences, enforced on the text
	estimate int64    // the input-token estimate of the request
}

// decodeGeminiRequest validates a whole Gemini request for model (from the
// path; the caller checked it) and translates it. Nothing reaches the
// service unless it returns no error.
func (s *server) decodeGeminiRequest(body []byte, model string, stream bool) (gemRequest, error) {
	wr, err := readGeminiBody(body)
	if err != nil {
		return gemRequest{}, err
	}
	if !gemini.Absent(wr.GenerateContentRequest.Kind()) {
		return gemRequest{}, invalid("generateContentRequest", "is read only by countTokens.")
	}
	return s.translateGemini(wr, model, stream)
}

// readGeminiBody reads the body once, strictly, refusing it in the words
// every API uses.
func readGeminiBody(body []byte) (gemini.Request, error) {
	wr, err := gemini.Decode(body)
	if err != nil {
		return wr, wireRefusal(body, err, dottedPath)
	}
	return wr, nil
}

// translateGemini is the one translation of a Gemini request, in this order
// of refusals: the field decisions (cachedContent, safetySettings, labels),
// generationConfig (its refused fields, thinking, output format, stop
// sequences), tools, toolConfig, systemInstruction, contents.
func (s *server) translateGemini(wr gemini.Request, model string, stream bool) (gemRequest, error) {
	gr := gemRequest{chat: chat.Request{API: apiGemini, Model: model, Stream: stream, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto},
		ParallelToolCalls: true}}
	req := &gr.chat
	if !gemini.Absent(wr.CachedContent.Kind()) {
		return gemRequest{}, unsupported("cachedContent", "cached contents are kept on Google's side; send the whole conversation in contents.")
	}
	if err := ignored(kindArray)("safetySettings", wr.SafetySettings); err != nil {
		return gemRequest{}, err
	}
	if err := ignored(kindObject)("labels", wr.Labels); err != nil {
		return gemRequest{}, err
	}
	var err error
	if err = s.geminiGenConfig(wr.GenerationConfig, &gr); err != nil {
		return gemRequest{}, err
	}
	if req.Tools, err = s.geminiTools(wr.Tools); err != nil {
		return gemRequest{}, err
	}
	if err := geminiToolConfig(wr.ToolConfig, req); err != nil {
		return gemRequest{}, err
	}
	if si := wr.SystemInstruction; si.Kind != 0 && si.Kind != 'n' {
		if !si.IsObject() {
			return gemRequest{}, invalid("systemInstruction", "must be a content object with text parts.")
		}
		sys, err := systemParts(si.V.Parts)
		if err != nil {
			return gemRequest{}, err
		}
		if sys != "" {
			req.Messages = append(req.Messages, chat.Message{Role: chat.RoleSystem, Content: &sys})
		}
	}
	msgs, err := s.geminiContents(wr.Contents)
	if err != nil {
		return gemRequest{}, err
	}
	req.Messages = append(req.Messages, msgs...)
	gr.estimate = chat.EstimateInputTokens(*req)
	return gr, nil
}

// geminiGenConfig reads generationConfig: sampling fields accepted and not
// forwarded, what cannot be honoured refused by name, thinkingConfig onto
// the thinking level, responseMimeType with its schema onto the verified
// structured output, stopSequences enforced on the text.
func (s *server) geminiGenConfig(gc gemini.Object[gemini.GenConfig], gr *gemRequest) error {
	const p = "generationConfig"
	switch gc.Kind {
	case 0, 'n':
		return nil
	case '{':
	default:
		return invalid(p, "must be an object.")
	}
	c := &gc.V
	for _, f := range []struct {
		name string
		raw  gemini.Value
		kind kind
	}{{"temperature", c.Temperature, kindNumber}, {"topP", c.TopP, kindNumber}, {"topK", c.TopK, kindNumber},
		{"maxOutputTokens", c.MaxOutputTokens, kindNumber}, {"presencePenalty", c.PresencePenalty, kindNumber},
		{"frequencyPenalty", c.FrequencyPenalty, kindNumber}, {"seed", c.Seed, kindNumber}, {"mediaResolution", c.MediaResolution, kindString}} {
		if len(f.raw.Raw) > 0 {
			if err := ignored(f.kind)(p+"."+f.name, f.raw); err != nil {
				return err
			}
		}
	}
	if len(c.CandidateCount.Raw) > 0 {
		if err := defaultInteger(1, "must be a positive integer.", "only one candidate (candidateCount 1) is supported.")(p+".candidateCount", c.CandidateCount); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		raw  gemini.Value
	}{{"responseLogprobs", c.ResponseLogprobs}, {"logprobs", c.Logprobs}} {
		if len(f.raw.Raw) > 0 {
			if err := refusedWhenTrue("log probabilities are not available.")(p+"."+f.name, f.raw); err != nil {
				return err
			}
		}
	}
	if !gemini.Absent(c.SpeechConfig.Kind()) {
		return unsupported(p+".speechConfig", "speech output is not available.")
	}
	if !gemini.Absent(c.ImageConfig.Kind()) {
		return unsupported(p+".imageConfig", "image output is not available.")
	}
	if err := geminiModalities(c.ResponseModalities); err != nil {
		return err
	}
	var err error
	if gr.chat.Thinking, err = geminiThinking(c.ThinkingConfig); err != nil {
		return err
	}
	if gr.chat.Output, err = geminiOutput(c); err != nil {
		return err
	}
	gr.stops, err = geminiStops(c.StopSequences)
	return err
}

// geminiModalities accepts responseModalities ["TEXT"] (or none).
func geminiModalities(a gemini.Array[gemini.String]) error {
	const p = "generationConfig.responseModalities"
	if gemini.Absent(a.Kind) {
		return nil
	}
	if !a.IsArray() {
		return invalid(p, "must be an array of strings.")
	}
	for i, m := range a.Items {
		if !m.IsString() {
			return invalid(p+"."+strconv.Itoa(i), "must be a string.")
		}
		if m.V != "TEXT" {
			return unsupported(p+"."+strconv.Itoa(i), "only TEXT output is available.")
		}
	}
	return nil
}

// geminiThinking reads thinkingConfig: thinkingLevel (LOW, MEDIUM, HIGH,
// MINIMAL) wins; else thinkingBudget 0 turns thinking off, -1 (dynamic)
// asks for nothing, a positive budget is a level (chat.BudgetLevel).
// includeThoughts is accepted: the gateway shows no thoughts.
func geminiThinking(tc gemini.Object[gemini.ThinkingConfig]) (chat.ThinkingLevel, error) {
	const p = "generationConfig.thinkingConfig"
	switch tc.Kind {
	case 0, 'n':
		return chat.ThinkingOff, nil
	case '{':
	default:
		return chat.ThinkingOff, invalid(p, "must be an object.")
	}
	if b := tc.V.IncludeThoughts; !gemini.Absent(b.Kind) && !b.IsBool() {
		return chat.ThinkingOff, invalid(p+".includeThoughts", "must be a boolean.")
	}
	if l := tc.V.ThinkingLevel; !gemini.Absent(l.Kind) {
		if !l.IsString() {
			return chat.ThinkingOff, invalid(p+".thinkingLevel", "must be a string.")
		}
		if l.V == "THINKING_LEVEL_UNSPECIFIED" {
			return chat.ThinkingOff, nil
		}
		return effortLevel(strings.ToLower(l.V), p+".thinkingLevel")
	}
	b := tc.V.ThinkingBudget
	if gemini.Absent(b.Kind) {
		return chat.ThinkingOff, nil
	}
	n, ok := b.Int()
	switch {
	case b.Kind != '0' || !ok || n < -1:
		return chat.ThinkingOff, invalid(p+".thinkingBudget", "must be an integer: -1 (dynamic), 0 (off) or a positive budget.")
	case n <= 0:
		return chat.ThinkingOff, nil
	}
	return chat.BudgetLevel(n), nil
}

// geminiOutput reads responseMimeType with responseJsonSchema (JSON Schema;
// upper-case type names converted) or responseSchema (the API's OpenAPI
// dialect, converted: openAPISchema): application/json
// is the verified structured output every API has (a schema: json_schema;
// none: one JSON object); text/plain or none is text; anything else is
// refused.
func geminiOutput(c *gemini.GenConfig) (chat.OutputFormat, error) {
	const p = "generationConfig"
	mt := c.ResponseMimeType
	if !gemini.Absent(mt.Kind) && !mt.IsString() {
		return chat.OutputFormat{}, invalid(p+".responseMimeType", "must be a string.")
	}
	hasSchema, hasJSONSchema := !gemini.Absent(c.ResponseSchema.Kind()), !gemini.Absent(c.ResponseJSONSchema.Kind())
	switch mt.V {
	case "application/json":
	case "", "text/plain":
		if hasSchema || hasJSONSchema {
			return chat.OutputFormat{}, invalid(p+".responseMimeType", "must be \"application/json\" when a response schema is given.")
		}
		return chat.OutputFormat{}, nil
	default:
		return chat.OutputFormat{}, unsupported(p+".responseMimeType", "only text/plain and application/json answers are available.")
	}
	spec := structured.Spec{Kind: chat.OutputJSONObject}
	switch {
	case hasSchema && hasJSONSchema:
		return chat.OutputFormat{}, invalid(p+".responseJsonSchema", "cannot be given with responseSchema; give one.")
	case hasJSONSchema:
		if c.ResponseJSONSchema.Kind() != '{' {
			return chat.OutputFormat{}, invalid(p+".responseJsonSchema", "must be a JSON schema object.")
		}
		// gemini-cli's own JSON side calls send it in the OpenAPI dialect
		// (type "OBJECT"): upper-case type names, which no JSON Schema has,
		// are read as that dialect's.
		schema, err := openAPISchema(c.ResponseJSONSchema, p+".responseJsonSchema")
		if err != nil {
			return chat.OutputFormat{}, err
		}
		spec = structured.Spec{Kind: chat.OutputJSONSchema, Schema: schema, SchemaPath: p + ".responseJsonSchema"}
	case hasSchema:
		schema, err := openAPISchema(c.ResponseSchema, p+".responseSchema")
		if err != nil {
			return chat.OutputFormat{}, err
		}
		spec = structured.Spec{Kind: chat.OutputJSONSchema, Schema: schema, SchemaPath: p + ".responseSchema"}
	}
	spec.NamePath = p + ".name"
	return prepareOutput(spec)
}

func geminiStops(a gemini.Array[gemini.String]) ([]string, error) {
	const p = "generationConfig.stopSequences"
	switch a.Kind {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, invalid(p, "must be an array of strings.")
	}
	if len(a.Items) > maxStopSequences {
		return nil, invalid(p, "at most "+strconv.Itoa(maxStopSequences)+" stop sequences are accepted.")
	}
	var out []string
	for i, it := range a.Items {
		ip := p + "." + strconv.Itoa(i)
		if !it.IsString() {
			return nil, invalid(ip, "must be a string.")
		}
		if it.V == "" {
			return nil, invalid(ip, "must not be empty.")
		}
		out = append(out, it.V)
	}
	return out, nil
}

// openAPISchema converts a schema of the Gemini API's OpenAPI dialect into
// JSON Schema: type names in upper case (OBJECT, STRING, …) are lowered,
// nullable: true adds "null" to the type, propertyOrdering (an ordering
// hint) is dropped; every other keyword is kept for the shared lowering,
// which refuses what it cannot honour with its path.
func openAPISchema(raw []byte, param string) ([]byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, invalid(param, "must be a schema object.")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, invalid(param, "must be a schema object.")
	}
	out, err := json.Marshal(convertOpenAPI(v))
	if err != nil {
		return nil, invalid(param, "must be a schema object.")
	}
	return out, nil
}

func convertOpenAPI(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			switch k {
			case "propertyOrdering", "nullable":
				continue
			case "type":
				if t, ok := val.(string); ok {
					val = strings.ToLower(t)
				}
			case "properties", "$defs", "definitions":
				if m, ok := val.(map[string]any); ok {
					props := make(map[string]any, len(m))
					for name, sub := range m {
						props[name] = convertOpenAPI(sub)
					}
					val = props
				}
			case "items", "anyOf", "oneOf", "allOf", "not", "additionalProperties", "prefixItems":
				val = convertOpenAPI(val)
			}
			out[k] = val
		}
		if n, _ := x["nullable"].(bool); n {
			if t, ok := out["type"].(string); ok {
				out["type"] = []any{t, "null"}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = convertOpenAPI(x[i])
		}
		return out
	}
	return v
}

// serverTools are the Gemini API's tools that run on Google's side: refused
// by name (dropping one would make a search "succeed" with nothing).
var serverTools = map[string]bool{
	"googleSearch": true, "googleSearchRetrieval": true, "codeExecution": true, "urlContext": true, "retrieval": true,
	"fileSearch": true, "googleMaps": true, "computerUse": true, "enterpriseWebSearch": true, "mcpServers": true,
}

// geminiTools translates tools[].functionDeclarations into chat tools under
// the rules every API's tools have (newTool); all declarations of all
// entries form one tool set. A schema is parametersJsonSchema (JSON Schema,
// as sent) or parameters (the OpenAPI dialect, converted: openAPISchema).
// A tool set is translated once and remembered by its bytes as sent.
func (s *server) geminiTools(t gemini.Tools) ([]chat.Tool, error) {
	switch t.Kind() {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, invalid("tools", "must be an array.")
	}
	k := toolsKey{api: apiGemini, maxTools: s.cfg.MaxTools, opts: s.toolOptions()}
	if tools, ok := decodedTools.get(t.Raw, k); ok {
		return append([]chat.Tool(nil), tools...), nil
	}
	type decl struct {
		at string
		fd *gemini.FunctionDeclaration
	}
	var decls []decl
	for i, item := range t.Entries() {
		p := "tools." + strconv.Itoa(i)
		if !item.IsObject() {
			return nil, invalid(p, "must be an object.")
		}
		for _, name := range item.V.Unknown.Names() {
			if item.V.Unknown[name].Kind() == kindNull {
				continue
			}
			if serverTools[name] {
				return nil, unsupported(p+"."+name, "this tool runs on Google's side and is not available through this gateway; declare a function instead.")
			}
			if !validToolName(name) {
				return nil, invalid(p, "holds a member that is not a known tool; declare functions in functionDeclarations.")
			}
			return nil, invalid(p+"."+name, "is not a known tool; declare functions in functionDeclarations.")
		}
		fds := item.V.FunctionDeclarations
		switch fds.Kind {
		case 0, 'n':
			continue
		case '[':
		default:
			return nil, invalid(p+".functionDeclarations", "must be an array.")
		}
		for j := range fds.Items {
			dp := p + ".functionDeclarations." + strconv.Itoa(j)
			if !fds.Items[j].IsObject() {
				return nil, invalid(dp, "must be an object.")
			}
			decls = append(decls, decl{at: dp, fd: &fds.Items[j].V})
		}
	}
	if len(decls) == 0 {
		return nil, nil
	}
	if len(decls) > s.cfg.MaxTools {
		return nil, unsupported("tools", "more tools than this gateway accepts (MAX_TOOLS).")
	}
	tools := make([]chat.Tool, 0, len(decls))
	seen := make(map[string]bool, len(decls))
	for _, dc := range decls {
		fd := dc.fd
		d := toolDef{at: dc.at, name: fd.Name.V, nameOK: fd.Name.IsString()}
		switch desc := fd.Description; {
		case desc.IsString():
			d.desc = desc.V
		case !gemini.Absent(desc.Kind):
			d.descErr = invalid(dc.at+".description", "must be a string.")
		}
		hasParams, hasJSON := !gemini.Absent(fd.Parameters.Kind()), !gemini.Absent(fd.ParametersJSONSchema.Kind())
		switch {
		case hasParams && hasJSON:
			d.schemaErr = invalid(dc.at+".parametersJsonSchema", "cannot be given with parameters; give one.")
		case hasJSON:
			d.schemaAt = dc.at + ".parametersJsonSchema"
			if fd.ParametersJSONSchema.Kind() != '{' {
				d.schemaErr = invalid(d.schemaAt, "must be a JSON schema object.")
			} else {
				d.schema = append([]byte(nil), fd.ParametersJSONSchema...)
			}
		case hasParams:
			d.schemaAt = dc.at + ".parameters"
			d.schema, d.schemaErr = openAPISchema(fd.Parameters, d.schemaAt)
		}
		tl, err := s.newTool(d, seen)
		if err != nil {
			return nil, err
		}
		tools = append(tools, tl)
	}
	decodedTools.put(t.Raw, k, tools, toolsSize(tools))
	return append([]chat.Tool(nil), tools...), nil
}

// geminiToolConfig reads toolConfig.functionCallingConfig: mode AUTO (the
// default) or NONE. ANY and VALIDATED would need the answer to be a call,
// which the upstream cannot be made to produce: refused, as the Messages
// API's "any" is. allowedFunctionNames belongs to those modes only.
func geminiToolConfig(tc gemini.Object[gemini.ToolConfig], req *chat.Request) error {
	const p = "toolConfig"
	switch tc.Kind {
	case 0, 'n':
		return nil
	case '{':
	default:
		return invalid(p, "must be an object.")
	}
	if err := ignored(kindObject)(p+".retrievalConfig", tc.V.RetrievalConfig); err != nil {
		return err
	}
	fc := tc.V.FunctionCallingConfig
	switch fc.Kind {
	case 0, 'n':
		return nil
	case '{':
	default:
		return invalid(p+".functionCallingConfig", "must be an object.")
	}
	const fp = p + ".functionCallingConfig"
	mode := fc.V.Mode
	if !gemini.Absent(mode.Kind) && !mode.IsString() {
		return invalid(fp+".mode", "must be a string.")
	}
	switch mode.V {
	case "", "MODE_UNSPECIFIED", "AUTO":
		req.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	case "NONE":
		req.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceNone}
	case "ANY", "VALIDATED":
		return unsupported(fp+".mode", "the upstream cannot be made to call a function; only AUTO and NONE are supported.")
	default:
		return invalid(fp+".mode", `must be "AUTO", "NONE", "ANY" or "VALIDATED".`)
	}
	if names := fc.V.AllowedFunctionNames; !gemini.Absent(names.Kind) {
		return invalid(fp+".allowedFunctionNames", "may be given only with mode ANY, which is not supported.")
	}
	return nil
}

// systemParts reads systemInstruction's parts: text only, joined with
// blank lines.
func systemParts(a gemini.Array[gemini.Object[gemini.Part]]) (string, error) {
	const p = "systemInstruction.parts"
	if !a.IsArray() {
		return "", invalid(p, "is required and must be an array of text parts.")
	}
	var texts []string
	for i, it := range a.Items {
		ip := p + "." + strconv.Itoa(i)
		if !it.IsObject() {
			return "", invalid(ip, "must be an object.")
		}
		if err := checkPartKinds(ip, &it.V); err != nil {
			return "", err
		}
		if !it.V.Text.IsString() {
			return "", invalid(ip+".text", "is required in a system instruction: only text parts are accepted there.")
		}
		texts = append(texts, it.V.Text.V)
	}
	return strings.Join(texts, "\n\n"), nil
}

// Part kinds the API defines that the gateway cannot send upstream.
var geminiUnsupportedParts = map[string]string{
	"inlineData":          "inline data (images, audio, documents) cannot be sent to the upstream.",
	"fileData":            "file parts cannot be sent to the upstream.",
	"executableCode":      "code execution is not available.",
	"codeExecutionResult": "code execution is not available.",
	"videoMetadata":       "video cannot be sent to the upstream.",
	"toolCall":            "server-side tool calls are not available.",
	"toolResponse":        "server-side tool calls are not available.",
}

// checkPartKinds refuses a part that holds a kind the gateway cannot send,
// by name; members it does not know are ignored.
func checkPartKinds(ip string, pt *gemini.Part) error {
	for _, name := range pt.Unknown.Names() {
		if d, ok := geminiUnsupportedParts[name]; ok && pt.Unknown[name].Kind() != kindNull {
			return unsupported(ip+"."+name, d)
		}
	}
	if t := pt.Text; !gemini.Absent(t.Kind) && !t.IsString() {
		return invalid(ip+".text", "must be a string.")
	}
	if b := pt.Thought; !gemini.Absent(b.Kind) && !b.IsBool() {
		return invalid(ip+".thought", "must be a boolean.")
	}
	return nil
}

// pendingCall is a function call of the previous model content, waiting for
// its response.
type pendingCall struct {
	id, name string
	answered bool
	response []byte // the response that answered it, as sent
}

// geminiContents translates contents. A model content's functionCall parts
// must carry their id (the gateway issues one with every call); the next
// content, a user content, must answer every one of them with a
// functionResponse part: by its id, or, when it has none, by its name when
// exactly one unanswered call has that name; anything else is refused, never
// guessed. Thought parts (another backend's) are dropped.
func (s *server) geminiContents(a gemini.Array[gemini.Object[gemini.Content]]) ([]chat.Message, error) {
	if !a.IsArray() {
		return nil, invalid("contents", "is required and must be an array.")
	}
	if len(a.Items) == 0 {
		return nil, invalid("contents", "must not be empty.")
	}
	var out []chat.Message
	var pending []pendingCall
	pendingAt := -1
	seen := map[string]bool{}
	for i, item := range a.Items {
		p := "contents." + strconv.Itoa(i)
		if !item.IsObject() {
			return nil, invalid(p, "must be an object.")
		}
		role := item.V.Role
		if !gemini.Absent(role.Kind) && !role.IsString() {
			return nil, invalid(p+".role", "must be a string.")
		}
		parts := item.V.Parts
		if !parts.IsArray() || len(parts.Items) == 0 {
			return nil, invalid(p+".parts", "is required and must be a non-empty array of parts.")
		}
		for j := range parts.Items {
			if !parts.Items[j].IsObject() {
				return nil, invalid(p+".parts."+strconv.Itoa(j), "must be an object.")
			}
			if err := checkPartKinds(p+".parts."+strconv.Itoa(j), &parts.Items[j].V); err != nil {
				return nil, err
			}
		}
		switch role.V {
		case "model":
			if len(pending) > 0 {
				return nil, unansweredCalls(pendingAt, pending)
			}
			m, calls, err := modelParts(p, parts.Items, seen)
			if err != nil {
				return nil, err
			}
			if m.Content == nil && len(m.ToolCalls) == 0 {
				continue // thoughts only
			}
			out = append(out, m)
			pending, pendingAt = calls, i
		case "", "user":
			msgs, err := s.userParts(p, parts.Items, pending, pendingAt)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
			pending, pendingAt = nil, -1
		default:
			return nil, invalid(p+".role", `must be "user" or "model".`)
		}
	}
	if len(out) == 0 {
		return nil, invalid("contents", "must hold a user content.")
	}
	if len(pending) > 0 {
		return nil, unansweredCalls(pendingAt, pending)
	}
	if out[len(out)-1].Role == chat.RoleAssistant {
		return nil, unsupported("contents."+strconv.Itoa(len(a.Items)-1), "a final model content cannot be continued by the upstream; end with a user content.")
	}
	return out, nil
}

// unansweredCalls refuses function calls without responses in the next
// content.
func unansweredCalls(at int, pending []pendingCall) error {
	var ids []string
	for _, c := range pending {
		if !c.answered {
			ids = append(ids, c.id)
		}
	}
	return invalid("contents."+strconv.Itoa(at+1), "the function calls "+strings.Join(ids, ", ")+
		" of the model content before have no functionResponse here; every call must be answered in the next content.")
}

// modelParts reads a model content: text parts joined, functionCall parts
// as tool calls (args as sent), thought parts dropped.
func modelParts(p string, parts []gemini.Object[gemini.Part], seen map[string]bool) (chat.Message, []pendingCall, error) {
	m := chat.Message{Role: chat.RoleAssistant}
	var text strings.Builder
	hasText := false
	var calls []pendingCall
	for j := range parts {
		pt := &parts[j].V
		ip := p + ".parts." + strconv.Itoa(j)
		switch {
		case pt.Thought.V:
		case pt.FunctionCall.Kind != 0 && pt.FunctionCall.Kind != 'n':
			if !pt.FunctionCall.IsObject() {
				return m, nil, invalid(ip+".functionCall", "must be an object.")
			}
			fc := &pt.FunctionCall.V
			if !fc.ID.IsString() || fc.ID.V == "" {
				return m, nil, invalid(ip+".functionCall.id", "is required: this gateway gives every call an id and pairs its response by it; send the call as it was received.")
			}
			id := fc.ID.V
			if !validToolID(id) {
				return m, nil, invalid(ip+".functionCall.id", "must match ^[a-zA-Z0-9_-]+$.")
			}
			if seen[id] {
				return m, nil, invalid(ip+".functionCall.id", "repeats the id of an earlier call: "+id+".")
			}
			seen[id] = true
			name, err := wireReqString(fc.Name, ip+".functionCall.name")
			if err != nil {
				return m, nil, err
			}
			args := "{}"
			switch fc.Args.Kind() {
			case 0, 'n':
			case '{':
				args = string(fc.Args)
			default:
				return m, nil, invalid(ip+".functionCall.args", "must be an object.")
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Name: name, Arguments: args})
			calls = append(calls, pendingCall{id: id, name: name})
		case pt.Text.IsString():
			text.WriteString(pt.Text.V)
			hasText = hasText || pt.Text.V != ""
		case pt.FunctionResponse.Kind != 0 && pt.FunctionResponse.Kind != 'n':
			return m, nil, invalid(ip+".functionResponse", "belongs in a user content.")
		default:
			return m, nil, invalid(ip, "must hold text or a functionCall.")
		}
	}
	if hasText {
		t := text.String()
		m.Content = &t
	}
	return m, calls, nil
}

// userParts reads a user content. After a model content with function calls
// (pending) its functionResponse parts answer every call once, in any
// order, and become tool messages; text after them is added to the last
// result (and kept as its Trailing), as the Messages API's text after
// tool_result blocks is. Otherwise its text parts are one user message.
func (s *server) userParts(p string, parts []gemini.Object[gemini.Part], pending []pendingCall, pendingAt int) ([]chat.Message, error) {
	var results []chat.Message
	var text strings.Builder
	hasText := false
	for j := range parts {
		pt := &parts[j].V
		ip := p + ".parts." + strconv.Itoa(j)
		switch {
		case pt.Thought.V:
		case pt.FunctionResponse.Kind != 0 && pt.FunctionResponse.Kind != 'n':
			if hasText {
				return nil, invalid(ip, "functionResponse parts must come first in the content, before any text.")
			}
			if !pt.FunctionResponse.IsObject() {
				return nil, invalid(ip+".functionResponse", "must be an object.")
			}
			id, content, err := s.functionResponse(ip+".functionResponse", &pt.FunctionResponse.V, pending)
			if err != nil {
				return nil, err
			}
			if id == "" {
				continue // the same response again (see functionResponse)
			}
			results = append(results, chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: &content})
		case pt.Text.IsString():
			if text.Len() > 0 && pt.Text.V != "" {
				text.WriteString("\n\n")
			}
			text.WriteString(pt.Text.V)
			hasText = true
		case pt.FunctionCall.Kind != 0 && pt.FunctionCall.Kind != 'n':
			return nil, invalid(ip+".functionCall", "belongs in a model content.")
		default:
			return nil, invalid(ip, "must hold text or a functionResponse.")
		}
	}
	for _, c := range pending {
		if !c.answered {
			return nil, unansweredCalls(pendingAt, pending)
		}
	}
	if len(results) == 0 {
		if !hasText {
			return nil, invalid(p+".parts", "must hold text.")
		}
		t := text.String()
		return []chat.Message{{Role: chat.RoleUser, Content: &t}}, nil
	}
	if hasText && text.Len() > 0 {
		last := results[len(results)-1].Content
		joined := *last + "\n\n" + text.String()
		results[len(results)-1].Content = &joined
		results[len(results)-1].Trailing = text.String()
	}
	return results, nil
}

// functionResponse pairs one functionResponse with a pending call and reads
// its result: by id when it has one (its name must agree), else by name
// when exactly one unanswered call has it. response {"output": text} is the
// text, {"error": text} the text marked as a tool error, any other object
// its JSON. A response that repeats, byte for byte, the one that already
// answered its call (by id) is the same result: gemini-cli 0.61 replays
// every functionResponse twice in a resumed session's history. It returns
// the id "" then, and the caller drops it; a different second answer is
// refused.
func (s *server) functionResponse(fp string, fr *gemini.FunctionResponse, pending []pendingCall) (string, string, error) {
	if !gemini.Absent(fr.Name.Kind) && !fr.Name.IsString() {
		return "", "", invalid(fp+".name", "must be a string.")
	}
	var call *pendingCall
	if id := fr.ID; !gemini.Absent(id.Kind) && !(id.IsString() && id.V == "") {
		if !id.IsString() {
			return "", "", invalid(fp+".id", "must be a string.")
		}
		for i := range pending {
			if pending[i].id == id.V {
				call = &pending[i]
			}
		}
		if call == nil {
			if !validToolID(id.V) {
				return "", "", invalid(fp+".id", "matches no function call of the model content before.")
			}
			return "", "", invalid(fp+".id", "matches no function call of the model content before: "+id.V+".")
		}
		if fr.Name.IsString() && fr.Name.V != call.name {
			return "", "", invalid(fp+".name", "is not the name of the call with this id.")
		}
	} else {
		if !fr.Name.IsString() || fr.Name.V == "" {
			return "", "", invalid(fp+".name", "is required when the response has no id.")
		}
		for i := range pending {
			if pending[i].name == fr.Name.V && !pending[i].answered {
				if call != nil {
					return "", "", invalid(fp+".id", "is required: more than one unanswered call has this name, and a response without an id cannot be paired with one of them.")
				}
				call = &pending[i]
			}
		}
		if call == nil {
			return "", "", invalid(fp+".name", "names no unanswered function call of the model content before.")
		}
	}
	if call.answered {
		if fr.ID.IsString() && string(fr.Response) == string(call.response) && absentRaw(fr.Parts) {
			return "", "", nil
		}
		return "", "", invalid(fp, "answers the call "+call.id+" a second time, differently.")
	}
	call.answered, call.response = true, fr.Response
	if pr := fr.Parts; !gemini.Absent(pr.Kind()) && !(pr.Kind() == '[' && len(strings.TrimSpace(string(pr))) == 2) {
		return "", "", unsupported(fp+".parts", "multimodal function responses cannot be sent to the upstream.")
	}
	if fr.Response.Kind() != '{' {
		return "", "", invalid(fp+".response", "is required and must be an object.")
	}
	content := responseText(fr.Response)
	if len(content) > s.cfg.MaxToolResultBytes {
		return "", "", refuse(errs.RequestTooLarge, fp+".response", "The function response exceeds the per-result size limit.")
	}
	return call.id, content, nil
}

// responseText is the text of a function response: {"output": "…"} is its
// text (gemini-cli's form), {"error": "…"} its text marked as a tool error,
// any other object its JSON as sent.
func responseText(raw []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		for k, v := range m {
			var s string
			if json.Unmarshal(v, &s) != nil {
				break
			}
			switch k {
			case "output":
				return s
			case "error":
				return toolErrorPrefix + s
			}
		}
	}
	return string(raw)
}
