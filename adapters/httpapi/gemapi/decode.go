package gemapi

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
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
// functionDeclarations → chat tools under the shared rule, rules.Settings.NewTools). The
// model comes from the path. docs/GEMINI.md lists every field and how it
// is treated.

// apiGemini is the chat.Request API name of the Gemini ingress: tool-call
// groups and conversation anchors it creates are continued only through it.
const apiGemini = "gemini"

// Request is a translated Gemini request: the chat request for the core
// and what the answer needs.
type Request struct {
	Chat     chat.Request
	stops    []string // generationConfig.stopSequences, enforced on the text
	estimate int64    // the input-token estimate of the request
}

// Decode validates a whole generateContent or streamGenerateContent
// request for model (from the path; the transport checked it) and
// translates it. Nothing reaches the service unless it returns no error.
func Decode(in *rules.Settings, body []byte, model string, stream bool) (Request, error) {
	wr, err := readGeminiBody(body)
	if err != nil {
		return Request{}, err
	}
	if !gemini.Absent(wr.GenerateContentRequest.Kind()) {
		return Request{}, rules.Invalid("generateContentRequest", "is read only by countTokens.")
	}
	return translateGemini(in, wr, model, stream)
}

// DecodeCount validates and translates the body of a countTokens request
// for model: a generateContent request, or one wrapped in
// generateContentRequest (never both).
func DecodeCount(in *rules.Settings, body []byte, model string) (Request, error) {
	wr, err := readGeminiBody(body)
	if err != nil {
		return Request{}, err
	}
	if inner := wr.GenerateContentRequest; !absentRaw(inner) {
		if inner.Kind() != '{' {
			return Request{}, rules.Invalid("generateContentRequest", "must be an object.")
		}
		if wr.Contents.Kind != 0 {
			return Request{}, rules.Invalid("contents", "cannot be given with generateContentRequest; give one.")
		}
		if wr, err = readGeminiBody(inner); err != nil {
			return Request{}, err
		}
	}
	return translateGemini(in, wr, model, false)
}

// absentRaw says whether a member kept as sent is missing or null.
func absentRaw(r []byte) bool { return len(r) == 0 || r[0] == 'n' }

// readGeminiBody reads the body once, strictly, refusing it in the words
// every API uses.
func readGeminiBody(body []byte) (gemini.Request, error) {
	return rules.ReadWire(body, gemini.Decode, rules.DottedPath)
}

// translateGemini is the one translation of a Gemini request, in this order
// of refusals: the field decisions (cachedContent, safetySettings, labels),
// generationConfig (its refused fields, thinking, output format, stop
// sequences), tools, toolConfig, systemInstruction, contents.
func translateGemini(in *rules.Settings, wr gemini.Request, model string, stream bool) (Request, error) {
	gr := Request{Chat: chat.Request{API: apiGemini, Model: model, Stream: stream, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto},
		ParallelToolCalls: true}}
	req := &gr.Chat
	if !gemini.Absent(wr.CachedContent.Kind()) {
		return Request{}, rules.Unsupported("cachedContent", "cached contents are kept on Google's side; send the whole conversation in contents.")
	}
	if err := rules.Ignored(rules.KindArray)("safetySettings", wr.SafetySettings); err != nil {
		return Request{}, err
	}
	if err := rules.Ignored(rules.KindObject)("labels", wr.Labels); err != nil {
		return Request{}, err
	}
	var err error
	if err = geminiGenConfig(wr.GenerationConfig, &gr); err != nil {
		return Request{}, err
	}
	if req.Tools, err = geminiTools(in, wr.Tools); err != nil {
		return Request{}, err
	}
	if err := geminiToolConfig(wr.ToolConfig, req); err != nil {
		return Request{}, err
	}
	if gr.estimate, err = rules.Converse(req, wr.SystemInstruction, systemInstruction, wr.Contents, func(a gemini.Array[gemini.Object[gemini.Content]]) ([]chat.Message, error) {
		return geminiContents(in, a)
	}); err != nil {
		return Request{}, err
	}
	return gr, nil
}

