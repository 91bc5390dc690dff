// Package gemini is the wire form of a Gemini API request
// (POST /v1beta/models/{model}:generateContent, :streamGenerateContent and
// :countTokens): its types and its one strict decode. It knows the JSON
// shape only; what the gateway honours, ignores or refuses, and the
// translation into the domain's chat.Request, are the ingress's
// (adapters/httpapi/gemapi, decode.go).
//
// It reads the body the way wire/messages does, with wire/wirejson's generic
// member types (every field records the JSON kind it was sent with; a
// repeated member name, text that is not UTF-8 or not JSON is a decode
// error): a member of the wrong kind is refused by the translation, in its
// fixed order, with its path. Members the types do not name are skipped,
// except where the API defines kinds the gateway must refuse by name (the
// parts of a content, the entries of tools): there the names that were sent
// are kept (Unknown), so that the refusal names them.
package gemini

import (
	"sort"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// The generic member types, shared with the other APIs' wire packages.
type (
	Kind   = wirejson.Kind
	String = wirejson.String
	Bool   = wirejson.Bool
	Number = wirejson.Number
	Raw    = wirejson.Raw
	Value  = wirejson.Value
)

// Object and Array are wirejson's generic containers.
type (
	Object[T any] = wirejson.Object[T]
	Array[T any]  = wirejson.Array[T]
)

// Absent says whether an optional member is missing or null.
func Absent(k Kind) bool { return wirejson.Absent(k) }

// Unknown holds the members a type does not name, by name.
type Unknown map[string]jsontext.Value

// Names are the unknown members' names, sorted (a refusal names the first:
// the same one whatever order they were sent in).
func (u Unknown) Names() []string {
	names := make([]string, 0, len(u))
	for n := range u {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ReadMember reads the member called name into u, as json reads a member into a
// struct's `json:",unknown"` map of jsontext.Values: a copy of the value as
// sent (a repeat, where one is allowed, replaces the one read before).
func (u *Unknown) ReadMember(d *jsontext.Decoder, name []byte) error {
	v, err := d.ReadValue()
	if *u == nil {
		*u = make(Unknown)
	}
	(*u)[string(name)] = append((*u)[string(name)][:0], v...)
	return err
}

// Request is a generateContent request (streamGenerateContent and
// countTokens take the same body; countTokens may also wrap it in
// generateContentRequest).
type Request struct {
	Contents          Array[Object[Content]] `json:"contents"`
	SystemInstruction Object[Content]        `json:"systemInstruction"`
	Tools             Tools                  `json:"tools"`
	ToolConfig        Object[ToolConfig]     `json:"toolConfig"`
	GenerationConfig  Object[GenConfig]      `json:"generationConfig"`

	// Read for the ingress's field decisions (values of any kind for its
	// shared field policy, cachedContent for its kind).
	SafetySettings Value `json:"safetySettings"`
	CachedContent  Raw   `json:"cachedContent"`
	Labels         Value `json:"labels"`
	Model          Raw   `json:"model"`

	// GenerateContentRequest is countTokens' wrapped form.
	GenerateContentRequest Raw `json:"generateContentRequest"`
}

// Every struct type here reads itself (wirejson.Struct): by its tags, as
// json would, through a table made once per type; wirejson's tests check
// that the two read every body alike.

func (r *Request) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, r) }

// Content is one entry of contents, or systemInstruction.
type Content struct {
	Role  String              `json:"role"`
	Parts Array[Object[Part]] `json:"parts"`
}

func (c *Content) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, c) }

// Part is one part of a content. Which members the gateway reads: text,
// thought, thoughtSignature, functionCall, functionResponse; every other
// member (inlineData, fileData, executableCode, …) is kept in Unknown.
type Part struct {
	Text             String                   `json:"text"`
	Thought          Bool                     `json:"thought"`
	ThoughtSignature Raw                      `json:"thoughtSignature"`
	FunctionCall     Object[FunctionCall]     `json:"functionCall"`
	FunctionResponse Object[FunctionResponse] `json:"functionResponse"`
	Unknown          Unknown                  `json:",unknown"`
}

func (p *Part) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, p) }

