// Package responses is the wire form of an OpenAI Responses API request
// (POST /v1/responses): its types and its one strict decode. It knows the
// JSON shape only; what the gateway honours, ignores or refuses, and the
// translation into the domain's chat.Request, are the ingress's
// (adapters/httpapi).
//
// It reads the body with wire/wirejson, as wire/chat and wire/messages do,
// and with its kind-recording member types: one read by
// github.com/go-json-experiment/json, member names matched exactly,
// a member name repeated in one object an error with the JSON pointer of the
// repeat, text that is not valid UTF-8 an error, members the type does not
// name skipped. A member of the wrong kind is not a decode error: it records
// its kind, and the translation refuses it in its fixed order.
package responses

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// The kind-recording member types of wire/wirejson.
type (
	Kind   = wirejson.Kind
	String = wirejson.String
	Bool   = wirejson.Bool
	Raw    = wirejson.Raw
)

// Object is a member that should be an object of type T.
type Object[T any] = wirejson.Object[T]

// Array is a member that should be an array of T.
type Array[T any] = wirejson.Array[T]

// Absent says whether an optional member is missing or null.
func Absent(k Kind) bool { return wirejson.Absent(k) }

// Request is a Responses request.
type Request struct {
	Model             String     `json:"model"`
	Stream            Bool       `json:"stream"`
	ParallelToolCalls Bool       `json:"parallel_tool_calls"`
	Instructions      String     `json:"instructions"`
	Input             Input      `json:"input"`
	Tools             Tools      `json:"tools"`
	ToolChoice        ToolChoice `json:"tool_choice"`

	// reasoning and text are accepted and ignored, but what they ask for is
	// read (reasoning.effort, text.format), and they are echoed as sent.
	Reasoning wirejson.Echoed[Reasoning] `json:"reasoning"`
	Text      wirejson.Echoed[Text]      `json:"text"`

	// Fields holds every other member as sent, by name: the fields the
	// ingress's shared field policy accepts and ignores (some echoed in the
	// response object: metadata, temperature, top_p, max_output_tokens,
	// user) or refuses unless default (previous_response_id, background, …),
	// and members no one reads.
	Fields wirejson.Fields `json:",unknown"`
}

// Every struct type here reads itself (wirejson.Struct): by its tags, as
// json would, through a table made once per type; wirejson's tests check
// that the two read every body alike.

func (r *Request) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, r) }

// Reasoning is reasoning.
type Reasoning struct {
	Effort String `json:"effort"`
}

func (r *Reasoning) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, r) }

// Text is text: the verbosity of the answer, and its format.
type Text struct {
	Verbosity String             `json:"verbosity"`
	Format    Object[TextFormat] `json:"format"`
}

func (t *Text) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }

// TextFormat is text.format: {"type":"text"}, {"type":"json_object"}, or a
// json_schema format with its members beside the type (name, description,
// schema, strict).
type TextFormat struct {
	Type        String `json:"type"`
	Name        String `json:"name"`
	Description String `json:"description"`
	Schema      Raw    `json:"schema"`
	Strict      Bool   `json:"strict"`
}

func (f *TextFormat) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// Input is input: a string (one user message) or an array of items.
type Input = wirejson.TextOr[Object[Item]]

// Item is one input item. Which members a type uses: message (role,
// content), function_call (call_id, name, namespace, arguments),
// custom_tool_call (call_id, name, namespace, input), function_call_output
// and custom_tool_call_output (call_id, output); reasoning and the rest read
// none.
type Item struct {
	Type      String `json:"type"`
	Role      String `json:"role"`
	Content   Parts  `json:"content"`
	CallID    String `json:"call_id"`
	Name      String `json:"name"`
	Namespace String `json:"namespace"`
	Arguments String `json:"arguments"`
	// Input is kept as sent: the call's arguments are {"input": <it>}.
	Input  Raw   `json:"input"`
	Output Parts `json:"output"`
}

func (it *Item) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, it) }

// Parts is a string or an array of content parts (a message's content, a
// tool output).
type Parts = wirejson.TextOr[Object[Part]]

// Part is one content part (input_text, output_text, …).
type Part = wirejson.TextPart

// Tools is the tools member as the bytes it was sent as: they key the
// ingress's memory of translated tool sets, and are read into entries only
// when they are not remembered.
type Tools = wirejson.List[ToolEntry]

// ToolEntry is one entry of tools (or of a namespace's tools): the bytes it
// was sent as (echoed in the response object) and, when it is an object, the
// tool they define. (A defined type, not an alias: Tool holds ToolEntry.)
type ToolEntry struct{ wirejson.Echoed[Tool] }

// Tool is one tool. Which members a type uses: function (name, description,
// parameters, strict), custom (name, description, format), namespace (name,
// tools); hosted tools read none.
type Tool struct {
	Type        String               `json:"type"`
	Name        String               `json:"name"`
	Description String               `json:"description"`
	Parameters  Raw                  `json:"parameters"`
	Strict      Bool                 `json:"strict"`
	Format      Object[CustomFormat] `json:"format"`
	Tools       Array[ToolEntry]     `json:"tools"`
}

func (t *Tool) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }

// CustomFormat is a custom tool's format.
type CustomFormat struct {
	Type       String `json:"type"`
	Syntax     String `json:"syntax"`
	Definition String `json:"definition"`
}

func (f *CustomFormat) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// ToolChoice is tool_choice: a mode string or an object, kept as sent (the
// response object echoes it).
type ToolChoice = wirejson.Echoed[ToolChoiceObject]

// ToolChoiceObject is an object tool_choice ({"type":"function","name":…}).
type ToolChoiceObject struct {
	Type      String `json:"type"`
	Name      String `json:"name"`
	Namespace String `json:"namespace"`
}

func (o *ToolChoiceObject) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, o) }

// Decode reads body, which must be one JSON object, into a Request. Its
// errors are wirejson.Decode's (wirejson.DuplicateName finds a repeated
// member name).
func Decode(body []byte) (Request, error) { return wirejson.DecodeAs[Request](body) }