// geminiGenConfig reads generationConfig: sampling fields accepted and not
// forwarded, what cannot be honoured refused by name, thinkingConfig onto
// the thinking level, responseMimeType with its schema onto the verified
// structured output, stopSequences enforced on the text.
func geminiGenConfig(gc gemini.Object[gemini.GenConfig], gr *Request) error {
	const p = "generationConfig"
	if ok, err := rules.NullOrObject(p, gc.Kind); !ok {
		return err
	}
	c := &gc.V
	for _, f := range []struct {
		name string
		raw  gemini.Value
		kind rules.Kind
	}{{"temperature", c.Temperature, rules.KindNumber}, {"topP", c.TopP, rules.KindNumber}, {"topK", c.TopK, rules.KindNumber},
		{"maxOutputTokens", c.MaxOutputTokens, rules.KindNumber}, {"presencePenalty", c.PresencePenalty, rules.KindNumber},
		{"frequencyPenalty", c.FrequencyPenalty, rules.KindNumber}, {"seed", c.Seed, rules.KindNumber}, {"mediaResolution", c.MediaResolution, rules.KindString}} {
		if len(f.raw.Raw) > 0 {
			if err := rules.Ignored(f.kind)(p+"."+f.name, f.raw); err != nil {
				return err
			}
		}
	}
	if len(c.CandidateCount.Raw) > 0 {
		if err := rules.DefaultInteger(1, "must be a positive integer.", "only one candidate (candidateCount 1) is supported.")(p+".candidateCount", c.CandidateCount); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		raw  gemini.Value
	}{{"responseLogprobs", c.ResponseLogprobs}, {"logprobs", c.Logprobs}} {
		if len(f.raw.Raw) > 0 {
			if err := rules.RefusedWhenTrue("log probabilities are not available.")(p+"."+f.name, f.raw); err != nil {
				return err
			}
		}
	}
	if !gemini.Absent(c.SpeechConfig.Kind()) {
		return rules.Unsupported(p+".speechConfig", "speech output is not available.")
	}
	if !gemini.Absent(c.ImageConfig.Kind()) {
		return rules.Unsupported(p+".imageConfig", "image output is not available.")
	}
	if err := geminiModalities(c.ResponseModalities); err != nil {
		return err
	}
	var err error
	if gr.Chat.Thinking, err = geminiThinking(c.ThinkingConfig); err != nil {
		return err
	}
	if gr.Chat.Output, err = geminiOutput(c); err != nil {
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
		return rules.Invalid(p, "must be an array of strings.")
	}
	for i, m := range a.Items {
		if !m.IsString() {
			return rules.Invalid(p+"."+strconv.Itoa(i), "must be a string.")
		}
		if m.V != "TEXT" {
			return rules.Unsupported(p+"."+strconv.Itoa(i), "only TEXT output is available.")
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
	if ok, err := rules.NullOrObject(p, tc.Kind); !ok {
		return chat.ThinkingOff, err
	}
	if b := tc.V.IncludeThoughts; !gemini.Absent(b.Kind) && !b.IsBool() {
		return chat.ThinkingOff, rules.Invalid(p+".includeThoughts", "must be a boolean.")
	}
	if l := tc.V.ThinkingLevel; !gemini.Absent(l.Kind) {
		if !l.IsString() {
			return chat.ThinkingOff, rules.Invalid(p+".thinkingLevel", "must be a string.")
		}
		if l.V == "THINKING_LEVEL_UNSPECIFIED" {
			return chat.ThinkingOff, nil
		}
		return rules.EffortLevel(strings.ToLower(l.V), p+".thinkingLevel")
	}
	b := tc.V.ThinkingBudget
	if gemini.Absent(b.Kind) {
		return chat.ThinkingOff, nil
	}
	n, ok := b.Int()
	switch {
	case b.Kind != '0' || !ok || n < -1:
		return chat.ThinkingOff, rules.Invalid(p+".thinkingBudget", "must be an integer: -1 (dynamic), 0 (off) or a positive budget.")
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
		return chat.OutputFormat{}, rules.Invalid(p+".responseMimeType", "must be a string.")
	}
	hasSchema, hasJSONSchema := !gemini.Absent(c.ResponseSchema.Kind()), !gemini.Absent(c.ResponseJSONSchema.Kind())
	switch mt.V {
	case "application/json":
	case "", "text/plain":
		if hasSchema || hasJSONSchema {
			return chat.OutputFormat{}, rules.Invalid(p+".responseMimeType", "must be \"application/json\" when a response schema is given.")
		}
		return chat.OutputFormat{}, nil
	default:
		return chat.OutputFormat{}, rules.Unsupported(p+".responseMimeType", "only text/plain and application/json answers are available.")
	}
	spec := structured.Spec{Kind: chat.OutputJSONObject}
	switch {
	case hasSchema && hasJSONSchema:
		return chat.OutputFormat{}, rules.Invalid(p+".responseJsonSchema", "cannot be given with responseSchema; give one.")
	case hasJSONSchema:
		if c.ResponseJSONSchema.Kind() != '{' {
			return chat.OutputFormat{}, rules.Invalid(p+".responseJsonSchema", "must be a JSON schema object.")
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
	return rules.PrepareOutput(spec)
}

func geminiStops(a gemini.Array[gemini.String]) ([]string, error) {
	const p = "generationConfig.stopSequences"
	switch a.Kind {
	case 0, 'n':
		return nil, nil
	case '[':
	default:
		return nil, rules.Invalid(p, "must be an array of strings.")
	}
	if len(a.Items) > rules.MaxStopSequences {
		return nil, rules.Invalid(p, "at most "+strconv.Itoa(rules.MaxStopSequences)+" stop sequences are accepted.")
	}
	var out []string
	for i, it := range a.Items {
		ip := p + "." + strconv.Itoa(i)
		if !it.IsString() {
			return nil, rules.Invalid(ip, "must be a string.")
		}
		if it.V == "" {
			return nil, rules.Invalid(ip, "must not be empty.")
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
		return nil, rules.Invalid(param, "must be a schema object.")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, rules.Invalid(param, "must be a schema object.")
	}
	out, err := json.Marshal(convertOpenAPI(v))
	if err != nil {
		return nil, rules.Invalid(param, "must be a schema object.")
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

// geminiTools translates tools[].functionDeclarations into chat tools
// under the rules every API's tools have (rules.Settings.ToolSet); all declarations of all
// entries form one tool set, every entry's shape checked first
// (geminiToolDefs).
func geminiTools(in *rules.Settings, t gemini.Tools) ([]chat.Tool, error) {
	return in.ToolSet(apiGemini, t.Raw, func() ([]rules.ToolDef, error) { return geminiToolDefs(t.Entries()) })
}

// geminiToolDefs reads the declarations of the tool entries. A schema is
// parametersJsonSchema (JSON Schema, as sent) or parameters (the OpenAPI
// dialect, converted: openAPISchema).
func geminiToolDefs(items []gemini.Object[gemini.Tool]) ([]rules.ToolDef, error) {
	var defs []rules.ToolDef
	for i, item := range items {
		p := "tools." + strconv.Itoa(i)
		if !item.IsObject() {
			return nil, rules.Invalid(p, "must be an object.")
		}
		for _, name := range item.V.Unknown.Names() {
			if item.V.Unknown[name].Kind() == rules.KindNull {
				continue
			}
			if serverTools[name] {
				return nil, rules.Unsupported(p+"."+name, "this tool runs on Google's side and is not available through this gateway; declare a function instead.")
			}
			if !rules.ValidToolName(name) {
				return nil, rules.Invalid(p, "holds a member that is not a known tool; declare functions in functionDeclarations.")
			}
			return nil, rules.Invalid(p+"."+name, "is not a known tool; declare functions in functionDeclarations.")
		}
		fds := item.V.FunctionDeclarations
		switch fds.Kind {
		case 0, 'n':
			continue
		case '[':
		default:
			return nil, rules.Invalid(p+".functionDeclarations", "must be an array.")
		}
		for j := range fds.Items {
			dp := p + ".functionDeclarations." + strconv.Itoa(j)
			if !fds.Items[j].IsObject() {
				return nil, rules.Invalid(dp, "must be an object.")
			}
			defs = append(defs, geminiToolDef(dp, &fds.Items[j].V))
		}
	}
	return defs, nil
}

// geminiToolDef is one declaration (at path at).
func geminiToolDef(at string, fd *gemini.FunctionDeclaration) rules.ToolDef {
	d := rules.ToolDef{At: at, Name: fd.Name.V, NameOK: fd.Name.IsString()}
	switch desc := fd.Description; {
	case desc.IsString():
		d.Desc = desc.V
	case !gemini.Absent(desc.Kind):
		d.DescErr = rules.Invalid(at+".description", "must be a string.")
	}
	hasParams, hasJSON := !gemini.Absent(fd.Parameters.Kind()), !gemini.Absent(fd.ParametersJSONSchema.Kind())
	switch {
	case hasParams && hasJSON:
		d.SchemaErr = rules.Invalid(at+".parametersJsonSchema", "cannot be given with parameters; give one.")
	case hasJSON:
		d.SchemaAt = at + ".parametersJsonSchema"
		if fd.ParametersJSONSchema.Kind() != '{' {
			d.SchemaErr = rules.Invalid(d.SchemaAt, "must be a JSON schema object.")
		} else {
			d.Schema = append([]byte(nil), fd.ParametersJSONSchema...)
		}
	case hasParams:
		d.SchemaAt = at + ".parameters"
		d.Schema, d.SchemaErr = openAPISchema(fd.Parameters, d.SchemaAt)
	}
	return d
}

// geminiToolConfig reads toolConfig.functionCallingConfig: mode AUTO (the
// default) or NONE. ANY and VALIDATED would need the answer to be a call,
// which the upstream cannot be made to produce: refused, as the Messages
// API's "any" is. allowedFunctionNames belongs to those modes only.
func geminiToolConfig(tc gemini.Object[gemini.ToolConfig], req *chat.Request) error {
	const p = "toolConfig"
	if ok, err := rules.NullOrObject(p, tc.Kind); !ok {
		return err
	}
	if err := rules.Ignored(rules.KindObject)(p+".retrievalConfig", tc.V.RetrievalConfig); err != nil {
		return err
	}
	fc := tc.V.FunctionCallingConfig
	if ok, err := rules.NullOrObject(p+".functionCallingConfig", fc.Kind); !ok {
		return err
	}
	const fp = p + ".functionCallingConfig"
	mode := fc.V.Mode
	if !gemini.Absent(mode.Kind) && !mode.IsString() {
		return rules.Invalid(fp+".mode", "must be a string.")
	}
	switch mode.V {
	case "", "MODE_UNSPECIFIED", "AUTO":
		req.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	case "NONE":
		req.ToolChoice = chat.ToolChoice{Mode: chat.ToolChoiceNone}
	case "ANY", "VALIDATED":
		return rules.Unsupported(fp+".mode", "the upstream cannot be made to call a function; only AUTO and NONE are supported.")
	default:
		return rules.Invalid(fp+".mode", `must be "AUTO", "NONE", "ANY" or "VALIDATED".`)
	}
	if names := fc.V.AllowedFunctionNames; !gemini.Absent(names.Kind) {
		return rules.Invalid(fp+".allowedFunctionNames", "may be given only with mode ANY, which is not supported.")
	}
	return nil
}

// systemInstruction reads systemInstruction's parts: text only, joined with
// blank lines.
func systemInstruction(si gemini.Object[gemini.Content]) (string, error) {
	if gemini.Absent(si.Kind) {
		return "", nil
	}
	if !si.IsObject() {
		return "", rules.Invalid("systemInstruction", "must be a content object with text parts.")
	}
	a := si.V.Parts
	const p = "systemInstruction.parts"
	if !a.IsArray() {
		return "", rules.Invalid(p, "is required and must be an array of text parts.")
	}
	var texts []string
	for i, it := range a.Items {
		ip := p + "." + strconv.Itoa(i)
		if !it.IsObject() {
			return "", rules.Invalid(ip, "must be an object.")
		}
		if err := checkPartKinds(ip, &it.V); err != nil {
			return "", err
		}
		if !it.V.Text.IsString() {
			return "", rules.Invalid(ip+".text", "is required in a system instruction: only text parts are accepted there.")
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
		if d, ok := geminiUnsupportedParts[name]; ok && pt.Unknown[name].Kind() != rules.KindNull {
			return rules.Unsupported(ip+"."+name, d)
		}
	}
	if t := pt.Text; !gemini.Absent(t.Kind) && !t.IsString() {
		return rules.Invalid(ip+".text", "must be a string.")
	}
	if b := pt.Thought; !gemini.Absent(b.Kind) && !b.IsBool() {
		return rules.Invalid(ip+".thought", "must be a boolean.")
	}
	return nil
}

// geminiWords are the Gemini API's words for the pairing rule.
var geminiWords = rules.PairWords{
	List: "contents",
	Unanswered: func(at int, ids []string) error {
		return rules.Invalid("contents."+strconv.Itoa(at+1), "the function calls "+strings.Join(ids, ", ")+
			" of the model content before have no functionResponse here; every call must be answered in the next content.")
	},
	BadID: func(at string) error { return rules.Invalid(at+".id", "must match ^[a-zA-Z0-9_-]+$.") },
	RepeatedID: func(at, id string) error {
		return rules.Invalid(at+".id", "repeats the id of an earlier call: "+id+".")
	},
	Late: func(at string) error {
		return rules.Invalid(at, "functionResponse parts must come first in the content, before any text.")
	},
	Empty:  func(at string) error { return rules.Invalid(at+".parts", "must hold text.") },
	NoUser: func() error { return rules.Invalid("contents", "must hold a user content.") },
	Final: func(last int) error {
		return rules.Unsupported("contents."+strconv.Itoa(last), "a final model content cannot be continued by the upstream; end with a user content.")
	},
}

// geminiContents translates contents. A model content's functionCall parts
// must carry their id (the gateway issues one with every call); the next
// content, a user content, answers them under the pairing rule (pairing),
// in the Gemini API's words: a functionResponse part pairs by its id, or,
// when it has none, by its name when exactly one unanswered call has that
// name; anything else is refused, never guessed. Thought parts (another
// backend's) are dropped.
func geminiContents(in *rules.Settings, a gemini.Array[gemini.Object[gemini.Content]]) ([]chat.Message, error) {
	return rules.PairTurns(&geminiWords, a, func(pr *rules.Pairing, p string, c *gemini.Content) (*chat.Message, error) {
		return geminiTurn(in, pr, p, c)
	})
}

// geminiTurn reads one content, a user or model turn, into pr.
func geminiTurn(in *rules.Settings, pr *rules.Pairing, p string, c *gemini.Content) (*chat.Message, error) {
	role := c.Role
	if !gemini.Absent(role.Kind) && !role.IsString() {
		return nil, rules.Invalid(p+".role", "must be a string.")
	}
	parts := c.Parts
	if !parts.IsArray() || len(parts.Items) == 0 {
		return nil, rules.Invalid(p+".parts", "is required and must be a non-empty array of parts.")
	}
	for j := range parts.Items {
		if !parts.Items[j].IsObject() {
			return nil, rules.Invalid(p+".parts."+strconv.Itoa(j), "must be an object.")
		}
		if err := checkPartKinds(p+".parts."+strconv.Itoa(j), &parts.Items[j].V); err != nil {
			return nil, err
		}
	}
	switch role.V {
	case "model":
		if err := pr.Assistant(p); err != nil {
			return nil, err
		}
		return nil, turnParts(in, pr, p, parts.Items)
	case "", "user":
		pr.User(p)
		return nil, turnParts(in, pr, p, parts.Items)
	}
	return nil, rules.Invalid(p+".role", `must be "user" or "model".`)
}

// turnParts reads the parts of the content pr started: text parts are its
// text, thought parts are dropped; a model content's functionCall parts are
// its calls, a user content's functionResponse parts answer the pending
// calls. A part of the other role is refused where it stands.
func turnParts(in *rules.Settings, pr *rules.Pairing, p string, parts []gemini.Object[gemini.Part]) error {
	model := pr.Turn() == rules.TurnAssistant
	for j := range parts {
		pt := &parts[j].V
		ip := p + ".parts." + strconv.Itoa(j)
		hasCall, hasResponse := !gemini.Absent(pt.FunctionCall.Kind), !gemini.Absent(pt.FunctionResponse.Kind)
		var err error
		switch {
		case pt.Thought.V:
		case model && hasCall:
			err = functionCall(pr, ip+".functionCall", &pt.FunctionCall)
		case !model && hasResponse:
			err = functionResponse(in, pr, ip, &pt.FunctionResponse)
		case pt.Text.IsString():
			pr.AddText(pt.Text.V)
		case hasResponse:
			err = rules.Invalid(ip+".functionResponse", "belongs in a user content.")
		case hasCall:
			err = rules.Invalid(ip+".functionCall", "belongs in a model content.")
		case model:
			err = rules.Invalid(ip, "must hold text or a functionCall.")
		default:
			err = rules.Invalid(ip, "must hold text or a functionResponse.")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// functionCall reads a functionCall part (at fp) as a call of the model
// content, its args as sent.
func functionCall(pr *rules.Pairing, fp string, o *gemini.Object[gemini.FunctionCall]) error {
	if !o.IsObject() {
		return rules.Invalid(fp, "must be an object.")
	}
	fc := &o.V
	if !fc.ID.IsString() || fc.ID.V == "" {
		return rules.Invalid(fp+".id", "is required: this gateway gives every call an id and pairs its response by it; send the call as it was received.")
	}
	id := fc.ID.V
	if err := pr.CallID(fp, id); err != nil {
		return err
	}
	name, err := rules.RequiredString(fc.Name, fp+".name")
	if err != nil {
		return err
	}
	args := "{}"
	switch fc.Args.Kind() {
	case 0, 'n':
	case '{':
		args = string(fc.Args)
	default:
		return rules.Invalid(fp+".args", "must be an object.")
	}
	pr.Call(id, name, args)
	return nil
}

// functionResponse pairs a functionResponse part (at ip) with a pending
// call and records its result: by id when it has one (its name must agree), else by
// name when exactly one unanswered call has it. response {"output": text} is
// the text, {"error": text} the text marked as a tool error, any other
// object its JSON. A response that repeats, byte for byte, the one that
// already answered its call (by id) is the same result: gemini-cli 0.61
// replays every functionResponse twice in a resumed session's history; it
// is dropped. A different second answer is refused.
func functionResponse(in *rules.Settings, pr *rules.Pairing, ip string, o *gemini.Object[gemini.FunctionResponse]) error {
	if err := pr.AnswerAt(ip); err != nil {
		return err
	}
	fp := ip + ".functionResponse"
	if !o.IsObject() {
		return rules.Invalid(fp, "must be an object.")
	}
	fr := &o.V
	if !gemini.Absent(fr.Name.Kind) && !fr.Name.IsString() {
		return rules.Invalid(fp+".name", "must be a string.")
	}
	var call *rules.PendingCall
	if id := fr.ID; !gemini.Absent(id.Kind) && !(id.IsString() && id.V == "") {
		if !id.IsString() {
			return rules.Invalid(fp+".id", "must be a string.")
		}
		if call = pr.Find(id.V); call == nil {
			if !rules.ValidToolID(id.V) {
				return rules.Invalid(fp+".id", "matches no function call of the model content before.")
			}
			return rules.Invalid(fp+".id", "matches no function call of the model content before: "+id.V+".")
		}
		if fr.Name.IsString() && fr.Name.V != call.Name {
			return rules.Invalid(fp+".name", "is not the name of the call with this id.")
		}
	} else {
		if !fr.Name.IsString() || fr.Name.V == "" {
			return rules.Invalid(fp+".name", "is required when the response has no id.")
		}
		var ambiguous bool
		if call, ambiguous = pr.FindName(fr.Name.V); ambiguous {
			return rules.Invalid(fp+".id", "is required: more than one unanswered call has this name, and a response without an id cannot be paired with one of them.")
		}
		if call == nil {
			return rules.Invalid(fp+".name", "names no unanswered function call of the model content before.")
		}
	}
	if call.Answered {
		if fr.ID.IsString() && string(fr.Response) == string(call.Response) && absentRaw(fr.Parts) {
			return nil
		}
		return rules.Invalid(fp, "answers the call "+call.ID+" a second time, differently.")
	}
	call.Response = fr.Response
	if parts := fr.Parts; !gemini.Absent(parts.Kind()) && !(parts.Kind() == '[' && len(strings.TrimSpace(string(parts))) == 2) {
		return rules.Unsupported(fp+".parts", "multimodal function responses cannot be sent to the upstream.")
	}
	if fr.Response.Kind() != '{' {
		return rules.Invalid(fp+".response", "is required and must be an object.")
	}
	content := responseText(fr.Response)
	if len(content) > in.MaxToolResultBytes {
		return rules.Refuse(errs.RequestTooLarge, fp+".response", "The function response exceeds the per-result size limit.")
	}
	pr.Answer(call, content)
	return nil
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
				return rules.ToolErrorPrefix + s
			}
		}
	}
	return string(raw)
}