// FunctionCall is a model turn's call of a declared function.
type FunctionCall struct {
	ID   String `json:"id"`
	Name String `json:"name"`
	Args Raw    `json:"args"`
}

func (f *FunctionCall) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// FunctionResponse is a user turn's result of a function call.
type FunctionResponse struct {
	ID       String `json:"id"`
	Name     String `json:"name"`
	Response Raw    `json:"response"`
	Parts    Raw    `json:"parts"`
}

func (f *FunctionResponse) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// Tool is one entry of tools: function declarations, or a server-side tool
// (googleSearch, codeExecution, …) kept by name in Unknown.
type Tool struct {
	FunctionDeclarations Array[Object[FunctionDeclaration]] `json:"functionDeclarations"`
	Unknown              Unknown                            `json:",unknown"`
}

func (t *Tool) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }

// FunctionDeclaration declares one function: its schema in the API's OpenAPI
// dialect (parameters) or as JSON Schema (parametersJsonSchema).
type FunctionDeclaration struct {
	Name                 String `json:"name"`
	Description          String `json:"description"`
	Parameters           Raw    `json:"parameters"`
	ParametersJSONSchema Raw    `json:"parametersJsonSchema"`
	Behavior             Raw    `json:"behavior"`
	Response             Raw    `json:"response"`
	ResponseJSONSchema   Raw    `json:"responseJsonSchema"`
}

func (f *FunctionDeclaration) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return wirejson.Struct(d, f)
}

// Tools is the tools member as the bytes it was sent as (nil when absent):
// they key the ingress's memory of translated tool sets.
type Tools = wirejson.List[Object[Tool]]

// ToolConfig is toolConfig.
type ToolConfig struct {
	FunctionCallingConfig Object[FunctionCallingConfig] `json:"functionCallingConfig"`
	RetrievalConfig       Value                         `json:"retrievalConfig"`
}

func (c *ToolConfig) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, c) }

// FunctionCallingConfig is toolConfig.functionCallingConfig.
type FunctionCallingConfig struct {
	Mode                 String        `json:"mode"`
	AllowedFunctionNames Array[String] `json:"allowedFunctionNames"`
}

func (c *FunctionCallingConfig) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return wirejson.Struct(d, c)
}

// GenConfig is generationConfig.
type GenConfig struct {
	ResponseMimeType   String                 `json:"responseMimeType"`
	ResponseSchema     Raw                    `json:"responseSchema"`
	ResponseJSONSchema Raw                    `json:"responseJsonSchema"`
	ThinkingConfig     Object[ThinkingConfig] `json:"thinkingConfig"`
	StopSequences      Array[String]          `json:"stopSequences"`
	CandidateCount     Value                  `json:"candidateCount"`
	ResponseModalities Array[String]          `json:"responseModalities"`
	ResponseLogprobs   Value                  `json:"responseLogprobs"`
	Logprobs           Value                  `json:"logprobs"`
	SpeechConfig       Raw                    `json:"speechConfig"`
	ImageConfig        Raw                    `json:"imageConfig"`

	// Sampling: accepted, not forwarded (the service has no such setting).
	Temperature      Value `json:"temperature"`
	TopP             Value `json:"topP"`
	TopK             Value `json:"topK"`
	MaxOutputTokens  Value `json:"maxOutputTokens"`
	PresencePenalty  Value `json:"presencePenalty"`
	FrequencyPenalty Value `json:"frequencyPenalty"`
	Seed             Value `json:"seed"`
	MediaResolution  Value `json:"mediaResolution"`
}

func (g *GenConfig) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, g) }

// ThinkingConfig is generationConfig.thinkingConfig.
type ThinkingConfig struct {
	ThinkingBudget  Number `json:"thinkingBudget"`
	ThinkingLevel   String `json:"thinkingLevel"`
	IncludeThoughts Bool   `json:"includeThoughts"`
}

func (c *ThinkingConfig) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, c) }

// Decode reads body, which must be one JSON object, into a Request, as
// wirejson.Decode does (its errors; wirejson.DuplicateName finds a repeated
// member name).
func Decode(body []byte) (Request, error) { return wirejson.DecodeAs[Request](body) }
